"""Where the configs live and which keys are runtime-only: constants that the config loader
(config.py), the messages that point at a fix (hints.py) and the run-folder naming (setting.py)
all need. A leaf module (it imports nothing of normlab), so none of them imports another for them."""

from pathlib import Path

# Inside the package, so a wheel (`pip install .`) carries the configs with the code.
CONFIGS = Path(__file__).resolve().parent / "configs"

# Keys that may differ between an interrupted run and its resumption.
# seed_role labels a run for the reports (normlab.study.roles); it changes nothing it computes.
RUNTIME_KEYS = (
    "paths",
    "logger",
    "device",
    "progress",
    "threads",
    "compile",
    "seed_role",
    "resume",
)

# Keys that describe a run and never change what it computes (how reports show its norm): a
# resumed run or a run folder's name ignores them, so editing a label retrains nothing.
DESCRIPTIVE_KEYS = ("norm.display",)
