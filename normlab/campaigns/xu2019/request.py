"""What a driver session is asked to do: its command line, checked and resolved into a ``Request``
(the study's declaration, its grid's tasks, norms, seeds and roles, where its runs and results go),
so that nothing below the command line reads an argparse namespace."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ...report import record as provenance
from ...report import roles
from ...study.staging import staging_dir
from .paper_tables import TABLES
from .protocol import settings
from .studies import DRIVER, STUDIES, declaration_file, out_folder

USAGE = f"{DRIVER} [--study fixed|prenorm|placement|tuned] [options] [-- overrides]"
ABOUT = f"""Train what is missing of one of the campaign's studies (normlab/campaigns/xu2019/studies.py), then
write its results folder:

    {DRIVER} --scale mini --jobs 2 --budget-min 110            # the fixed-lr grid
    {DRIVER} --study prenorm --plan                            # what is left, the hours and disk
    {DRIVER} --study tuned --budget-min 110                     # each norm at its own lr
    {DRIVER} --study fixed --report-only                        # the tables from the committed copies

The study is pinned to one git commit (its staged copies', a sibling study's, --commit, else a clean
HEAD) and trained from a clean worktree of it, in slices: --budget-min starts no job after that many
minutes, SIGTERM/SIGINT stop cleanly, a restart never re-trains a finished run. Each finished run is
copied to results/staging/<folder>/runs at once; when the study is complete the copies replace the
reported ones and the tables are written. Exit status: 0 (also when a budget or a signal ended the
slice: it says what is left), 1 when a run failed, 2 when the study cannot be pinned or the
command line is wrong."""


@dataclass
class Request:
    study: str
    scale: str
    tasks: list[str]
    norms: list[str]
    seeds: list[int]
    roles: dict  # seed -> selection | evaluation, as the runs record it
    seed_lists: dict  # {"selection": [...], "evaluation": [...]}
    root: Path  # the run root; the runs go to <root>/<commit[:12]>/
    out: Path
    jobs: int
    argv: Optional[list] = None
    variants: list = field(default_factory=lambda: [[]])
    overrides: list[str] = field(default_factory=list)
    record_out: Optional[str] = None
    commit: Optional[str] = None
    working_tree: bool = False
    discard_staging: Optional[Path] = None
    budget_min: Optional[float] = None
    plan: bool = False
    report_only: bool = False
    figures: bool = True
    factors: list[float] = field(default_factory=list)  # tuned: the lr grid's factors
    extend: int = 0  # tuned: how far the grid widens past an edge choice
    # the primary study: add seeds to the norms of unresolved primary rows, up to max_seeds
    until_resolved: bool = False
    max_seeds: int = 0
    # a confirmatory study's declaration (normlab.study.declaration): its tasks, norms, seeds and
    # each norm's own lr; every run records its hash
    declaration: Optional[object] = None
    lrs: dict = field(default_factory=dict)  # (task, norm) -> lr

    @property
    def run_name(self) -> str:
        return self.declaration["study"] if self.declaration else self.decl["name"]

    @property
    def decl(self) -> dict:
        return STUDIES[self.study]

    @property
    def kind(self) -> str:
        return self.decl["kind"]

    @property
    def select_seed(self) -> int:
        return self.seed_lists["selection"][0]

    @property
    def eval_seeds(self) -> list[int]:
        return self.seed_lists["evaluation"]

    def study_args(self, commit: str, dirty: bool, code: Optional[Path]) -> dict:
        """What every kind's grid (normlab.study.grid.Study) takes from the request: where its runs,
        copies and committed copies are, its commit and checkout, the seeds' roles, jobs at a time."""
        return dict(
            scale=self.scale,
            root=self.root,
            copies=staging_dir(self.out) / "runs",
            commit=commit,
            dirty=dirty,
            code=code,
            roles=self.roles,
            jobs_n=self.jobs,
            committed=self.out / "runs",
        )


def _csv(s: Optional[str]) -> list[str]:
    return [x.strip() for x in (s or "").split(",") if x.strip()]


def _ints(s: Optional[str]) -> list[int]:
    return [int(x) for x in _csv(s)]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=DRIVER,
        usage=USAGE,
        description=ABOUT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arg = p.add_argument
    arg("--study", default="fixed", choices=sorted(STUDIES), help="which study (default fixed)")
    arg("--scale", default="mini", help="smoke | mini | paper (default mini)")
    arg("--tasks", default=None, help="comma-separated task keys (default: the study's)")
    arg("--norms", default=None, help="only these norms (default: the study's, or its tables')")
    arg("--seeds", default=None, help="fixed kinds: the seeds (default: the evaluation seeds)")
    arg("--selection-seeds", default=None, help="override normlab/configs/study/seeds.yaml's")
    arg("--evaluation-seeds", default=None, help="override normlab/configs/study/seeds.yaml's")
    arg(
        "--tables",
        default=",".join(TABLES),
        help=f"fixed kinds: which tables' rows ({','.join(TABLES)})",
    )
    arg("--search", default="lr_grid", help="tuned: the hparams_search preset with the lr factors")
    arg(
        "--extend",
        type=int,
        default=None,
        help="tuned: widen the grid by at most this many 2x "
        "steps past an edge choice (default: the results' own, from their reproduce.json)",
    )
    arg("--jobs", type=int, default=None, help="parallel jobs (default: one per core; 1 on a GPU)")
    arg("--root", type=Path, default=None, help="run root (default ./runs)")
    arg("--out", type=Path, default=None, help="results folder (default: results/<the study's>)")
    arg(provenance.RECORD_OUT, default=None, help=provenance.RECORD_OUT_HELP)
    arg(
        "--commit",
        default=None,
        help="train at this commit (default: the staged copies', else HEAD)",
    )
    arg(
        "--working-tree",
        action="store_true",
        help="train from this checkout as it is, "
        "uncommitted changes included (development and tests; reproduce.json says so)",
    )
    arg(
        "--discard-staging",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="delete this study's staged copies first (name the folder: results/staging/<folder>)",
    )
    arg("--budget-min", type=float, default=None, help="start no job after this many minutes")
    arg("--plan", action="store_true", help="print the runs, what is done, the hours and disk left")
    arg(
        "--report-only",
        "--no-train",
        dest="report_only",
        action="store_true",
        help="re-write the report from <out>/runs (the committed copies); nothing is trained",
    )
    arg(
        "--until-resolved",
        action="store_true",
        help="the primary study: after each look, add the next look's seeds (claims.yaml "
        "sequential) to the norms of the primary rows still unresolved, until none is or "
        "--max-seeds is reached",
    )
    arg(
        "--max-seeds",
        type=int,
        default=None,
        help="with --until-resolved: stop adding at this many seeds (default and at most: "
        "claims.yaml sequential max_seeds)",
    )
    arg(
        "--declaration",
        type=Path,
        default=None,
        metavar="FILE",
        help="fixed kinds: train the confirmatory study FILE declares (its tasks, norms, seeds and "
        "lrs; normlab/study/declaration.py); refused once its runs record another hash",
    )
    arg("--no-figures", action="store_true")
    arg("overrides", nargs="*", help="extra Hydra overrides for every job (after --)")
    return p


def _declaration(a, p: argparse.ArgumentParser):
    """The declaration --declaration names, checked before anything is written; one line and exit
    2 when it cannot be used."""
    from ...norms import NORMS
    from ...study.declaration import DeclarationError, load
    from ...tasks import TASKS
    from .findings import CLAIMS

    if STUDIES[a.study]["kind"] != "fixed" or a.until_resolved or a.seeds or a.tasks or a.norms:
        p.error("--declaration: the file names the tasks, norms and seeds (a fixed kind's study)")
    try:
        return load(a.declaration, TASKS, NORMS, {c.key for c in CLAIMS})
    except DeclarationError as e:
        print(f"{DRIVER}: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def parse(argv: Optional[list] = None) -> Request:
    p = parser()
    a = p.parse_args(argv)
    decl = STUDIES[a.study]
    if a.declaration is None and (own := declaration_file(a.study)) is not None:
        a.declaration = own.relative_to(Path.cwd()) if own.is_relative_to(Path.cwd()) else own
    declared = _declaration(a, p) if a.declaration else None
    if declared is not None:
        first = declared["seeds"][: declared["looks"][0]]
        a.seeds, a.evaluation_seeds = (
            ",".join(map(str, first)),
            ",".join(map(str, declared["seeds"])),
        )
        a.tasks, a.norms = ",".join(declared["tasks"]), None
        a.out = a.out or Path.cwd() / "results" / f"{a.scale}-{declared['study']}"
    tuned = decl["kind"] == "tuned"
    out = (a.out or Path.cwd() / "results" / out_folder(a.study, a.scale)).resolve()
    # a tuned grid keeps its seeds' roles across sessions (its reproduce.json), as its widening rule
    recorded = ((provenance.read(out).get("grid") or {}).get("seed_roles") or {}) if tuned else {}
    sel = _ints(a.selection_seeds) or recorded.get("selection") or roles.selection_seeds()
    ev = _ints(a.evaluation_seeds) or recorded.get("evaluation") or roles.evaluation_seeds()
    if decl.get("evaluation") is False:  # a selection-only study: it chooses, it reports nothing
        if a.evaluation_seeds:
            p.error(f"--evaluation-seeds: study {a.study} trains its selection seed only")
        ev = []
    if tuned and a.seeds:
        p.error(
            "--seeds: the tuned study trains its selection seed, then its evaluation seeds; "
            "name them with --selection-seeds / --evaluation-seeds"
        )
    if tuned and a.overrides:
        p.error(
            "overrides: the tuned study trains every job at its task's preset but for the lr; "
            "it takes no extra overrides"
        )
    # a fixed study may declare fewer evaluation seeds than seeds.yaml's (studies.py: placement)
    seeds = [sel[0], *ev] if tuned else (_ints(a.seeds) or list(decl.get("seeds") or ev))
    try:
        seed_roles = {s: roles.role_for_seed(s, sel, ev) for s in seeds}
    except ValueError as e:
        p.error(str(e))
    unknown = [t for t in _csv(a.tables) if t not in TABLES]
    if unknown:
        p.error(f"unknown table(s) {unknown}; valid: {', '.join(TABLES)}")
    norms = list(
        decl.get("norms") or dict.fromkeys(n for t in _csv(a.tables) for n in TABLES[t][1])
    )
    if a.norms:
        bad = [n for n in _csv(a.norms) if n not in norms]
        if bad:
            of = f"study {a.study}" if decl.get("norms") else f"the tables {a.tables}"
            p.error(f"norm(s) {bad} are not in {of}; its norms: {', '.join(norms)}")
        norms = [n for n in norms if n in _csv(a.norms)]
    if declared is not None:
        norms = list(declared["norms"])
    if "/" in a.scale or not (roles.CONFIGS / "scale" / f"{a.scale}.yaml").exists():
        scales = sorted(f.stem for f in (roles.CONFIGS / "scale").glob("*.yaml"))
        p.error(f"--scale {a.scale}: no such scale; scales: {', '.join(scales)}")
    if a.budget_min is not None and a.budget_min < 0:
        p.error(f"--budget-min {a.budget_min:g}: minutes after which no job starts, at least 0")
    if a.jobs is not None and a.jobs < 1:
        p.error(f"--jobs {a.jobs}: jobs at a time, at least 1")
    if a.root is not None and "'" in str(a.root):
        p.error(f"--root {a.root}: a run root with a quote cannot be passed to the jobs' overrides")
    q = settings()["sequential"]
    max_seeds = int(q["max_seeds"]) if a.max_seeds is None else a.max_seeds
    if a.max_seeds is not None and not a.until_resolved:
        p.error("--max-seeds: only with --until-resolved")
    if a.until_resolved and a.study != settings()["primary"]:
        p.error(
            f"--until-resolved: seeds are added to the primary study's rows only "
            f"(--study {settings()['primary']}, normlab/configs/study/claims.yaml)"
        )
    if a.until_resolved and not int(q["first"]) <= max_seeds <= int(q["max_seeds"]):
        p.error(
            f"--max-seeds {max_seeds}: between the first look's {q['first']} seeds and the "
            f"declared max_seeds {q['max_seeds']} (more looks than declared would void the test)"
        )
    if a.until_resolved and len(seeds) != int(q["first"]):
        p.error(
            f"--until-resolved: the first look is {q['first']} seeds (claims.yaml sequential); "
            f"this study has {len(seeds)}"
        )
    tasks = _csv(a.tasks) or list(decl["tasks"])
    from ...tasks import TASKS

    missing = [t for t in tasks if t not in TASKS]
    if missing:
        p.error(f"task(s) {missing} do not exist (yet); available: {', '.join(sorted(TASKS))}")
    jobs = a.jobs
    if jobs is None:
        import torch

        jobs = 1 if torch.cuda.is_available() else (os.cpu_count() or 1)
    r = Request(
        study=a.study,
        scale=a.scale,
        tasks=tasks,
        norms=norms,
        seeds=seeds,
        roles=seed_roles,
        seed_lists={"selection": sel, "evaluation": ev},
        root=(a.root or Path.cwd() / "runs").resolve(),
        out=out,
        jobs=jobs,
        argv=argv,
        variants=[list(v) for v in decl.get("variants", [()])],
        overrides=[
            *decl["overrides"],
            *a.overrides,
            *([f"declaration={declared.hash}"] if declared is not None else []),
        ],
        record_out=a.record_out,
        commit=a.commit,
        working_tree=a.working_tree,
        discard_staging=a.discard_staging,
        budget_min=a.budget_min,
        plan=a.plan,
        report_only=a.report_only,
        figures=not a.no_figures,
        until_resolved=a.until_resolved,
        max_seeds=max_seeds,
        declaration=declared,
        lrs={(t, n): declared.lr(t, n) for t in tasks for n in norms} if declared else {},
    )
    if tuned:
        from ...search_space import load_search
        from .tuned import recorded_extend

        spec = load_search(a.search)["params"]["task.train.lr"]["factor_choices"]
        r.factors = [float(f) for f in spec]
        r.extend = recorded_extend(out) if a.extend is None else a.extend
    return r
