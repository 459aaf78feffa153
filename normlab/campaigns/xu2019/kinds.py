"""What differs between the campaign's two kinds of study; the driver (driver.py) does the rest.

``Fixed``: tasks x norms [x variants] x seeds at the preset lr (the fixed-lr, pre-norm and
placement studies), reported by the campaign's report. ``Tuned``: each norm at its own lr, whose
grid names its jobs in stages and shares the fixed study's preset-lr runs, reported by the tuned
report (tuned.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...report import find_runs
from ...study import plan as planning
from ...study.fixed_grid import FixedGrid
from ...study.grid import Study
from .request import Request
from .studies import DRIVER, out_folder


def committed_runs(folder: Path, tasks=None) -> list:
    runs = find_runs([folder / "runs"]) if (folder / "runs").exists() else []
    return [r for r in runs if tasks is None or r.task in tasks]


# the selection runs that chose the presets: what a run of a new preset costs before the study has one
CALIBRATION = Path("calibration") / "selection"


def cost_reference(r: Request) -> list:
    """The measured runs a study's cost is estimated from: its results folder's, the fixed study's
    and the calibration runs (plan.matching keeps those trained at the current presets)."""
    folders = [r.out, r.out.parent / out_folder("fixed", r.scale)]
    runs = [x for f in dict.fromkeys(folders) for x in committed_runs(f, r.tasks)]
    calib = r.out.parent / CALIBRATION
    return runs + ([x for x in find_runs([calib]) if x.task in r.tasks] if calib.is_dir() else [])


def task_presets(r: Request, code: Optional[Path] = None) -> dict:
    """task -> its task config as the checkout ``code`` (None: this one) composes it for the study."""
    from omegaconf import OmegaConf

    from ... import config  # noqa: F401  (registers the schema the configs compose with)
    from ...config_keys import CONFIGS, compose

    configs = Path(code) / "normlab" / "configs" if code else CONFIGS
    out = {}
    for task in r.tasks:
        cfg = compose([f"task={task}", f"scale={r.scale}", *r.overrides], configs=configs)
        out[task] = OmegaConf.to_container(cfg.task, resolve=True)
    return out


def presets(r: Request) -> dict:
    """task -> the cost key (plan.cost_key) of the preset the study trains at this checkout."""
    return {t: planning.cost_key(c) for t, c in task_presets(r).items()}


class Fixed:
    tag = "reproduce"
    selection_what = (
        "the seed(s) that calibrated the presets; never in a reported mean, test or figure"
    )

    def __init__(self, r: Request):
        self.r = r
        self.shares_with: tuple = ()

    def grid(self, commit: str, dirty: bool, code) -> Study:
        r = self.r
        kw = dict(name=r.run_name, overrides=r.overrides, **r.study_args(commit, dirty, code))
        if r.declaration is not None:  # its looks are declared: seeds go to its open rows
            from .protocol import of_declaration
            from .sequential_grid import SequentialGrid

            d = r.declaration
            return SequentialGrid(
                r.tasks, r.norms, r.seeds, r.variants, max_seeds=d["looks"][-1], lrs=r.lrs,
                protocol=of_declaration(d), family=d["study"], order=d["seeds"], **kw,
            )  # fmt: skip
        if r.until_resolved:
            from .sequential_grid import SequentialGrid

            return SequentialGrid(
                r.tasks, r.norms, r.seeds, r.variants, max_seeds=r.max_seeds, **kw
            )
        # its seeds are evaluation seeds: no selection run of another commit counts
        return FixedGrid(r.tasks, r.norms, r.seeds, r.variants, lrs=r.lrs, **kw)

    def make_command(self) -> str:
        r = self.r
        if r.declaration is not None:
            return f"{DRIVER} --declaration {r.declaration.path} --scale {r.scale} --jobs {r.jobs}"
        return (
            f"{r.decl['make']} SCALE={r.scale} TASKS={','.join(r.tasks)} "
            f"SEEDS={','.join(map(str, r.seeds))} JOBS={r.jobs}"
            + (f" MAX_SEEDS={r.max_seeds}" if r.until_resolved else "")
        )

    def describe(self, commit: str, source: str, grid: Study) -> str:
        r = self.r
        d = r.declaration
        name = f"{d['study']} (declared in {d.path}, {d.hash[:12]})" if d else r.study
        run_name = "" if d else f" ({r.decl['name']})"
        return (
            f"study {name}{run_name} at commit {commit[:12]}: {len(r.tasks)} tasks x "
            f"{len(r.norms)} norms x "
            + (f"{len(r.variants)} variants x " if len(r.variants) > 1 else "")
            + f"seeds {','.join(map(str, r.seeds))} "
            f"({', '.join(f'{s}: {role}' for s, role in r.roles.items())}); the commit is {source}"
        )

    def plan_lines(self, grid: Study) -> list[str]:
        r = self.r
        return planning.lines(grid, reference=cost_reference(r), presets=presets(r))

    def reported(self, runs: list, task_commits: dict, commit: str) -> list:
        """The runs the record counts: each task's own commit's (``task_commits``; ``commit`` for a
        task without one), the selection record's copies beside them."""
        return [
            x
            for x in runs
            if x.summary.get("git_commit")
            == task_commits.get(x.task, commit).removesuffix("-dirty")
        ]

    def write_report(self, runs: list) -> dict:
        from ...make_report import report
        from .protocol import of_declaration
        from .sections import CAMPAIGN

        r = self.r
        # a confirmatory study is tested under what its declaration fixed before its data
        declared = of_declaration(r.declaration) if r.declaration is not None else None
        return report(
            runs,
            r.out,
            figures=r.figures,
            member=Path(r.record_out or r.out),
            campaign=CAMPAIGN,
            protocol=declared,
        )


class Tuned(Fixed):
    tag = "tuned"
    selection_what = (
        "seed 1 at every lr of the grid: it chose each norm's lr; never in a reported mean or test"
    )

    def __init__(self, r: Request):
        super().__init__(r)
        self.shares_with = (r.out.parent / out_folder("fixed", r.scale),)

    def grid(self, commit: str, dirty: bool, code) -> Study:
        from .tuned_grid import Grid

        grid = Grid(self.r, code, commit, dirty)
        grid.presets = task_presets(self.r, code)  # seed 1 of an older preset chooses nothing now
        return grid

    def make_command(self) -> str:
        return f"{self.r.decl['make']} SCALE={self.r.scale}"

    def describe(self, commit: str, source: str, grid: Study) -> str:
        r = self.r
        return (
            f"study tuned at commit {commit[:12]} ({source}): tasks {','.join(r.tasks)}, norms "
            f"{','.join(r.norms)}; lr factors {', '.join(f'{f:g}' for f in sorted({1.0, *r.factors}))}; "
            f"selection seed {r.select_seed}, evaluation seeds {','.join(map(str, r.eval_seeds))}"
        )

    def plan_lines(self, grid: Study) -> list[str]:
        lines = planning.lines(
            grid,
            reference=cost_reference(self.r),
            presets=presets(self.r),
            shared_note="with the fixed-lr study (its preset-lr runs)",
        )
        return lines + grid.choice_lines()  # after lines(), whose jobs() sets the choices

    def reported(self, runs: list, task_commits: dict, commit: str) -> list:
        return runs  # the selection seed's lr grid is part of what the tuned report shows

    def write_report(self, runs: list) -> dict:
        from .tuned import write_tuned_report

        r = self.r
        return write_tuned_report(
            runs,
            r.out,
            r.factors,
            figures=r.figures,
            extend=r.extend,
            member=Path(r.record_out or r.out),
        )


def kind_of(r: Request) -> Fixed:
    return Tuned(r) if r.kind == "tuned" else Fixed(r)
