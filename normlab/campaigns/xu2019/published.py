"""The numbers Xu et al. (2019) published, keyed by normlab task and norm keys.

Source: the NeurIPS 2019 poster's Tables 1-3 as transcribed in docs/paper.md
(every cell verified there). Only tasks that are the same task as ours are mapped: De-En, En-Vi,
Enwiki8, RT, MNIST, PTB. SST-2 and IMDB are not in the paper, so they have no published number.
The paper's En-De and SST5 are kept under the keys a task for them would most likely get, so a
future task config with that key shows them; they are not normlab tasks today.

``None`` means the paper reports "Diverge". The paper has no numbers for detach_mean/detach_var
(its table on them was not recovered, docs/paper.md), RMSNorm or DyT.
"""

from __future__ import annotations

from typing import Optional

SOURCE = (
    "Xu et al. 2019, NeurIPS poster Tables 1-3 (docs/paper.md): full datasets and the paper's "
    "12-layer MT/LM, 4-layer classification, 3-layer MNIST/PTB models"
)

# task -> (metric as the paper reports it, higher is better, decimals the paper prints)
METRICS: dict[str, tuple[str, bool, int]] = {
    "wmt14_en_de": ("bleu", True, 1),
    "iwslt14_de_en": ("bleu", True, 1),
    "iwslt15_en_vi": ("bleu", True, 1),
    "enwik8": ("bpc", False, 2),
    "rt": ("acc", True, 2),
    "sst5": ("acc", True, 2),
    "mnist": ("acc", True, 2),
    "ptb": ("uas", True, 2),  # the poster says "parsing score"; UAS vs LAS is not stated [U]
}

# task -> norm -> published test score (None = "Diverge")
PUBLISHED: dict[str, dict[str, Optional[float]]] = {
    "wmt14_en_de": {
        "none": None,
        "layernorm": 28.3,
        "layernorm_simple": 28.4,
        "detachnorm": None,
        "adanorm": 28.5,
    },
    "iwslt14_de_en": {
        "none": 34.0,
        "layernorm": 35.5,
        "layernorm_simple": 35.5,
        "detachnorm": 33.9,
        "adanorm": 35.6,
    },
    "iwslt15_en_vi": {
        "none": 28.4,
        "layernorm": 31.2,
        "layernorm_simple": 31.6,
        "detachnorm": 27.7,
        "adanorm": 31.4,
    },
    "enwik8": {
        "none": 1.04,
        "layernorm": 1.07,
        "layernorm_simple": 1.07,
        "detachnorm": 1.12,
        "adanorm": 1.07,
    },
    "rt": {
        "none": 76.85,
        "layernorm": 77.21,
        "layernorm_simple": 76.66,
        "detachnorm": 76.40,
        "adanorm": 77.50,
    },
    "sst5": {
        "none": 38.55,
        "layernorm": 39.23,
        "layernorm_simple": 40.54,
        "detachnorm": 40.04,
        "adanorm": 40.54,
    },
    "mnist": {
        "none": 99.14,
        "layernorm": 99.13,
        "layernorm_simple": 99.09,
        "detachnorm": 99.10,
        "adanorm": 99.35,
    },
    "ptb": {
        "none": 88.31,
        "layernorm": 89.12,
        "layernorm_simple": 89.19,
        "detachnorm": 89.79,
        "adanorm": 89.23,
    },
}

DIVERGED = object()  # returned by published() for a "Diverge" cell, distinct from "not published"


def has_published(task: str) -> bool:
    return task in PUBLISHED


def published(task: str, norm: str):
    """The published score, DIVERGED, or None when the paper has no such cell."""
    row = PUBLISHED.get(task, {})
    if norm not in row:
        return None
    return DIVERGED if row[norm] is None else row[norm]


def published_improvement(task: str, better: str, worse: str) -> Optional[float]:
    """The paper's Table 2 "Improvement" row: ``better`` minus ``worse``, sign-flipped where lower
    is better (BPC), so positive always means ``better`` is better. None if a cell is missing or
    diverged (the paper prints "–" there)."""
    a, b = published(task, better), published(task, worse)
    if not isinstance(a, float) or not isinstance(b, float):
        return None
    sign = 1.0 if METRICS[task][1] else -1.0
    return round(sign * (a - b), METRICS[task][2])


def published_text(task: str, norm: str) -> str:
    """The cell as the paper prints it: "77.21", "Diverge", or "–" (no such cell)."""
    v = published(task, norm)
    if v is DIVERGED:
        return "Diverge"
    return "–" if v is None else f"{v:.{METRICS[task][2]}f}"


def signed_text(d: float, decimals: int) -> str:
    """ "+0.40", "-0.60"; a difference that prints as zero is "0.00", never "-0.00" (a tie in the
    paper, e.g. Enwiki8 1.07 vs 1.07, sign-flipped for BPC, is -0.0 in floating point)."""
    text = f"{d:+.{decimals}f}"
    return text[1:] if float(text) == 0 else text


def improvement_text(task: str, better: str, worse: str) -> str:
    d = published_improvement(task, better, worse)
    return "–" if d is None else signed_text(d, METRICS[task][2])


# the paper's columns in its own order, with the names it prints
PAPER_COLUMNS = {
    "wmt14_en_de": "En-De",
    "iwslt14_de_en": "De-En",
    "iwslt15_en_vi": "En-Vi",
    "enwik8": "Enwiki8",
    "rt": "RT",
    "sst5": "SST5",
    "mnist": "MNIST",
    "ptb": "PTB",
}
PAPER_ROWS = {
    "Table 1 (bias and gain)": ["none", "layernorm", "layernorm_simple"],
    "Table 2 (derivatives of the mean and variance)": ["none", "detachnorm", "layernorm_simple"],
    "Table 3 (AdaNorm)": ["none", "layernorm", "layernorm_simple", "adanorm"],
}
ROW_NAMES = {
    "none": "w/o Norm",
    "layernorm": "LayerNorm",
    "layernorm_simple": "LayerNorm-simple",
    "detachnorm": "DetachNorm",
    "adanorm": "AdaNorm",
}


def markdown() -> str:
    """The published tables as docs/paper.md prints them (a test holds the page to this)."""
    out = []
    head = "| model | " + " | ".join(PAPER_COLUMNS.values()) + " |"
    for title, rows in PAPER_ROWS.items():
        out += [f"**{title}**", "", head, "|---" * (len(PAPER_COLUMNS) + 1) + "|"]
        for norm in rows:
            cells = [published_text(t, norm) for t in PAPER_COLUMNS]
            out.append(f"| {ROW_NAMES[norm]} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)
