"""The studies of the campaign, declared once: the one driver (``python -m normlab.campaigns.xu2019``,
normlab/campaigns/xu2019/driver.py) trains each, the make targets name it, the folder READMEs
describe it.

``kind``: ``fixed`` (tasks x norms [x variants] x seeds at the preset lr; the norms are the tables'
unless the study names its own, ``variants`` its own axis, ``seeds`` the evaluation seeds unless it
names fewer) or ``tuned`` (each norm at its own lr, sharing the fixed study's preset-lr runs). ``out``: the results folder, under results/; ``name``:
the run name (runs/<scale>/<name>/); ``make``: the target users type.
"""

from __future__ import annotations

ALL_TASKS = ("iwslt14_de_en", "iwslt15_en_vi", "enwik8", "imdb", "rt", "sst2", "mnist", "ptb")
# the tuned grid schedules whole tasks, so a partial grid has the cheap ones. IWSLT15 is not in
# the learning regime at mini (claims.yaml: not_learning): an lr chosen among runs that did not
# learn to translate would choose nothing, so the tuned study leaves it out.
CHEAPEST_FIRST = ("rt", "sst2", "mnist", "iwslt14_de_en", "enwik8", "ptb", "imdb")

STUDIES = {
    "fixed": {
        "kind": "fixed",
        "name": "xu2019",
        "tasks": ALL_TASKS,
        "out": "{scale}",
        "overrides": [],
        "make": "make reproduce-table",
    },
    # The same 12-layer enwik8 LM with the norm before each sublayer: is AdaNorm's and DyT's
    # collapse at the unigram level the norm or its placement?
    "prenorm": {
        "kind": "fixed",
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
    # Where the norm sits, against what it is: every placement of docs/placement.md (pre-norm with
    # and without LayerNorm scaling) for LayerNorm, LayerNorm without bias and gain, and DyT (no
    # statistics at all), on a translation and a language-modelling task. Trained after the
    # evaluation grids, on three of the evaluation seeds: it is secondary (outside the declared
    # family), and 5 seeds of 4 norms would cost 19 of the 30 one-thread hours the re-run of every
    # study at the presets that learn may take (docs/calibration.md).
    "placement": {
        "kind": "fixed",
        "name": "placement",
        "tasks": ("iwslt14_de_en", "enwik8"),
        "norms": ("layernorm", "layernorm_simple", "dyt"),
        "seeds": (2, 3, 4),
        "variants": tuple(
            (f"task.model.placement={p}", *extra)
            for p, extra in (
                ("post", ()),
                ("pre", ()),
                ("pre", ("task.model.layernorm_scaling=true",)),
                ("peri", ()),
                ("mixln", ()),
                ("deepnorm", ()),
            )
        ),
        "out": "{scale}-placement",
        "overrides": [],
        "make": "make reproduce-placement",
        "title": "placement x norm",
        "about": (
            "Each norm in every placement (`task.model.placement`: post, pre, pre with LayerNorm "
            "scaling, peri, mixln, deepnorm; docs/placement.md) on IWSLT14 and enwik8, at the "
            "presets' lr and sizes: does a norm's effect survive a change of where it sits? Every "
            "table has a column per task and placement, and each claim is tested within a "
            "placement. Same code and data for every cell."
        ),
    },
    # Each norm at its own lr: seed 1 at five lrs spanning 8x, the best on validation, then the
    # evaluation seeds at it and at the preset (the fixed study's runs, shared). The norms of the
    # paper's claims that it re-tests (LayerNorm, LayerNorm-simple, DetachNorm, AdaNorm): w/o norm,
    # RMSNorm and DyT at their own lr are in the committed runs of the earlier presets, and would
    # cost the re-run at the presets that learn 3 more one-thread hours per task.
    "tuned": {
        "kind": "tuned",
        "name": "xu2019",
        "tasks": CHEAPEST_FIRST,
        "norms": ("layernorm", "layernorm_simple", "detachnorm", "adanorm"),
        "out": "{scale}-tuned",
        "overrides": [],
        "make": "make reproduce-tuned",
        "title": "tuned comparison",
    },
    # The confirmatory study's lrs, chosen before it is declared: seed 1 at every lr of the tuned
    # grid for each norm of the paper's claims, at the presets in use. It chooses and reports
    # nothing (no evaluation seed): its folder is the record of the choice the confirmatory
    # declaration cites. The tuned study's selection runs at the same presets are reused
    # ("reuses": their committed and staged copies count for the same jobs).
    "confirm-lr": {
        "kind": "tuned",
        "name": "xu2019",
        "tasks": CHEAPEST_FIRST,
        "norms": (
            "none",
            "layernorm",
            "layernorm_simple",
            "detachnorm",
            "detach_mean",
            "detach_var",
            "adanorm",
        ),
        "evaluation": False,
        "reuses": ("tuned",),
        "out": "{scale}-confirm-lr",
        "overrides": [],
        "make": "make select-confirm-lr",
        "title": "the confirmatory study's lr selection",
    },
    # The confirmatory study: everything that decides it (claims, tasks, norms, seeds, each norm's
    # lr, looks, margins, its exploratory rows) is in its declaration, committed before its first
    # run and frozen by its hash (normlab/study/declaration.py); ``--study confirm`` reads it.
    "confirm": {
        "kind": "fixed",
        "name": "confirm",
        "declaration": "confirm.yaml",  # beside this module
        "tasks": (),
        "out": "{scale}-confirm",
        "overrides": [],
        "make": "make grid-start STUDY=confirm",
        "title": "the confirmatory study",
        "about": (
            "The paper's claims tested as declared before the first run "
            "(normlab/campaigns/xu2019/confirm.yaml): fresh evaluation seeds (101-120), each norm "
            "at its own lr (chosen on seed 1, results/mini-confirm-lr), seeds added at the "
            "declared looks to the family's unresolved rows; the rows its power plan could not "
            "resolve train the first look and read exploratory."
        ),
    },
}
FIXED_STUDIES = {k: v for k, v in STUDIES.items() if v["kind"] == "fixed"}


def declaration_file(study: str):
    """The declaration file of a declared study (its path), or None."""
    from pathlib import Path

    name = STUDIES[study].get("declaration")
    return Path(__file__).with_name(name) if name else None


DRIVER = "python -m normlab.campaigns.xu2019"
DRIVERS = {study: f"{DRIVER} --study {study}" for study in STUDIES}


def out_folder(study: str, scale: str) -> str:
    """The study's results folder name under results/ (mini, mini-tuned, ...)."""
    return STUDIES[study]["out"].format(scale=scale)
