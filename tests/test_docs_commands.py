"""The commands the README and the guides show work as written (the rules: tests/docs_commands.py).

The fast checks compose every normlab-train command's config (each sweep point, with the job
checks a run makes before it writes anything), read every program's --help for the flags a page
gives it, and read the Makefile for the targets and variables a page uses. ``make test-docs``
(slow) also runs each page's runnable commands, in order, at smoke scale in a scratch folder.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from docs_commands import REPO, RULES, all_commands, rule_for, smoke, train_args
from helpers import TEST_CACHE, compose_cfg

COMMANDS = all_commands()
BIN = Path(sys.executable).parent


def _with(check: str):
    return [c for c in COMMANDS if rule_for(c) and check in rule_for(c)[0].checks]


def test_every_command_in_the_docs_has_a_rule_and_every_rule_a_command():
    assert len(COMMANDS) > 70, "the docs' shell blocks were not found"
    unchecked = [f"{c.id}: {c.text}" for c in COMMANDS if not rule_for(c)]
    assert not unchecked, "commands no rule of tests/docs_commands.py checks:\n" + "\n".join(
        unchecked
    )
    unused = [r.pattern for r in RULES if not any(rule_for(c)[0] is r for c in COMMANDS)]
    assert not unused, f"rules that check no command of the docs: {unused}"


def test_the_docs_commands_are_parsed_as_a_shell_reads_them(tmp_path):
    from docs_commands import shell_commands

    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 1\n```\ntext\n```bash\n# a comment\nnormlab-train a=1 \\\n    b=2   # why\n\n"
        "make demo\n```\n```\nnot shell\n```\n"
    )
    cmds = shell_commands(page)
    assert [(c.line, c.argv) for c in cmds] == [
        (7, ["normlab-train", "a=1", "b=2"]),
        (10, ["make", "demo"]),
    ]


def _points(args: list[str]) -> list[list[str]]:
    """Every point of a Hydra sweep (``a=1,2 b=x,y``) as plain overrides; hydra.* left out."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(
        [a for a in args if "=" in a and not a.startswith(("hydra", "--"))]
    )
    axes = []
    for o in parsed:
        key = o.get_key_element()
        if o.is_sweep_override():
            axes.append([f"{key}={v}" for v in o.sweep_string_iterator()])
        else:
            axes.append([f"{key}={o.get_value_element_as_str()}"])
    return [list(p) for p in itertools.product(*axes)]


@pytest.mark.parametrize("cmd", _with("compose"), ids=lambda c: c.id)
def test_each_train_command_composes_and_passes_the_job_checks(cmd, tmp_path):
    from normlab.config import load_job

    points = _points(train_args(cmd))
    assert points and len(points) <= 64, points
    for point in points:
        load_job(compose_cfg(point, tmp_path), point)


@cache
def _help(program: str) -> str:
    if program.endswith(".py"):
        argv = [sys.executable, str(REPO / program), "--help"]
    elif program.startswith("-m "):
        argv = [sys.executable, "-m", program[3:], "--help"]
    else:
        argv = [str(BIN / program), "--help"]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, f"{' '.join(argv)} exited {out.returncode}: {out.stderr[-800:]}"
    return out.stdout


@pytest.mark.parametrize("cmd", _with("flags"), ids=lambda c: c.id)
def test_each_flag_a_page_gives_a_program_is_in_its_help(cmd):
    argv = cmd.argv
    i = next(i for i, a in enumerate(argv) if a.startswith(("normlab-", "-m")) or a.endswith(".py"))
    program, rest = argv[i], argv[i + 1 :]
    if program == "-m":  # python -m module
        program, rest = f"-m {rest[0]}", rest[1:]
    rest = rest[: rest.index("--")] if "--" in rest else rest
    flags = {a.split("=")[0] for a in rest if a.startswith("--")}
    missing = [f for f in sorted(flags) if not re.search(rf"{re.escape(f)}\b", _help(program))]
    assert not missing, f"{cmd.id}: {program} --help has no {missing}"


def _makefile_vars() -> set[str]:
    text = (REPO / "Makefile").read_text()
    return set(re.findall(r"\$\((\w+)\)", text)) | set(re.findall(r"^(\w+) \?=", text, re.M))


@pytest.mark.parametrize("cmd", _with("make"), ids=lambda c: c.id)
def test_each_make_command_names_a_target_and_variables_the_makefile_reads(cmd):
    argv = cmd.argv
    text = (REPO / "Makefile").read_text()
    targets = [a for a in argv[1:] if "=" not in a]
    assigned = [a.split("=")[0] for a in argv[1:] if "=" in a and not a.startswith("-")]
    assert "--" not in argv, (
        f"{cmd.id}: make takes no '--': its arguments after it are make variables"
    )
    for t in targets:
        assert re.search(rf"^{re.escape(t)}:", text, re.M), (
            f"{cmd.id}: the Makefile has no target {t}"
        )
    unread = [v for v in assigned if v not in _makefile_vars()]
    assert not unread, f"{cmd.id}: the Makefile never reads {unread}, so they would do nothing"
    out = subprocess.run(["make", "-n", *argv[1:]], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, f"{cmd.id}: make -n failed: {out.stderr[-500:]}"


@pytest.mark.parametrize("cmd", _with("tested") + _with("external"), ids=lambda c: c.id)
def test_each_command_another_test_runs_names_a_test_that_exists(cmd):
    note = rule_for(cmd)[0].note
    assert note, f"{cmd.id}: its rule says neither which test runs it nor why it is not run"
    if "::" in note:
        path, name = note.split(" ")[0].split("::")
        assert re.search(rf"^def {name}\(", (REPO / path).read_text(), re.M), f"{cmd.id}: no {note}"


def test_ci_runs_the_set_up_and_test_commands_as_written():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    for cmd in _with("ci"):
        assert cmd.argv and " ".join(cmd.argv) in ci, f"{cmd.id}: .ci/run does not run {cmd.text!r}"


def test_the_readme_activates_the_environment_before_its_first_command():
    """`make install` then the README's commands, as written, in a new shell whose PATH has no
    .venv: its first normlab command must find the installed programs."""
    from docs_commands import shell_commands

    cmds = [" ".join(c.argv) for c in shell_commands(REPO / "README.md")]
    first = next(i for i, c in enumerate(cmds) if c.startswith("normlab-"))
    assert "source .venv/bin/activate" in cmds[:first], cmds[: first + 1]
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    env = {**os.environ, "PATH": path}
    env.pop("VIRTUAL_ENV", None)
    out = subprocess.run(
        [
            "bash",
            "-c",
            "source .venv/bin/activate && command -v normlab-train && normlab-train --version",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == str(REPO / ".venv" / "bin" / "normlab-train")


def _runnable_pages() -> dict[str, list]:
    pages: dict[str, list] = {}
    for c in _with("run"):
        pages.setdefault(c.page, []).append(c)
    return pages


# what a page's commands read but do not train themselves
PRELUDE = {
    "docs/evaluate-export.md": "normlab-train -m task=rt,iwslt14_de_en norm=adanorm,layernorm seed=1 "
    "scale=smoke progress=false",
}


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(_runnable_pages()))
def test_each_pages_commands_run_at_smoke_scale(page, tmp_path, data_dir):
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "NORMLAB_DATA": str(data_dir),
        "NORMLAB_CACHE": str(TEST_CACHE),
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
    }
    lines = ([PRELUDE[page]] if page in PRELUDE else []) + [
        smoke(c)
        if c.argv[:2] != ["make", "demo"]
        else f"make -C {REPO} demo DEMO_ROOT=$PWD/runs/demo"
        for c in _runnable_pages()[page]
    ]
    for line in lines:
        out = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        assert out.returncode == 0, (
            f"{page}: {line!r} exited {out.returncode}:\n{out.stderr[-1500:]}"
        )
