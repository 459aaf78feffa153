"""Files written atomically (temp file + rename, so a kill at any moment leaves either the old or
the new version, never half of one) and read back safely (YAML with the safe loader only): the
one place run directories, data caches, task outputs and reports write through."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import yaml


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(
            tmp, 0o644
        )  # mkstemp's 0600 would hide results from other users of a shared cluster
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def whole_dir(dest: Path) -> Iterator[Path]:
    """A folder written in a hidden sibling (no reader takes it for ``dest``) and renamed into
    place when the block ends without an error: ``dest`` holds the old folder or the whole new one,
    never a part of it. What a killed block left behind is removed by the next one."""
    dest = Path(dest)
    part, old = (dest.parent / f".{dest.name}.{kind}" for kind in ("partial", "old"))
    for leftover in (part, old):
        shutil.rmtree(leftover, ignore_errors=True)
    part.mkdir(parents=True)
    yield part
    if dest.exists():
        dest.rename(old)
    part.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


def remove_empty_dirs(path: Path, stop: Path) -> None:
    """Remove ``path`` and its parents up to (not including) ``stop`` while they are empty: the
    folders Hydra made for a job refused on bad input."""
    # normalized: a path through ".." (a refused run name) is cleaned up where it really lies
    path, stop = (Path(os.path.abspath(p)) for p in (path, stop))
    while path != stop and stop in path.parents:
        try:
            path.rmdir()  # only an empty folder
        except OSError:
            return
        path = path.parent


def write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(
        path, (json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n").encode()
    )


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


class _NoAliasDumper(yaml.SafeDumper):
    """Writes a repeated object out again instead of as an anchor and alias: run-directory YAML
    has none, so a reader can refuse them."""

    def ignore_aliases(self, data) -> bool:
        return True


def write_yaml(path: Path, obj: Any) -> None:
    text = yaml.dump(obj, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=False)
    atomic_write_bytes(path, text.encode())


class RefusedYaml(ValueError):
    """Run-directory YAML that normlab refuses to load (anchors and aliases); names file and line."""


def read_yaml(path: Path) -> Any:
    """Safe YAML without anchors and aliases: normlab never writes them, and a small file of nested
    aliases expands to gigabytes when loaded (ValueError naming the file and line)."""
    text = Path(path).read_text()
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            line = event.start_mark.line + 1
            raise RefusedYaml(
                f"{path}:{line}: YAML anchors and aliases are refused in a run directory (normlab "
                "writes none); write the value out, or train the run again"
            )
    return yaml.safe_load(text)


def read_yaml_or(path: Path, error: type) -> Any:
    """The YAML document in ``path``; ``error`` with one line naming the file (and the line, for a
    syntax error) when it cannot be read: what a user's config file gets instead of a traceback."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise error(f"{path}: cannot read it ({e.strerror})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise error(f"{path}:{line}: not YAML ({getattr(e, 'problem', e)})") from None
