"""``normlab-data``: where each task's data comes from, and whether a data folder holds it.

    normlab-data check [TASK ...]     the md5 of every file the loaders read, against the reference
                                      copy the committed results used (normlab/data/manifest.json)
    normlab-data fetch TASK [--run]   the commands that fetch a task's public data into its folder
                                      (printed; --run runs them where a network exists, then checks)
    normlab-data prepare TASK [...]   prepare a translation task's folder from its public release
                                      (iwslt14_de_en: fairseq's recipe; iwslt15_en_vi: checked copy);
                                      --out defaults to the data root's TASK folder

The data root is $NORMLAB_DATA (default ./data), or --data DIR. Exit status: 0 every file checked
is the reference copy's; 1 a file is missing or differs; 2 bad input (an unknown task).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .commands import version_text
from .data import sources
from .exitcodes import BAD_INPUT, OK

DIFFERS = 1


def _root(arg) -> Path:
    return Path(arg or os.environ.get("NORMLAB_DATA") or "data")


def _tasks(names: list[str], known: list[str]) -> list[str]:
    unknown = [t for t in names if t not in known]
    if unknown:
        raise ValueError(
            f"unknown task {unknown[0]!r}; the tasks with public data: {', '.join(known)}"
        )
    return names


def check(root: Path, names: list[str]) -> int:
    """Print one line per task and one per file that is not the reference copy's; the exit code."""
    tasks = names or sorted(sources.manifest())
    code = OK
    for task in tasks:
        folder = root / task
        if not folder.is_dir():
            print(f"{task}: no folder {folder}; fetch it: normlab-data fetch {task}")
            code = DIFFERS if names else code  # a task asked for by name must be there
            continue
        rows = list(sources.check(task, folder))
        counts = {s: sum(r[1] == s for r in rows) for s in ("ok", "missing", "differs", "extra")}
        bad = counts["missing"] + counts["differs"]
        print(
            f"{task}: {counts['ok']} of {counts['ok'] + bad} files are the reference copy's"
            + "".join(f", {counts[s]} {s}" for s in ("missing", "differs", "extra") if counts[s])
        )
        for rel, state, detail in rows:
            if state != "ok":
                print(f"  {state}: {folder / rel}" + (f" ({detail})" if detail else ""))
        code = DIFFERS if bad else code
    if code == OK:
        print("every file checked is the copy the committed results were trained on")
    else:
        print(
            "a missing or different file: results on this data are not the committed ones "
            "(normlab-data fetch TASK prints how to get the public files)"
        )
    return code


def fetch(root: Path, task: str, run: bool) -> int:
    cmds = sources.commands(task, root)
    if not run:
        print(
            f"# {task}: run these where a network exists (or add --run), then: normlab-data check {task}"
        )
        print("\n".join(cmds))
        return OK
    for c in cmds:
        print(f"+ {c}", flush=True)
        rc = subprocess.run(["bash", "-c", c]).returncode
        if rc:
            print(f"normlab-data: error: exit {rc} from: {c}", file=sys.stderr)
            return rc
    return check(root, [task])


# the tasks whose folder normlab prepares from a public release: task -> its module's main
PREPARE = {"iwslt14_de_en": "prepare_iwslt14", "iwslt15_en_vi": "prepare_iwslt15"}


def prepare(root: Path, task: str, args: list[str]) -> int:
    """Run the task's preparation (normlab.data.prepare_*) with ``args``, into root/task unless
    ``args`` name --out; its own messages and exit status."""
    import importlib

    module = importlib.import_module(f"normlab.data.{PREPARE[task]}")
    out = (
        []
        if any(a == "--out" or a.startswith("--out=") for a in args)
        else ["--out", str(root / task)]
    )
    try:
        module.main([*out, *args])
    except SystemExit as e:  # argparse's and the recipes' own exits
        if e.code in (None, 0):
            return OK
        if isinstance(e.code, int):
            return e.code
        print(f"normlab-data: error: {e.code}", file=sys.stderr)
        return DIFFERS
    return OK


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="normlab-data",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=version_text())
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser(
        "check", help="md5 of the files the loaders read, against the reference copy"
    )
    c.add_argument("tasks", nargs="*", help="task keys (default: every task whose folder exists)")
    c.add_argument("--data", help="the data root (default $NORMLAB_DATA, else ./data)")
    f = sub.add_parser("fetch", help="the commands that fetch a task's public data")
    f.add_argument("tasks", nargs="+", help="task keys")
    f.add_argument("--data", help="the data root (default $NORMLAB_DATA, else ./data)")
    f.add_argument(
        "--run", action="store_true", help="run the commands (needs a network), then check"
    )
    r = sub.add_parser(
        "prepare",
        add_help=False,  # --help after the task is the task's own (its options)
        help="prepare a translation task's folder from its public release",
        description="the task's own options follow it (normlab-data prepare iwslt14_de_en --help)",
    )
    r.add_argument("task", choices=sorted(PREPARE), help="the task")
    r.add_argument("--data", help="the data root (default $NORMLAB_DATA, else ./data)")
    a, rest = p.parse_known_args(argv)
    root = _root(a.data)
    if a.command == "prepare":
        return prepare(root, a.task, rest)
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        tasks = _tasks(a.tasks, sorted(sources.FETCH))
    except ValueError as e:
        print(f"normlab-data: error: {e}", file=sys.stderr)
        return BAD_INPUT
    if a.command == "check":
        return check(root, tasks)
    codes = [fetch(root, t, a.run) for t in tasks]
    return next((c for c in codes if c), OK)


if __name__ == "__main__":
    sys.exit(main())
