"""What the repository tracks: no machine's environment. A link committed from a git worktree
(``.venv -> /work/main/.venv``) replaces the real environment of every checkout that pulls it, and
git removes an ignored directory to put a tracked file in its place."""

import subprocess

import pytest

from helpers import REPO

ENVIRONMENTS = (".venv", ".venv-fairseq")


def tracked() -> list[tuple[str, str]]:
    """(mode, path) of every file the index holds."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [(line.split()[0], line.split("\t", 1)[1]) for line in out.splitlines()]


def test_no_environment_is_tracked():
    envs = [p for _, p in tracked() if p.split("/")[0] in ENVIRONMENTS]
    assert not envs, f"tracked environment paths (git rm --cached them): {envs[:5]}"


def test_tracked_links_stay_inside_the_repository():
    outside = []
    for mode, path in tracked():
        if mode != "120000":
            continue
        link = REPO / path
        if not link.is_symlink():
            continue  # the index's link is not checked out here
        target = (link.parent / link.readlink()).resolve()
        if not target.is_relative_to(REPO.resolve()):
            outside.append(f"{path} -> {link.readlink()}")
    assert not outside, f"tracked links that point outside the repository: {outside}"


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_an_environment_is_ignored_as_a_link_too(name):
    out = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", name], cwd=REPO, capture_output=True
    )
    assert out.returncode == 0, f"{name} is not ignored as a plain path (.gitignore: '{name}')"
