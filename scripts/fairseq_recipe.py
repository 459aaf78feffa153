#!/usr/bin/env python
"""One composed normlab config, written out for fairseq: its data and its fairseq-train flags.

Same data: normlab's own corpus for the task and scale (its BPE, its filtered train pairs, its
valid split) is written out as piece text with normlab's vocabulary as the fairseq dictionary
(same entries, same order after the 4 specials, no padding to a multiple of 8), then
``fairseq-preprocess --srcdict`` binarizes it, so both trainers see identical token sequences.
Same recipe: model sizes, pre-norm, shared embeddings, dropouts, Adam betas/eps, weight decay 0,
inverse-sqrt warm-up, label smoothing, --max-tokens and N updates come from the one composed
normlab config. scripts/compare_fairseq.py and scripts/bench_fairseq.py train from these.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "normlab" / "integrations" / "fairseq" / "normlab_norms"
TASK = "iwslt14_de_en"
# recipe -> (normlab overrides, updates). max_positions 1024 (fairseq's default): dev2010 has a
# 268-piece sentence, which normlab cuts at the presets' 256 and fairseq refuses. weight_decay 0:
# normlab's Adam adds L2 to matrices only, fairseq's decays every parameter decoupled (AdamW-style);
# with 0 the two optimizers agree.
RECIPES = {
    # the IWSLT14 mini preset as it stands (normlab/configs/preset/iwslt14_de_en/mini.yaml)
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
    """The job config normlab-train would run for the recipe, checked as it checks it."""
    from normlab.config import compose_job

    return compose_job(
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


def fairseq_flags(cfg, updates: int, attention_init: str = "fairseq") -> list[str]:
    """fairseq-train's flags for the composed normlab config (update_freq 1, fp32, CPU);
    ``attention_init="torch"``: the plugin's PyTorch-default attention init, normlab's own."""
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
        "--attention-init",
        attention_init,
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
