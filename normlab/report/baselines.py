"""Trivial baselines computed from the data, so that "at the unigram level" is a number, not a guess.

Per task, with the task's own data pipeline (the task config of the runs' config.yaml, so the
same subset, split and evaluation cap as the runs):
- enwik8: unigram and bigram bits per byte of each split, estimated on the train split with
  add-one (Laplace) smoothing over the 256 byte values; the bigram conditions each byte on the
  byte before it in the file, as the LM's stream does. Add-one over-smooths a bigram fitted on
  40,000 bytes, so beside it a bigram with add-alpha smoothing, alpha chosen on the valid split:
  the strongest bigram level, the one "at the bigram level" must be read against.
- rt, sst2, imdb, mnist: accuracy of always predicting the train split's majority class.
- ptb: UAS of attaching every word to its right neighbour (the last word to the root), scored
  like the parser (punctuation excluded).
- translation: none (BLEU of copying the source is near 0 across languages and says nothing).
The numbers are cached as JSON under the cache folder, keyed by the task config and the sizes and
mtimes of the data files; without data the table says so instead of showing numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if (
    TYPE_CHECKING
):  # torch is imported where a baseline is computed: normlab-report starts without it
    import torch

from ..rundir import atomic_write_bytes

SPLITS = ("train", "valid", "test")
CLASSIFICATION = ("rt", "sst2", "imdb", "mnist")
NONE = {
    "iwslt14_de_en": "none (BLEU of copying the source is near 0 across languages)",
    "iwslt15_en_vi": "none (BLEU of copying the source is near 0 across languages)",
    "synthetic_cls": "none (generated data)",
}
CACHE_VERSION = 2


def bits_per_byte(
    data: torch.Tensor, bounds: dict[str, tuple[int, int]]
) -> dict[str, dict[str, float]]:
    """{"unigram": {split: bpc}, "bigram": {split: bpc}, "bigram_valid": {split: bpc, "alpha": a}}
    with every model fitted on ``bounds["train"]``: add-one smoothing, and (bigram_valid) add-alpha
    smoothing with alpha minimizing the valid split's bpc (scipy's bounded scalar search over
    log alpha in [1e-4, 10]). A split starting at byte 0 has no predecessor for its first byte:
    the bigram scores it from its second byte on."""
    import torch
    from scipy import optimize

    x = data.to(torch.int64)
    a, b = bounds["train"]
    uni = torch.bincount(x[a:b], minlength=256).double() + 1.0
    log_uni = (uni / uni.sum()).log2()
    seg = x[a:b]
    counts = torch.bincount(seg[:-1] * 256 + seg[1:], minlength=256 * 256).double().view(256, 256)

    def log_big(alpha: float) -> torch.Tensor:
        return ((counts + alpha) / (counts.sum(1, keepdim=True) + 256 * alpha)).log2()

    def score(table: torch.Tensor, lo: int, hi: int) -> float:
        first = max(lo, 1)
        return float(-table[x[first - 1 : hi - 1], x[first:hi]].mean())

    best = optimize.minimize_scalar(
        lambda la: score(log_big(math.exp(la)), *bounds["valid"]),
        bounds=(math.log(1e-4), math.log(10.0)),
        method="bounded",
        options={"xatol": 1e-4},
    )
    alpha = float(math.exp(best.x))
    out: dict[str, dict[str, float]] = {
        "unigram": {},
        "bigram": {},
        "bigram_valid": {"alpha": alpha},
    }
    add_one, tuned = log_big(1.0), log_big(alpha)
    for s, (lo, hi) in bounds.items():
        out["unigram"][s] = float(-log_uni[x[lo:hi]].mean())
        out["bigram"][s] = score(add_one, lo, hi)
        out["bigram_valid"][s] = score(tuned, lo, hi)
    return out


def majority_accuracy(labels: dict[str, torch.Tensor]) -> tuple[int, dict[str, float]]:
    """(majority class of the train labels, accuracy % of predicting it on each split)."""
    import torch

    major = int(torch.bincount(labels["train"]).argmax())
    return major, {s: 100.0 * float((y == major).double().mean()) for s, y in labels.items()}


def right_neighbour_uas(heads: torch.Tensor, offsets: torch.Tensor, punct: torch.Tensor) -> float:
    """UAS % of heads[i] = i + 1 within each sentence, the last word to the root (0)."""
    import torch

    n = heads.numel()
    pos = (
        torch.arange(n) - torch.repeat_interleave(offsets[:-1], offsets[1:] - offsets[:-1]) + 1
    )  # 1-based
    last = torch.zeros(n, dtype=torch.bool)
    last[(offsets[1:] - 1)] = True
    pred = torch.where(last, torch.zeros_like(pos), pos + 1)
    keep = ~punct
    return 100.0 * float(((pred == heads.to(torch.int64)) & keep).sum()) / max(int(keep.sum()), 1)


def _files_key(folder: Path, task_cfg: dict) -> str:
    files = sorted(
        (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    )
    blob = json.dumps(
        {"v": CACHE_VERSION, "files": files, "cfg": task_cfg}, sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _compute(task_name: str, task_cfg: dict, folder: Path, cache_dir: Path) -> dict:
    from omegaconf import OmegaConf

    from ..tasks import get_task_class

    task = get_task_class(task_name)(OmegaConf.create(task_cfg), folder, cache_dir)
    # With train_limit_seed=run each seed trains on its own subset; the baselines are fitted on
    # seed 0's (they are the train majority class, bytes' and heads' statistics: the subset's draw
    # moves them by far less than the seeds' spread).
    task.run_seed = 0
    task.setup()
    if task_name == "enwik8":
        # fitted on the bytes the models train on (the first task.data.train_bytes when capped)
        train = (task.corpus.bounds["train"][0], task.train_end)
        bounds = {"train": train, **{s: task.eval_bounds[s] for s in ("valid", "test")}}
        res = bits_per_byte(task.corpus.data, bounds)
        alpha = res["bigram_valid"].pop("alpha")
        return {
            "metric": "bpc",
            "rows": {
                "unigram (add-one, fitted on train)": res["unigram"],
                "bigram (add-one, fitted on train)": res["bigram"],
                f"smoothed bigram (add-α, α = {alpha:.3g} chosen on valid)": res["bigram_valid"],
            },
            "sizes": {s: hi - lo for s, (lo, hi) in bounds.items()},
        }
    if task_name in CLASSIFICATION:
        labels = {s: task.splits[s][1] for s in SPLITS}
        major, acc = majority_accuracy(labels)
        return {
            "metric": "acc",
            "rows": {f"majority class (train's: {major})": acc},
            "sizes": {s: int(y.numel()) for s, y in labels.items()},
        }
    if task_name == "ptb":
        sp = task.splits
        uas = {
            s: right_neighbour_uas(sp[s]["heads"], sp[s]["offsets"], sp[s]["punct"]) for s in SPLITS
        }
        return {
            "metric": "uas",
            "rows": {"right neighbour (last word → root)": uas},
            "sizes": {s: int(sp[s]["offsets"].numel() - 1) for s in SPLITS},
        }
    return {"missing": "no trivial baseline for this task"}


def baselines(task_name: str, task_cfg: dict, data_dir: Optional[Path], cache_dir: Path) -> dict:
    """The baselines of one task, from the cache when the data files and config are unchanged.
    {"metric", "rows": {name: {split: value}}, "sizes"} or {"missing": why}."""
    if task_name in NONE:
        return {"missing": NONE[task_name]}
    folder = Path(data_dir) / task_name if data_dir else None
    if folder is None or not folder.is_dir():
        return {
            "missing": f"no data folder {folder}" if folder else "no data folder (set NORMLAB_DATA)"
        }
    # Keyed by the data config only: runs that differ in model or training share their baselines.
    path = (
        Path(cache_dir) / f"baselines-{task_name}-{_files_key(folder, task_cfg.get('data'))}.json"
    )
    if path.exists():
        try:
            return json.loads(path.read_text())
        except ValueError:
            path.unlink(missing_ok=True)  # a corrupt cache is recomputed, never trusted
    try:
        res = _compute(task_name, task_cfg, folder, Path(cache_dir))
    except Exception as e:  # unreadable data: say so in the table, do not fail the report
        return {"missing": f"data not readable ({type(e).__name__}: {e})"}
    # Insertion order kept (no sort_keys): a cached result must print exactly like a fresh one.
    atomic_write_bytes(path, json.dumps(res).encode())
    return res


def default_dirs(runs) -> tuple[Optional[Path], Path]:
    """$NORMLAB_DATA, else the data folder the runs recorded (config.yaml paths.data_dir), so the
    committed run copies find the data they were trained on; cache: $NORMLAB_CACHE or ./.cache/normlab."""
    data = os.environ.get("NORMLAB_DATA")
    if not data:
        recorded = sorted(
            {
                str((r.config.get("paths") or {}).get("data_dir"))
                for r in runs
                if (r.config.get("paths") or {}).get("data_dir")
            }
        )
        data = recorded[0] if recorded else None
    cache = os.environ.get("NORMLAB_CACHE") or str(Path.cwd() / ".cache" / "normlab")
    return (Path(data) if data else None), Path(cache)


def level(
    value: float, rows: dict, hib: bool, split: str = "test", tol: float = 0.05
) -> Optional[str]:
    """Where a test score sits among the baselines: "at the unigram level" (within ``tol`` of it, in
    the metric's units), "between the unigram and bigram levels", "better than the bigram level",
    "worse than ...". None when there is no baseline for the split."""
    pts = sorted(
        (
            (r[split], name.split(" (")[0])
            for name, r in rows.items()
            if split in r and math.isfinite(r[split])
        ),
        reverse=not hib,
    )  # from the worst baseline to the best
    if not pts:
        return None
    for v, name in pts:
        if abs(value - v) <= tol:
            return f"at the {name} level"
    better = [name for v, name in pts if (value > v if hib else value < v)]
    if not better:
        return f"worse than the {pts[0][1]} level"
    if len(better) == len(pts):
        return f"better than the {pts[-1][1]} level"
    return f"between the {better[-1]} and {pts[len(better)][1]} levels"


# How close to a baseline counts as "at" it, in the metric's units (0.05 bpc is about the seed std of
# the enwik8 runs that sit there; one accuracy/UAS point is below the classification seed noise).
TOLERANCE = {"bpc": 0.05, "acc": 1.0, "uas": 1.0}


def compute_all(grid, data_dir: Optional[Path], cache_dir: Path) -> dict[str, dict]:
    """column -> baselines, with the task config of the column's first run that has one."""
    out = {}
    for c in grid.columns:
        runs = grid.column_runs(c)
        cfg = next((r.config["task"] for r in runs if isinstance(r.config.get("task"), dict)), None)
        task = c.split("@")[0]
        out[c] = (
            baselines(task, cfg, data_dir, cache_dir)
            if cfg is not None
            else {"missing": "the runs carry no task config (config.yaml)"}
        )
    return out


def level_sentences(grid, base: dict[str, dict]) -> list[str]:
    """Per task with baselines: each norm's mean test score placed among them, grouped by level."""
    lines = []
    for c, b in base.items():
        if "rows" not in b or not b["rows"]:
            continue
        metric, hib = grid.metric(c)
        tol = TOLERANCE.get(b["metric"], 0.0)
        groups: dict[str, list[str]] = {}
        for v in grid.variants():
            mean = grid.cell(c, v).mean
            if mean is not None and (where := level(mean, b["rows"], hib, "test", tol)):
                groups.setdefault(where, []).append(
                    f"{grid.label(v)} ({mean:.3f})"
                    if metric == "bpc"
                    else f"{grid.label(v)} ({mean:.2f})"
                )
        refs = ", ".join(
            f"{name.split(' (')[0]} {r['test']:.3f}"
            if metric == "bpc"
            else f"{name.split(' (')[0]} {r['test']:.2f}"
            for name, r in b["rows"].items()
        )
        if len(groups) == 1:  # one level for every norm: say so, with the range, not nine names
            ((where, names),) = groups.items()
            vals = sorted((n.rsplit("(", 1)[1].rstrip(")") for n in names), key=float)
            body = f"every norm ({len(names)}) is {where} ({vals[0]}–{vals[-1]})"
        else:
            body = "; ".join(f"{where}: {', '.join(names)}" for where, names in groups.items())
        lines.append(f"{c} (test {refs} {b['metric']}; 'at' = within {tol:g}): {body}.")
    return lines


def baselines_table(grid, data_dir: Optional[Path], cache_dir: Path):
    from .aggregate import data_sentence
    from .tables import Table

    base = compute_all(grid, data_dir, cache_dir)
    t = Table(
        "baselines",
        "Trivial baselines computed from the data",
        ["task", "baseline", "metric", "train", "valid", "test", "split sizes"],
    )
    mismatch = []
    for c, b in base.items():
        if "missing" in b:
            t.rows.append([c, b["missing"], "–", "–", "–", "–", "–"])
            continue
        sizes = " / ".join(f"{b['sizes'][s]:,}" for s in SPLITS)
        run_sizes = {
            json.dumps({s: (r.data.get("sizes") or {}).get(s) for s in ("valid", "test")})
            for r in grid.column_runs(c)
            if r.data
        }
        if run_sizes and run_sizes != {json.dumps({s: b["sizes"][s] for s in ("valid", "test")})}:
            mismatch.append(c)
        for name, r in b["rows"].items():
            d = 3 if b["metric"] == "bpc" else 2
            t.rows.append([c, name, b["metric"], *(f"{r[s]:.{d}f}" for s in SPLITS), sizes])
    t.caption = (
        "Computed by the report from the data files with each task's own pipeline and the runs' task "
        "config (same subset and splits): enwik8 unigram/bigram bits per byte of each split, fitted on "
        "the train split with add-one smoothing (the train column is in-sample), and the bigram with "
        "add-α smoothing, α chosen on the valid split (so its valid column is not held out; its test "
        "column is); classification: "
        "accuracy of always predicting the train split's majority class; PTB: UAS of attaching every "
        "word to its right neighbour (last word to the root), punctuation excluded as in the parser's "
        "score. Translation: none. Cached under the cache folder; rows say when the data is absent."
    )
    t.notes = level_sentences(grid, base) + [data_sentence(grid)]
    if mismatch:
        t.notes.append(
            f"Valid/test sizes differ from the runs' for {', '.join(mismatch)}: these baselines "
            "describe other data than the runs used."
        )
    return t
