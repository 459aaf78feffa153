"""The studies the drivers know, declared once.

fixed, prenorm: scripts/reproduce.py (tasks x the tables' norms x seeds at the preset lr);
tuned: scripts/reproduce_tuned.py (each norm at its own lr, sharing the fixed study's preset-lr
runs). ``out``: the results folder, under results/; ``name``: the run name (runs/<scale>/<name>/).
"""

from __future__ import annotations

ALL_TASKS = ("iwslt14_de_en", "iwslt15_en_vi", "enwik8", "imdb", "rt", "sst2", "mnist", "ptb")

FIXED_STUDIES = {
    "fixed": {
        "name": "xu2019",
        "tasks": ALL_TASKS,
        "out": "{scale}",
        "overrides": [],
        "make": "make reproduce-table",
    },
    # The same 12-layer enwik8 LM with the norm before each sublayer: is AdaNorm's and DyT's
    # collapse at the unigram level the norm or its placement?
    "prenorm": {
        "name": "enwik8_prenorm",
        "tasks": ("enwik8",),
        "out": "{scale}-enwik8-prenorm",
        "overrides": ["task.model.normalize_before=true"],
        "make": "make reproduce-prenorm",
        "title": "enwik8 with pre-norm",
        "about": (
            "The same 12-layer enwik8 LM as the fixed-lr study, with the norm before each sublayer "
            "(`task.model.normalize_before=true`): one change, the placement, to tell whether "
            "AdaNorm's, DyT's and the detach variants' level at post-norm (results/mini) is the norm "
            "or its placement. Same code, presets and data as the fixed-lr study."
        ),
    },
}
STUDIES = (*FIXED_STUDIES, "tuned")

DRIVERS = {
    "fixed": "scripts/reproduce.py",
    "prenorm": "scripts/reproduce.py --study prenorm",
    "tuned": "scripts/reproduce_tuned.py",
}
