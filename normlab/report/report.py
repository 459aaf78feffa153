"""Everything the report writes for a set of runs, and the Markdown index that ties it together.

Outputs in ``out``: summary (the task x norm table), the paper's tables that have runs
(table1, table2, table3, beyond), findings, grad_stats (when the probe ran), data, runs (every
run) as .md/.csv/.tex; figures/<name>.png/.pdf; report.md with all tables, findings and figure
captions. Tables are a pure function of the run files, so re-running on the same runs (e.g. the
committed copies under results/<scale>/runs) re-creates them byte for byte.
"""

from __future__ import annotations

from pathlib import Path

from ..files import atomic_write_bytes
from ..study.roles import reported, selection_runs
from .aggregate import Grid, data_sentence
from .axis import setting_axis
from .baselines import Provider, baselines_table
from .family import build, family_table, locate
from .figures import FIGURES, figure
from .findings import findings
from .findings_text import findings_table, method, sign_table, summary_lines
from .gradstats import grad_table, has_probe
from .overfit import figure_note, overfitting_table
from .paper_figures import PAPER_FIGURES, paper_figure
from .paper_tables import TABLES, data_table, paper_tables, runs_table, summary_table
from .regime import regime_sentence
from .runs import Run
from .saturation import has_alpha, saturation_table
from .settings import settings_table
from .tuned import member_findings


def write_report(
    runs: list[Run],
    out: Path,
    figures: bool = True,
    member: Path | None = None,
    baselines: Provider | None = None,
) -> dict:
    """Write every output for ``runs`` into ``out``; returns {"tables": [...], "figures": [...], ...}.
    ``baselines(task name, task config)`` gives a task's trivial baselines for the baselines table
    (normlab.make_report computes them from the data); None: the table says they were not computed.
    ``member``: the results folder these runs are reported for (results/mini), which names the
    family of tests the findings are corrected over (family.py); None: the report's own tests."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    held_out = selection_note(runs)
    runs = reported(runs)
    grid = Grid(runs, axis=setting_axis(runs))
    tables = [summary_table(grid), *paper_tables(grid)]
    if held_out:
        for t in tables:
            t.notes.insert(0, held_out)
    fs = findings(grid)
    fam = build(fs, member, member_findings)
    study = (locate(member) or ("this report",))[0] if member is not None else "this report"
    regime = regime_sentence(grid)
    extra = (
        [
            findings_table(grid, fs, fam, study),
            family_table(fam, data_sentence(grid)),
            sign_table(fam, data_sentence(grid)),
        ]
        if fs
        else []
    )
    if fs and regime:
        extra[0].notes.insert(0, regime)
    extra.append(overfitting_table(grid))
    base = baselines_table(grid, baselines)
    extra.append(base)
    if has_probe(grid):
        extra.append(grad_table(grid))
    if has_alpha(grid):
        extra.append(saturation_table(grid))
    if (st := settings_table(grid)) is not None:
        extra.append(st)
    extra += [data_table(grid), runs_table(grid)]
    written = {"tables": [], "figures": [], "captions": {}}
    for t in tables + extra:
        written["tables"] += t.write(out)
    if figures:
        for key, (title, norms, panels, what) in FIGURES.items():
            more = figure_note(grid) if key == "overfitting" else ""
            caption = figure(
                grid, key, title, norms, panels, out / "figures", f"{what} {more}".strip()
            )
            if caption:
                written["captions"][key] = caption
                written["figures"] += [
                    out / "figures" / f"{key}.png",
                    out / "figures" / f"{key}.pdf",
                ]
        for key in PAPER_FIGURES:
            caption = paper_figure(grid, key, out / "figures")
            if caption:
                written["captions"][key] = caption
                written["figures"] += [
                    out / "figures" / f"{key}.png",
                    out / "figures" / f"{key}.pdf",
                ]
    _remove_stale(out, written)
    index = render_index(
        tables,
        extra,
        summary_lines(fs, fam, study) if fs else [],
        method(fam) if fs else "",
        written["captions"],
        [n for n in base.notes if not n.startswith("Scale:")],
        regime,
        held_out,
    )
    atomic_write_bytes(out / "report.md", index.encode())
    written["index"] = out / "report.md"
    written["main"] = tables[1] if len(tables) > 1 else tables[0]
    return written


OWN_TABLES = (
    "summary",
    *TABLES,
    "findings",
    "family",
    "sign_tests",
    "overfitting",
    "baselines",
    "grad_stats",
    "settings",
    "data",
    "runs",
)


def _remove_stale(out: Path, written: dict) -> None:
    """Delete this report's own file names left from an earlier report in ``out`` that this one
    did not write (e.g. a figure whose norms are gone), so no output describes other runs."""
    keep = {Path(p).resolve() for p in written["tables"] + written["figures"]}
    own = [out / f"{k}.{e}" for k in OWN_TABLES for e in ("md", "csv", "tex")]
    own += [
        out / "figures" / f"{k}.{e}" for k in (*FIGURES, *PAPER_FIGURES) for e in ("png", "pdf")
    ]
    for p in own:
        if p.exists() and p.resolve() not in keep:
            p.unlink()


def selection_note(runs: list[Run]) -> str:
    """The sentence that says which runs every table leaves out (normlab.study.roles), or ""."""
    sel = selection_runs(runs)
    if not sel:
        return ""
    seeds = sorted({r.seed for r in sel})
    kept = sorted({r.seed for r in reported(runs)})
    return (
        f"Left out: {len(sel)} selection run(s) (seed {', '.join(map(str, seeds))}: they chose the presets or "
        f"the lrs, normlab/configs/study/seeds.yaml); every mean, test and figure uses the evaluation seeds "
        f"{', '.join(map(str, kept)) or 'none'} only."
    )


def render_index(
    tables,
    extra,
    lines: list[str],
    how: str,
    captions: dict,
    levels: list[str] = (),
    regime: str = "",
    held_out: str = "",
) -> str:
    parts = [
        "# normlab report",
        "",
        "Generated by `normlab-report` from run directories only (config.yaml, summary.json, curves.jsonl). "
        "Each table is also written as .csv and .tex beside this file.",
        "",
    ]
    if held_out:
        parts += [held_out, ""]
    if lines:
        parts += ["## Findings", "", *lines, "", how, ""] + ([regime, ""] if regime else [])
    if levels:
        parts += [
            "Where the mean test scores sit among the trivial baselines (baselines table):",
            "",
            *(f"- {x}" for x in levels),
            "",
        ]
    parts += ["## Tables", ""]
    for t in tables + [t for t in extra if t.key not in ("runs",)]:
        parts += [t.markdown(), ""]
    if captions:
        parts += ["## Figures", ""]
        for key, cap in captions.items():
            parts += [f"![{key}](figures/{key}.png)", "", f"*{cap}* ([PDF](figures/{key}.pdf))", ""]
    parts += ["Every run, with its status and path: [runs.md](runs.md)."]
    return "\n".join(parts) + "\n"
