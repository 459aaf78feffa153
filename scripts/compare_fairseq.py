#!/usr/bin/env python
"""normlab-train vs fairseq-train (with normlab's plugin) on the same data and recipe.

    make compare-fairseq                       # mini recipe, 200 updates, seeds 1,2
    python scripts/compare_fairseq.py --recipe tiny --seeds 1 --fairseq-python .venv-fairseq/bin/python

The data and the recipe come from one composed normlab config (scripts/fairseq_recipe.py: the same
token ids both ways, fairseq's flags from normlab's settings). Validation loss after N updates is
compared in nats (fairseq prints log2).

Batches are formed alike (the whole train set sorted by length and cut at --max-tokens, as
fairseq's batch_by_size does; the random tie order differs). What stays different (measured here,
see docs/fairseq.md): the attention init (fairseq's xavier-uniform with a zero out_proj bias,
normlab's PyTorch default, which --fairseq-attention-init torch gives fairseq too), the lr
schedule's offset (fairseq's update k runs at the schedule's value for k-1, its first at
--warmup-init-lr), position offsets (fairseq's positions start at padding_idx + 1) and every RNG
stream.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairseq_recipe import (  # noqa: E402
    RECIPES,
    REPO,
    TASK,
    batch_stats,
    compose,
    export,
    fairseq_flags,
    job_env,
    preprocess,
)


def run_fairseq(
    python: str, data_bin: Path, flags: list[str], seed: int, env: dict, log: Path
) -> dict:
    out = subprocess.run(
        [python, "-m", "fairseq_cli.train", str(data_bin), *flags, "--seed", str(seed)],
        capture_output=True,
        text=True,
        env=env,
        cwd=log.parent,
    )
    log.write_text(out.stdout + out.stderr)
    if out.returncode:
        raise SystemExit(
            f"fairseq-train failed (seed {seed}); see {log}:\n{(out.stdout + out.stderr)[-3000:]}"
        )
    recs = [json.loads(m) for m in re.findall(r"(\{\"epoch\".*\})", out.stdout + out.stderr)]
    updates = int(flags[flags.index("--max-update") + 1])
    valid = [r for r in recs if "valid_loss" in r and int(r["valid_num_updates"]) == updates]
    train = [r for r in recs if "num_updates" in r and "wpb" in r]
    if not valid:
        raise SystemExit(f"no validation after {updates} updates in {log}")
    return {
        "loss": float(valid[-1]["valid_loss"]) * math.log(2),  # fairseq logs base 2
        "nll": float(valid[-1]["valid_nll_loss"]) * math.log(2),
        "wpb": statistics.mean(float(r["wpb"]) for r in train),
        "bsz": statistics.mean(float(r["bsz"]) for r in train),
        "lr": [float(r["lr"]) for r in train],
    }


def run_normlab(
    python: str, overrides: list[str], seed: int, updates: int, run_dir: Path, env: dict
) -> dict:
    cmd = [
        python,
        "-m",
        "normlab.train",
        f"task={TASK}",
        f"seed={seed}",
        "threads=1",
        "progress=false",
        f"task.train.max_steps={updates}",
        f"task.train.eval_every={updates}",
        f"task.train.log_every={updates}",
        "task.data.limit.test=8",  # the test decode after training is not compared; keep it short
        f"paths.root={run_dir.parent}",
        f"hydra.run.dir={run_dir}",
        *overrides,
    ]
    shutil.rmtree(run_dir, ignore_errors=True)  # a finished run directory would be returned as is
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(
            f"normlab-train failed (seed {seed}):\n{(out.stdout + out.stderr)[-3000:]}"
        )
    recs = [json.loads(x) for x in (run_dir / "curves.jsonl").read_text().splitlines() if x.strip()]
    valid = [r for r in recs if r.get("split") == "valid" and r["step"] == updates]
    return {"loss": valid[-1]["loss"], "nll": valid[-1]["nll"]}


def compare(
    recipe: str,
    seeds: list[int],
    work: Path,
    normlab_python: str,
    fairseq_python: str,
    data_dir: Path,
    norm: str = "layernorm",
    updates: int = 0,
    ablate: tuple = (),
    attention_init: str = "fairseq",
) -> dict:
    """``ablate``: extra overrides for normlab's runs only (e.g. task.data.max_tokens=1100 to
    match fairseq's tokens per update), to measure how much of the difference one factor makes;
    ``attention_init``: fairseq's own, or "torch" (the plugin gives fairseq normlab's init)."""
    overrides, default_updates = RECIPES[recipe]
    overrides, updates = [*overrides, f"norm={norm}"], updates or default_updates
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "cache"
    env = job_env(data_dir, cache)
    cfg = compose(overrides, data_dir, cache)
    data = export(cfg, work / "text")
    data.update(
        batch_stats(
            compose([*overrides, *ablate], data_dir, cache) if ablate else cfg, updates, seeds
        )
    )
    data["fairseq_vocab"] = preprocess(
        fairseq_python, work / "text", work / "data-bin", cfg.task.data.src, cfg.task.data.tgt, env
    )
    if data["fairseq_vocab"] != data["vocab"]:
        raise SystemExit(
            f"fairseq's dictionary has {data['fairseq_vocab']} entries, normlab's {data['vocab']}"
        )
    flags = fairseq_flags(cfg, updates, attention_init)
    rows = []
    for seed in seeds:
        nl = run_normlab(
            normlab_python,
            [*overrides, *ablate],
            seed,
            updates,
            work / "runs" / f"normlab_seed{seed}",
            env,
        )
        fs = run_fairseq(
            fairseq_python, work / "data-bin", flags, seed, env, work / f"fairseq_seed{seed}.log"
        )
        rows.append({"seed": seed, "normlab": nl, "fairseq": fs})
        print(f"  seed {seed}: normlab {nl['loss']:.4f}  fairseq {fs['loss']:.4f} nats", flush=True)
    return {
        "recipe": recipe,
        "norm": norm,
        "ablate": list(ablate),
        "attention_init": attention_init,
        "data_dir": str(data_dir),
        "updates": updates,
        "data": data,
        "rows": rows,
        "fairseq_lr_first": rows[0]["fairseq"]["lr"][:3],
        "fairseq_flags": flags,
    }


def summarize(res: dict) -> dict:
    nl = [r["normlab"]["loss"] for r in res["rows"]]
    fs = [r["fairseq"]["loss"] for r in res["rows"]]
    mn, mf = statistics.mean(nl), statistics.mean(fs)
    return {
        "normlab": mn,
        "fairseq": mf,
        "diff": mn - mf,
        "rel": (mn - mf) / mf,
        "spread_normlab": max(nl) - min(nl),
        "spread_fairseq": max(fs) - min(fs),
    }


def report(res: dict) -> str:
    s, d = summarize(res), res["data"]
    fw = statistics.mean(r["fairseq"]["wpb"] for r in res["rows"])
    fb = statistics.mean(r["fairseq"]["bsz"] for r in res["rows"])
    lines = [
        f"{TASK} recipe={res['recipe']} norm={res['norm']}: valid label-smoothed loss (nats) after "
        f"{res['updates']} updates, seeds {[r['seed'] for r in res['rows']]}"
        + (f"; normlab also with {' '.join(res['ablate'])}" if res["ablate"] else "")
        + f"; fairseq's attention init: {res.get('attention_init', 'fairseq')}",
        f"data: vocab {d['vocab']}, train pairs {d['train_pairs']}, valid pairs {d['valid_pairs']} "
        "(same ids both ways)",
        "",
        "| seed | normlab | fairseq | difference | relative |",
        "|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        a, b = r["normlab"]["loss"], r["fairseq"]["loss"]
        lines.append(f"| {r['seed']} | {a:.4f} | {b:.4f} | {a - b:+.4f} | {(a - b) / b:+.2%} |")
    lines += [
        f"| mean | {s['normlab']:.4f} | {s['fairseq']:.4f} | {s['diff']:+.4f} | {s['rel']:+.2%} |",
        "",
        f"seed spread (max - min): normlab {s['spread_normlab']:.4f}, fairseq {s['spread_fairseq']:.4f}",
        f"target tokens / sentences per update: normlab {d['wpb']:.0f} / {d['bsz']:.1f}, "
        f"fairseq {fw:.0f} / {fb:.1f}",
        f"fairseq lr logged after updates 1-3: {res['fairseq_lr_first']} (update k runs at the value "
        "logged after k-1, update 1 at --warmup-init-lr; normlab's update k at min(k/W, sqrt(W/k)) * lr)",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recipe", choices=sorted(RECIPES), default="mini")
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--updates", type=int, default=0, help="0 = the recipe's")
    p.add_argument("--norm", default="layernorm")
    p.add_argument("--work", type=Path, default=REPO / "runs" / "compare_fairseq")
    p.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("NORMLAB_DATA") or REPO / "data")
    )
    p.add_argument("--normlab-python", default=sys.executable)
    p.add_argument("--fairseq-python", default=str(REPO / ".venv-fairseq" / "bin" / "python"))
    p.add_argument(
        "--normlab-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an extra override for normlab's runs only (an ablation; repeatable)",
    )
    p.add_argument(
        "--fairseq-attention-init",
        choices=["fairseq", "torch"],
        default="fairseq",
        help="torch: fairseq's attention projections get PyTorch's Linear init, as normlab's",
    )
    p.add_argument("--json", type=Path, help="also write the result here")
    a = p.parse_args(argv)
    # absolute, not resolved: fairseq runs in its work folder, and a venv's python is a symlink
    # whose target would lose the venv
    a.normlab_python, a.fairseq_python = (
        os.path.abspath(x) if os.sep in x else x for x in (a.normlab_python, a.fairseq_python)
    )
    res = compare(
        a.recipe,
        [int(s) for s in a.seeds.split(",")],
        a.work.resolve(),
        a.normlab_python,
        a.fairseq_python,
        a.data_dir.resolve(),
        a.norm,
        a.updates,
        tuple(a.normlab_override),
        a.fairseq_attention_init,
    )
    res["summary"] = summarize(res)
    print(report(res))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
