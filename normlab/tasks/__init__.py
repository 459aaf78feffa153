"""TASKS: task key -> "module:Class". Adding a task: one module plus normlab/configs/task/<key>.yaml (and preset/<key>/<scale>.yaml)."""

from __future__ import annotations

import importlib

TASKS: dict[str, str] = {
    "rt": "normlab.tasks.classification:RTTask",
    "sst2": "normlab.tasks.classification:SST2Task",
    "imdb": "normlab.tasks.classification:IMDBTask",
    "synthetic_cls": "normlab.tasks.classification:SyntheticTask",
    "iwslt14_de_en": "normlab.tasks.translation:IWSLT14DeEnTask",
    "iwslt15_en_vi": "normlab.tasks.translation:IWSLT15EnViTask",
    "enwik8": "normlab.tasks.lm:Enwik8Task",
    "mnist": "normlab.tasks.mnist:MNISTTask",
    "ptb": "normlab.tasks.parsing:PTBParsingTask",
}


def get_task_class(name: str):
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(sorted(TASKS))}")
    module, cls = TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)
