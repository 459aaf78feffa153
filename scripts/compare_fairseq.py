#!/usr/bin/env python
"""normlab-train vs fairseq-train (with normlab's plugin) on the same data and recipe.

    make compare-fairseq                       # mini recipe, 200 updates, seeds 1,2
    python scripts/compare_fairseq.py --recipe tiny --seeds 1 --fairseq-python .venv-fairseq/bin/python

Same data: normlab's own corpus for the task and scale (its BPE, its filtered train pairs, its
valid split) is written out as piece text with normlab's vocabulary as the fairseq dictionary
(same entries, same order after the 4 specials, no padding to a multiple of 8), then
``fairseq-preprocess --srcdict`` binarizes it, so both trainers see identical token sequences.
Same recipe: model sizes, pre-norm, shared embeddings, dropouts, Adam betas/eps, weight decay 0,
inverse-sqrt warm-up, label smoothing, --max-tokens and N updates come from the one composed
normlab config. Validation loss after N updates is compared in nats (fairseq prints log2).

Batches are formed alike (the whole train set sorted by length and cut at --max-tokens, as
fairseq's batch_by_size does; the random tie order differs). What stays different (measured here,
see docs/fairseq.md): parameter init (fairseq: xavier-uniform linears, zero biases; normlab: PyTorch's defaults), the lr schedule's
offset (fairseq's update k runs at the schedule's value for k-1, its first at --warmup-init-lr),
position offsets (fairseq's positions start at padding_idx + 1) and every RNG stream.
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

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "normlab" / "integrations" / "fairseq" / "normlab_norms"
TASK = "iwslt14_de_en"
# recipe -> (normlab overrides, updates). max_positions 1024 (fairseq's default): dev2010 has a
# 268-piece sentence, which normlab cuts at the presets' 256 and fairseq refuses. weight_decay 0:
# normlab's Adam adds L2 to matrices only, fairseq's decays every parameter decoupled (AdamW-style);
# with 0 the two optimizers agree.
RECIPES = {
    # the mini preset (2+2 layers, d 64, 1,000 BPE merges, 1,024 tokens/update, lr 3e-3, warm-up 100)
    "mini": (["scale=mini", "task.train.weight_decay=0.0", "task.model.max_positions=1024"], 200),
    # the smoke preset's BPE (300 merges) on the first 2,000 train pairs (smoke's 256 leave normlab's
    # shuffling chunks 12 pairs long: half fairseq's tokens per update), a 1+1-layer d-32 model, and
    # a warm-up: fairseq's inverse_sqrt with --warmup-updates 0 keeps lr 0 (decay factor lr * sqrt(0))
    "tiny": (
        [
            "scale=smoke",
            "task.data.limit.train=2000",
            "task.data.limit.valid=200",
            "task.model.d_model=32",
            "task.model.ffn_dim=64",
            "task.model.max_positions=1024",
            "task.train.weight_decay=0.0",
            "task.train.warmup_steps=20",
            "task.train.lr=5e-3",
        ],
        100,
    ),
}


def job_env(data_dir: Path, cache: Path) -> dict:
    """The environment both trainers run in: the data, a cache of their own, one thread."""
    return {
        **os.environ,
        "NORMLAB_DATA": str(data_dir),
        "NORMLAB_CACHE": str(cache),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
    }


def compose(overrides: list[str], data_dir: Path, cache_dir: Path):
    from normlab.config_keys import compose as compose_config

    return compose_config(
        [
            f"task={TASK}",
            f"paths.data_dir={data_dir}",
            f"paths.cache_dir={cache_dir}",
            "progress=false",
            *overrides,
        ]
    )


def export(cfg, out: Path) -> dict:
    """Write normlab's train (after its length filter) and valid splits as piece text plus its
    vocabulary as a fairseq dictionary; return the sizes."""
    from normlab.tasks import get_task_class

    task = get_task_class(TASK)(
        cfg.task, Path(cfg.paths.data_dir) / TASK, Path(cfg.paths.cache_dir)
    )
    task.setup()
    c, out = task.corpus, Path(out)
    out.mkdir(parents=True, exist_ok=True)
    itos = c.tgt_vocab.itos
    if itos[:4] != ["<pad>", "<unk>", "<s>", "</s>"] or c.src_vocab.itos != itos:
        raise SystemExit(f"expected one joint vocabulary with 4 specials first, got {itos[:4]}")
    counts = [0] * len(itos)
    index = {"train": task.train_index.tolist(), "valid": list(range(len(c.splits["valid"][0])))}
    for split, rows in index.items():
        for side, lang in enumerate((cfg.task.data.src, cfg.task.data.tgt)):
            seqs = c.splits[split][side]
            lines = []
            for i in rows:
                ids = seqs[i].tolist()[:-1]  # normlab appends </s>; fairseq-preprocess does too
                if split == "train":
                    for t in ids:
                        counts[t] += 1
                lines.append(" ".join(itos[t] for t in ids))
            (out / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # fairseq's Dictionary puts <s> <pad> </s> <unk> first and reads the rest in file order
    (out / "dict.txt").write_text(
        "".join(f"{w} {max(n, 1)}\n" for w, n in zip(itos[4:], counts[4:])), encoding="utf-8"
    )
    return {
        "vocab": len(itos),
        "train_pairs": len(index["train"]),
        "valid_pairs": len(index["valid"]),
    }


def batch_stats(cfg, updates: int, seeds: list[int]) -> dict:
    """normlab's first N updates (update_freq 1): mean target tokens and sentences per update, for
    the config normlab's runs use (an ablation may change max_tokens); the corpus comes from cache."""
    from normlab.tasks import get_task_class

    task = get_task_class(TASK)(
        cfg.task, Path(cfg.paths.data_dir) / TASK, Path(cfg.paths.cache_dir)
    )
    task.setup()
    tgt, per_seed = task.corpus.splits["train"][1], []
    for seed in seeds:
        toks, sents, epoch = [], [], 0
        while len(toks) < updates:
            for b in task.train_batches(epoch, seed).index_batches:
                toks.append(int(tgt.lengths()[b].sum()))
                sents.append(len(b))
            epoch += 1
        per_seed.append((statistics.mean(toks[:updates]), statistics.mean(sents[:updates])))
    return {
        "batches_per_epoch": len(task.train_batches(0, seeds[0])),
        "wpb": statistics.mean(p[0] for p in per_seed),
        "bsz": statistics.mean(p[1] for p in per_seed),
    }


def preprocess(python: str, text: Path, dest: Path, src: str, tgt: str, env: dict) -> int:
    cmd = [
        python,
        "-m",
        "fairseq_cli.preprocess",
        "--source-lang",
        src,
        "--target-lang",
        tgt,
        "--trainpref",
        str(text / "train"),
        "--validpref",
        str(text / "valid"),
        "--destdir",
        str(dest),
        "--srcdict",
        str(text / "dict.txt"),
        "--joined-dictionary",
        "--workers",
        "1",
    ]
    shutil.rmtree(dest, ignore_errors=True)  # fairseq-preprocess refuses to overwrite a dictionary
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"fairseq-preprocess failed:\n{(out.stdout + out.stderr)[-3000:]}")
    # the dictionary fairseq built from dict.txt: 4 specials + normlab's entries, nothing padded
    return len((dest / f"dict.{src}.txt").read_text(encoding="utf-8").splitlines()) + 4


def _yaml_scalar(v) -> str:
    return f"{v:.6e}" if isinstance(v, float) else str(v).lower() if isinstance(v, bool) else str(v)


def fairseq_flags(cfg, updates: int) -> list[str]:
    """fairseq-train's flags for the composed normlab config (update_freq 1, fp32, CPU)."""
    m, t, d = cfg.task.model, cfg.task.train, cfg.task.data
    if t.optimizer != "adam" or t.schedule != "inverse_sqrt" or int(t.get("update_freq", 1)) != 1:
        raise SystemExit(
            "the comparison covers adam + inverse_sqrt + update_freq 1 (the IWSLT14 presets)"
        )
    placement = m.get("placement") or ("pre" if m.normalize_before else "post")
    plain = (
        not (m.get("layernorm_scaling") or m.get("embed_norm")) and m.get("final_norm") is not False
    )
    if placement != "pre" or not plain:
        raise SystemExit(
            "the comparison covers fairseq's pre-norm (task.model.placement=pre, its final norms, "
            "no embedding norm or layernorm scaling)"
        )
    if not m.share_all_embeddings or t.warmup_steps <= 0 or t.clip_norm:
        raise SystemExit(
            "the comparison covers pre-norm, shared embeddings, warm-up > 0 and no clipping"
        )
    layers, dec = int(m.layers), int(m.decoder_layers or m.layers)
    options = ",".join(f"{k}={_yaml_scalar(v)}" for k, v in (cfg.norm.get("options") or {}).items())
    return [
        "--task",
        "normlab_translation",
        "--user-dir",
        str(USER_DIR),
        "--norm",
        cfg.norm.name,
        "--norm-options",
        options,
        "--arch",
        "transformer_iwslt_de_en",
        "--encoder-layers",
        str(layers),
        "--decoder-layers",
        str(dec),
        "--encoder-embed-dim",
        str(m.d_model),
        "--decoder-embed-dim",
        str(m.d_model),
        "--encoder-ffn-embed-dim",
        str(m.ffn_dim),
        "--decoder-ffn-embed-dim",
        str(m.ffn_dim),
        "--encoder-attention-heads",
        str(m.heads),
        "--decoder-attention-heads",
        str(m.heads),
        "--encoder-normalize-before",
        "--decoder-normalize-before",
        "--share-all-embeddings",
        "--activation-fn",
        m.activation,
        "--dropout",
        str(m.dropout),
        "--attention-dropout",
        str(m.attn_dropout),
        "--activation-dropout",
        str(m.act_dropout),
        "--max-source-positions",
        str(m.max_positions),
        "--max-target-positions",
        str(m.max_positions),
        "--optimizer",
        "adam",
        "--adam-betas",
        f"({t.betas[0]}, {t.betas[1]})",
        "--adam-eps",
        str(t.adam_eps),
        "--weight-decay",
        str(t.weight_decay),
        "--lr",
        str(t.lr),
        "--lr-scheduler",
        "inverse_sqrt",
        "--warmup-updates",
        str(t.warmup_steps),
        "--warmup-init-lr",
        str(t.warmup_init_ratio * t.lr),
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        str(cfg.task.criterion.label_smoothing),
        # normlab's batches are any size that fits the budget; fairseq's default rounds to 8
        "--max-tokens",
        str(d.max_tokens),
        "--required-batch-size-multiple",
        "1",
        "--max-tokens-valid",
        str(d.eval_max_tokens),
        "--max-update",
        str(updates),
        "--cpu",
        "--num-workers",
        "0",
        "--no-save",
        "--log-format",
        "json",
        "--log-interval",
        "1",
    ]


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
) -> dict:
    """``ablate``: extra overrides for normlab's runs only (e.g. task.data.max_tokens=1100 to
    match fairseq's tokens per update), to measure how much of the difference one factor makes."""
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
    flags = fairseq_flags(cfg, updates)
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
        + (f"; normlab also with {' '.join(res['ablate'])}" if res["ablate"] else ""),
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
    )
    res["summary"] = summarize(res)
    print(report(res))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
