import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_root() -> Path:
    """normlab's one default: $NORMLAB_DATA, else ./data (the tests run from the repository)."""
    return Path(os.environ.get("NORMLAB_DATA") or REPO / "data")


MISSING = (
    "set NORMLAB_DATA to the data folder (../shared/data beside a clone here), or link it as ./data"
)


@pytest.fixture
def data_dir():
    """The real datasets ($NORMLAB_DATA or ./data); tests that need them skip without."""
    root = data_root()
    if not root.is_dir():
        pytest.skip(f"real data not found at {root}: {MISSING}")
    return root


# One trained smoke run per task, with a norm per task so that every norm family is exported and
# evaluated once; "rt_late" evaluates often enough that its best checkpoint is not its last.
SMOKE_RUNS = {
    "rt": ["task=rt", "norm=layernorm"],
    "rt_late": [
        "task=rt",
        "norm=layernorm_simple",
        "task.train.max_steps=24",
        "task.train.eval_every=2",
        "task.train.lr=0.05",
    ],
    "sst2": ["task=sst2", "norm=adanorm"],
    "imdb": ["task=imdb", "norm=rmsnorm"],
    "iwslt14_de_en": ["task=iwslt14_de_en", "norm=adanorm"],
    "iwslt15_en_vi": ["task=iwslt15_en_vi", "norm=layernorm_simple"],
    "enwik8": ["task=enwik8", "norm=dyt"],
    "mnist": ["task=mnist", "norm=detachnorm"],
    "ptb": ["task=ptb", "norm=layernorm"],
}


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory):
    """{key: (summary, run_dir)} of SMOKE_RUNS, trained in-process at scale=smoke on real data."""
    from helpers import run_job

    root = data_root()
    if not root.is_dir():
        pytest.skip(f"real data not found at {root}: {MISSING}")
    tmp = tmp_path_factory.mktemp("smoke_runs")
    return {
        key: run_job([*overrides, "scale=smoke", "threads=1"], tmp, root, run_dir=tmp / key)
        for key, overrides in SMOKE_RUNS.items()
    }
