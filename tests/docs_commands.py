"""The shell commands of the README and the guides, and how each one is checked.

Every command in a ```bash block of README.md or docs/*.md matches exactly one rule of RULES;
a command no rule names fails tests/test_docs_commands.py, so a new command in the docs gets a
check when it is written. A rule's checks:

- ``compose``: its normlab-train overrides compose and pass the job checks, every sweep point;
- ``run``: it runs at smoke scale in a scratch folder (``make test-docs``, slow);
- ``flags``: the program exists and every ``--flag`` it is given is in its ``--help``;
- ``make``: the target exists and every ``VAR=value`` it is given is read by the Makefile;
- ``tested``: a named test runs it (the test must exist);
- ``ci``: ``.ci/run`` runs it literally;
- ``external``: another program's command (a server, a login, a scheduler), with why.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Command:
    page: str  # relative to the repository
    line: int
    text: str  # continuation lines joined

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def shell_commands(path: Path) -> list[Command]:
    """The commands of the page's bash/sh blocks, comment and blank lines left out."""
    out, lang, pending, start = [], None, "", 0
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if m and lang is None:
            lang = m.group(1) or "text"
            continue
        if line.startswith("```") and lang is not None:
            lang = None
            continue
        if lang not in ("bash", "sh", "shell"):
            continue
        if not pending:
            start = i
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        text, pending = (pending + line).strip(), ""
        if text and not text.startswith("#") and shlex.split(text, comments=True):
            page = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            out.append(Command(str(page), start, " ".join(text.split())))
    return out


def all_commands() -> list[Command]:
    return [c for page in PAGES for c in shell_commands(page)]


@dataclass(frozen=True)
class Rule:
    pattern: str  # a regex matched at the start of the command
    checks: tuple[str, ...]
    note: str = ""  # the test that runs it, or why it is external


SLURM = "a SLURM scheduler: its normlab command is composed by the rule of the line it runs"
RULES = [
    # what a user runs first: .ci/run runs these very lines on a fresh clone
    Rule(r"make (install|test|test-slow|lint|docs)( |$)", ("make", "ci")),
    Rule(r"make demo( |$)", ("make", "run")),
    Rule(r"export NORMLAB_DATA=", ("external",), "sets the data folder (docs/tasks-data.md)"),
    Rule(
        r"source \.venv/bin/activate( |$)",
        ("tested",),
        "tests/test_docs_commands.py::test_the_readme_activates_the_environment_before_its_first_command",
    ),
    Rule(
        r"pip install -e examples/normlab-example|normlab-train .*norm=[\w,]*lpnorm|normlab-report .*lpnorm",
        ("tested",),
        "tests/test_extend.py::test_a_norm_from_the_users_own_package_runs_everywhere (and make example)",
    ),
    # GPU, paper scale and whole grids: composed here, trained where they belong
    Rule(r"normlab-train .*scale=paper", ("compose",), "paper scale: a GPU's job"),
    Rule(r"normlab-train .*experiment=", ("compose",), "a whole table's grid"),
    Rule(r"normlab-train ", ("compose", "run")),
    Rule(r"normlab-tune ", ("compose", "flags", "run")),
    Rule(
        r"normlab-report .*--claims ",
        ("flags", "tested"),
        "tests/test_compare.py::test_a_claims_file_is_the_primary_family_and_the_comparisons_become_exploratory",
    ),
    Rule(r"normlab-report ", ("flags", "run")),
    Rule(r"normlab-eval .*device=cuda", ("flags",), "a GPU's job"),
    Rule(r"normlab-eval ", ("flags", "run")),
    Rule(r"normlab-export ", ("flags", "run")),
    Rule(
        r"normlab-data fetch ",
        ("flags", "tested"),
        "tests/test_datacli.py::test_fetch_prints_what_the_loaders_errors_quote",
    ),
    Rule(
        r"normlab-data check",
        ("flags", "tested"),
        "tests/test_datacli.py::test_the_reference_copy_checks_out",
    ),
    Rule(r"normlab-wandb-dashboard .*--dry-run", ("flags", "run")),
    Rule(
        r"normlab-wandb-dashboard ",
        ("flags", "tested"),
        "tests/test_wandb_dashboard.py::test_cli_dry_run_and_missing_key (saving needs a key)",
    ),
    Rule(
        r"torchrun --standalone",
        ("compose", "tested"),
        "tests/test_distributed.py::test_two_processes_follow_the_one_process_curve",
    ),
    Rule(r"torchrun |srun torchrun ", ("compose",), "several machines"),
    Rule(
        r"make reproduce-(table|prenorm)\b",
        ("make", "tested"),
        "tests/test_reproduce.py::test_smoke_reproduction_writes_every_output_and_shows_divergence",
    ),
    Rule(
        r"make reproduce-placement\b",
        ("make", "tested"),
        "tests/test_study.py::test_the_placement_study_trains_and_reports_a_row_per_placement",
    ),
    Rule(
        r"make reproduce-tuned\b",
        ("make", "tested"),
        "tests/test_tuned.py::test_tuned_comparison_end_to_end_and_continued_from_copies",
    ),
    Rule(
        r"make grid-(start|status|stop)\b",
        ("make", "tested"),
        "tests/test_study.py::test_grid_sh_runs_a_slice_detached_and_stops_it_cleanly",
    ),
    Rule(
        r"(srun [-=\w]+ )?(\.venv/bin/)?python (scripts/reproduce\.py|-m normlab\.campaigns\.xu2019) ",
        ("flags", "tested"),
        "tests/test_study.py::test_fixed_study_in_slices_stopped_by_signals_and_budget",
    ),
    Rule(
        r"python scripts/bench_gpu\.py",
        ("flags", "tested"),
        "tests/test_bench_gpu.py::test_bench_gpu_quick_writes_every_table",
    ),
    Rule(
        r"scripts/commit_results\.sh ",
        ("tested",),
        "tests/test_commit_results.py::test_staged_copies_are_committed_as_they_come_and_nothing_new_is_not_an_error",
    ),
    Rule(
        r"make (fairseq-env|test-fairseq|compare-fairseq)\b",
        ("make", "tested"),
        "tests/fairseq/test_compare.py::test_fairseq_valid_loss_is_close_to_normlabs_own_trainer",
    ),
    Rule(
        r"make bench-fairseq( |$)", ("make",), "a benchmark: its numbers are committed, not tested"
    ),
    Rule(
        r"\.venv-fairseq/bin/fairseq-train ",
        ("tested",),
        "tests/fairseq/test_plugin.py::test_short_fairseq_train_runs_with_adanorm",
    ),
    Rule(
        r"\.venv-fairseq/bin/python scripts/fairseq_init_diff\.py ",
        ("tested",),
        "tests/fairseq/test_compare.py::test_fairseq_valid_loss_is_close_to_normlabs_own_trainer",
    ),
    Rule(r"tensorboard --logdir", ("external",), "TensorBoard's server"),
    Rule(r"wandb login", ("external",), "wandb's own login"),
    Rule(r"HOST0=|cd \$SLURM|git add results/staging", ("external",), SLURM),
]


def rule_for(cmd: Command) -> list[Rule]:
    """Every rule whose pattern matches; the first is the one that applies."""
    return [r for r in RULES if re.match(r.pattern, cmd.text)]


def train_args(cmd: Command) -> list[str]:
    """The normlab-train arguments of a command (also through torchrun or normlab-tune's ``--``)."""
    argv = cmd.argv
    for marker in ("normlab.train", "normlab-train"):
        if marker in argv:
            return argv[argv.index(marker) + 1 :]
    if argv[0] == "normlab-tune":
        return argv[argv.index("--") + 1 :] if "--" in argv else []
    raise ValueError(f"{cmd.id}: no normlab-train arguments in {cmd.text!r}")


def smoke(cmd: Command) -> str:
    """The command as ``make test-docs`` runs it: at smoke scale, 2 trials a search, no bars."""
    text = re.sub(r"\bscale=(mini|paper)\b", "scale=smoke", cmd.text)
    text = text.replace("runs/mini/", "runs/smoke/")
    argv0 = cmd.argv[0]
    if argv0 == "normlab-tune":
        text = re.sub(r"--trials \d+ ", "", text).replace(
            "normlab-tune ", "normlab-tune --trials 2 ", 1
        )
    if argv0 in ("normlab-train", "normlab-tune"):
        text = text.split(" # ")[0]
        text += (" scale=smoke" if "scale=smoke" not in text else "") + " progress=false"
    return text
