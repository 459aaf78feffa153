"""Where the configs live, how a job's config is composed from them, and which keys are
runtime-only: what the config loader (config.py), the messages that point at a fix (hints.py),
the run-folder naming (setting.py) and the search (tune.py) all need. A leaf module (it imports
nothing of normlab), so none of them imports another for them."""

from pathlib import Path

# Inside the package, so a wheel (`pip install .`) carries the configs with the code.
CONFIGS = Path(__file__).resolve().parent / "configs"


def compose(overrides: list[str], hydra_node: bool = False, configs: Path = CONFIGS):
    """configs/train.yaml composed with ``overrides``, as normlab-train would (``hydra_node``: with
    the hydra section, whose run.dir names the run folder). Inside a running Hydra app (a job, a
    sweep) its own search path is used, so a user's config folders count too. ``configs``: another
    checkout's config folder (a study's pinned worktree)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return hydra_compose("train", overrides=overrides, return_hydra_config=hydra_node)
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        return hydra_compose("train", overrides=overrides, return_hydra_config=hydra_node)


# Keys that may differ between an interrupted run and its resumption.
# seed_role labels a run for the reports (normlab.report.roles), declaration the study it belongs
# to (normlab.study.declaration); neither changes anything it computes.
RUNTIME_KEYS = (
    "paths",
    "logger",
    "device",
    "progress",
    "threads",
    "compile",
    "seed_role",
    "declaration",
    "resume",
)

# Keys the seeds of one table cell may differ in without the cell mixing two configs.
CELL_FREE_KEYS = ("seed", "name", *RUNTIME_KEYS)

# Keys that describe a run and never change what it computes (how reports show its norm): a
# resumed run or a run folder's name ignores them, so editing a label retrains nothing.
DESCRIPTIVE_KEYS = ("norm.display",)

# Nested keys that cannot change a result though they sit among keys that do: how often extra
# checkpoints are written between evaluations (writing one draws no random number, moves no
# batch and changes no state; a run with another value is bitwise equal, tests/test_resume.py).
# A run folder's name, a resumed run's same-experiment check and a table cell ignore them, so a
# run restarted with another value resumes its own folder.
RESULT_FREE_KEYS = ("task.train.checkpoint_every",)

# The nested keys every "same experiment?" question ignores.
IGNORED_KEYS = (*DESCRIPTIVE_KEYS, *RESULT_FREE_KEYS)


def without(config: dict, dotted: tuple = IGNORED_KEYS) -> dict:
    """A copy of ``config`` without the nested ``dotted`` keys (the others shared, not copied)."""
    out = dict(config)
    for key in dotted:
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            if not isinstance(node.get(p), dict):
                break
            node[p] = dict(node[p])
            node = node[p]
        else:
            node.pop(leaf, None)
    return out
