"""The tuned comparison's report: each norm at its own learning rate, beside the one lr tuned on
LayerNorm. The protocol (which lrs seed 1 trains, which one it chooses: the best *validation*
score; test scores never take part) is tuned_protocol.py; ``python -m normlab.campaigns.xu2019
--study tuned`` trains it.

Written: lr_grid (seed 1's validation score at each lr, the choice), tuned (test mean ± std at
the fixed and at the chosen lr), tuned_findings (the paper's claims re-tested at the chosen lrs),
survives (each claim's Holm verdict at fixed vs tuned lr), figures/lr_sensitivity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...files import atomic_write_bytes
from ...make_report import provider_for
from ...report.aggregate import NORM_LABELS, Cell, Grid, data_sentence, fmt
from ...report.baselines import baselines_table, compute_all
from ...report.record import read as read_record
from ...report.roles import reported
from ...report.runs import Run, find_runs
from ...report.tables import Table
from ...report.trained import gate, gate_with, mark, untrained_sentence
from . import findings_record
from .family import Family, apply, build, family_sentence, family_table, folders, locate
from .findings import findings
from .findings_text import findings_table, sign_table, summary_lines
from .protocol import protocol, settings
from .tuned_lr_table import lr_grid_table
from .tuned_protocol import (  # noqa: F401  (the protocol, re-exported for the report's callers)
    EXTEND,
    FINISHED,
    TUNED_NORMS,
    Sweep,
    criterion,
    grid_lrs,
    lr_of,
    planned_lrs,
    select,
)


def _as_default(runs: list[Run]) -> list[Run]:
    """The runs as their norm's only setting, so the findings compare norm against norm."""
    return [Run(r.path, r.config, {**r.summary, "setting": {}}, r._curves) for r in runs]


def signed_diff(own: Cell, fixed: Cell) -> str:
    """own − fixed in the metric's better direction (positive = the own lr is better)."""
    if fixed.mean is None or own.mean is None:
        return "–"
    d = (own.mean - fixed.mean) * (1 if own.runs[0].higher_is_better else -1)
    return fmt(d, own.metric, signed=True) + (" (better)" if d > 0 else "")


def tuned_table(sw: Sweep, trivial: Optional[dict] = None) -> Table:
    """``trivial``: task -> its trivial baselines (compute_all), to mark the cells that did not train."""
    t = Table(
        "tuned",
        "Fixed lr (tuned on LayerNorm) vs each norm's own lr: test score",
        [
            "task",
            "norm",
            "chosen lr",
            "fixed lr: mean ± std (n)",
            "own lr: mean ± std (n)",
            "own − fixed",
        ],
    )
    for key in sw.keys():
        lr, base = sw.chosen(key), sw.preset.get(key)
        fixed, own = Cell(sw.runs_at(key, base)), Cell(sw.runs_at(key, lr))
        for c in (fixed, own):
            mark(c, (trivial or {}).get(key[0]) or {}, protocol())
        t.rows.append(
            [
                key[0],
                NORM_LABELS.get(key[1], key[1]),
                sw.choice(key),
                fixed.text(),
                own.text() if lr else "–",
                signed_diff(own, fixed),
            ]
        )
    t.caption = (
        "Test metric of the selected checkpoint, mean ± std over seeds (n = completed runs; diverged runs "
        "counted apart). 'own − fixed' is signed so that positive = the norm's own lr is better. The fixed "
        "lr is the preset's, tuned once on LayerNorm; the own lr was chosen on seed 1's validation score "
        "(lr_grid table). Seed 1, the selection seed, is in no mean here: it chose the presets and the lrs, "
        "so it would favour them (the best of several noisy points); the means are over the evaluation "
        "seeds only (normlab/configs/study/seeds.yaml). A choice at the grid's edge means the best lr may "
        "lie outside the grid."
    )
    t.notes = [data_sentence(sw.grid)]
    return t


def tuned_runs(sw: Sweep) -> list[Run]:
    return _as_default([r for key in sw.keys() for r in sw.runs_at(key, sw.chosen(key))])


def fixed_runs(sw: Sweep) -> list[Run]:
    """The preset-lr runs of the (task, norm) pairs whose own lr is chosen: the two comparisons
    cover the same pairs while the grid is incomplete."""
    return _as_default(
        [
            r
            for key in sw.keys()
            if sw.chosen(key) is not None
            for r in sw.runs_at(key, sw.preset.get(key))
        ]
    )


def fixed_family(member: Optional[Path], own: list) -> Family:
    """The fixed-lr rows the tuned ones are read against: the primary family of the fixed study's
    folder beside ``member`` (its committed runs) when there is one, else this folder's own
    preset-lr rows, exploratory."""
    if member is not None and (where := locate(member)) is not None:
        fixed = Path(member).parent / Path(folders(where[1])["fixed"]).name
        if (fixed / "runs").is_dir():
            return build(member_findings("fixed", fixed), fixed)
    return apply("fixed (this folder's preset-lr runs)", own, primary=False, declared=False)


def survives_table(fixed: Family, tuned: Family) -> Table:
    t = Table(
        "survives",
        "Do the paper's claims survive lr tuning?",
        ["claim", "task", "fixed lr", "fixed diff", "own lr", "own diff"],
    )
    by = {(f.claim.key, f.column): f for f in fixed.rows}

    def diff(f):
        if f is None or f.diff is None:
            return "–"
        return fmt(f.diff, "loss" if f.unit == "gap" else f.unit, signed=True)

    for g in tuned.rows:
        f = by.get((g.claim.key, g.column))
        t.rows.append(
            [g.claim.text, g.column, f.shown() if f else "–", diff(f), g.shown(), diff(g)]
        )
    t.caption = (
        f"Each claim's verdict with every norm at the preset lr (fixed: {family_sentence(fixed)}) "
        f"and at its own chosen lr ({family_sentence(tuned)}); 'diff' = mean paired difference in "
        "the claimed direction (positive = as claimed); '–' = no fixed-lr row for that claim and "
        "task. " + protocol().margins_sentence()
    )
    return t


def recorded_extend(out: Path) -> int:
    """The widening rule a results folder's grid was run with (its reproduce.json), so later
    sessions and report-only passes keep it; EXTEND for a new folder."""
    return int((read_record(out).get("grid") or {}).get("extend", EXTEND))


def grid_factors() -> list[float]:
    """The lr grid's factors (hparams_search/lr_grid.yaml), read without importing normlab.tune (torch)."""
    import yaml

    from ...report.roles import CONFIGS

    spec = yaml.safe_load((CONFIGS / "hparams_search" / "lr_grid.yaml").read_text())
    return list(spec["params"]["task.train.lr"]["factor_choices"])


def member_key(study: str, folder: Path, factors=None, extend=None) -> dict:
    """What a family member's rows depend on (findings_record): its run copies and, for the tuned
    study, the lr grid (``factors``, ``extend``: the folder's own by default)."""
    key = {
        "study": study,
        "runs": findings_record.runs_digest(Path(folder) / "runs"),
        # what decides which cells trained and which tasks learn (the baselines come from the data)
        "gate": {k: settings()[k] for k in ("trained_margin", "not_learning") if k in settings()},
    }
    if study == "tuned":
        key["factors"] = list(grid_factors() if factors is None else factors)
        key["extend"] = recorded_extend(folder) if extend is None else extend
    return key


def member_findings(study: str, folder: Path) -> list:
    """A family member's claim rows from its committed run copies, as that study's own report finds
    them: the tuned study's at each norm's chosen lr, the others' over their reported runs. Read
    from the folder's findings.json when that was written from the same runs."""
    recorded = findings_record.read(folder, member_key(study, folder))
    if recorded is not None:
        return recorded
    runs = find_runs([Path(folder) / "runs"])
    provider = provider_for(runs)
    if study == "tuned":
        sw = Sweep(runs, grid_factors(), recorded_extend(folder))
        return findings(gate_with(Grid(tuned_runs(sw), protocol=protocol()), provider))
    return findings(gate_with(Grid(reported(runs), protocol=protocol()), provider))


def write_tuned_report(
    runs: list[Run],
    out: Path,
    factors: list[float],
    figures: bool = True,
    extend: int = EXTEND,
    member: Optional[Path] = None,
) -> dict:
    """``member``: the results folder reported for (results/mini-tuned), which names the family of
    tests (family.py); None: this report's tuned and preset-lr rows are the family."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sw = Sweep(runs, factors, extend)
    provider = provider_for(runs)
    tuned_grid = Grid(tuned_runs(sw), protocol=protocol())
    fixed_grid = Grid(fixed_runs(sw), protocol=protocol())
    # cells first: the baselines of every task of the study, the tuned and fixed cells gated on them
    base = compute_all(sw.grid, provider)
    for g in (tuned_grid, fixed_grid):
        gate(g, {c: base[c] for c in g.columns if c in base})
    untrained = [
        f"{at}: {s}"
        for at, g in (("At the preset lr", fixed_grid), ("At each norm's own lr", tuned_grid))
        if (s := untrained_sentence(g))
    ]
    tables = [lr_grid_table(sw), tuned_table(sw, {c.split("@")[0]: b for c, b in base.items()})]
    tables[1].notes[:0] = untrained
    tuned_f = findings(tuned_grid)
    # the tuned study is secondary (exploratory) when it is the declared one; a user's is its own
    fam = build(tuned_f, member, study="tuned" if member is not None else None)
    fixed_fam = fixed_family(member, findings(fixed_grid))
    if tuned_f:
        ft = findings_table(tuned_grid, tuned_f, fam, "tuned")
        ft.key, ft.title = "tuned_findings", "Findings with every norm at its own chosen lr"
        tables += [
            ft,
            survives_table(fixed_fam, fam),
            family_table(fam, data_sentence(sw.grid)),
            sign_table(fam, data_sentence(sw.grid)),
        ]
    tables.append(
        baselines_table(tuned_grid, {c: base[c] for c in tuned_grid.columns if c in base})
    )
    paths = [p for t in tables for p in t.write(out)]
    key = member_key("tuned", member, factors, extend) if member is not None else None
    paths.append(findings_record.write(out, tuned_f, key))
    from .tuned_figure import lr_figure  # matplotlib only when a figure is drawn

    caption = lr_figure(sw, out) if figures else None
    parts = [
        "# normlab tuned comparison",
        "",
        "Each norm at its own learning rate (chosen on seed 1's validation score) beside the preset lr "
        "that was tuned on LayerNorm; see normlab/report/tuned.py for the protocol.",
        "",
    ]
    parts += [t.markdown() + "\n" for t in tables]
    for label, f in (
        ("every norm at the preset lr", fixed_fam),
        ("every norm at its own chosen lr", fam),
    ):
        if f.rows:  # the sign test across tasks sits beside the per-task verdicts, as in the fixed-lr report
            parts += [
                f"### The claims across tasks, {label}",
                "",
                *summary_lines(f.rows, f, f.study),
                "",
            ]
    if caption:
        parts += ["![lr sensitivity](figures/lr_sensitivity.png)", "", f"*{caption}*", ""]
    atomic_write_bytes(out / "report.md", ("\n".join(parts) + "\n").encode())
    return {"tables": paths, "sweep": sw, "main": tables[1]}
