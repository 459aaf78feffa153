#!/usr/bin/env python
"""One timed training process for scripts/bench_fairseq.py: normlab-train or fairseq-train, run
through its own command line, with its update step wrapped to record when each update starts
and what its batch holds. After BENCH_UPDATES updates the record is written and the process
ends (no validation, test or checkpoint is timed).

    python scripts/bench_fairseq_worker.py normlab OVERRIDES...        # in .venv
    python scripts/bench_fairseq_worker.py fairseq DATA_BIN FLAGS...   # in .venv-fairseq

Environment: BENCH_T0 (the driver's time.time() just before it started this process: start-up
is measured from it), BENCH_OUT (the JSON record), BENCH_UPDATES, BENCH_PAD (normlab's padding
id), BENCH_BATCHES (optional: a JSON list of batches, each a list of train-pair positions in the
exported order; both systems then train on exactly these, in this order).
"""

from __future__ import annotations

import json
import os
import sys
import time

T0 = float(os.environ["BENCH_T0"])
UPDATES = int(os.environ["BENCH_UPDATES"])
BATCHES = os.environ.get("BENCH_BATCHES")
record = {"starts": [], "target_tokens": [], "real": [], "padded": []}


def note(src, tgt, pad: int) -> None:
    """One update starts: when, and its target tokens and padded elements."""
    record["starts"].append(time.time() - T0)
    record["target_tokens"].append(int(tgt.ne(pad).sum()))
    record["real"].append(int(src.ne(pad).sum() + tgt.ne(pad).sum()))
    record["padded"].append(src.numel() + tgt.numel())
    if len(record["starts"]) > UPDATES:  # the last update's start closes the one before it
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump(record, f)
        os._exit(0)


def fixed_batches() -> list[list[int]]:
    with open(BATCHES) as f:
        return json.load(f)


def run_normlab(overrides: list[str]) -> None:
    from normlab import train
    from normlab.data.batching import LazyBatches
    from normlab.run.trainer import Trainer
    from normlab.tasks.translation import TranslationTask

    pad = int(os.environ["BENCH_PAD"])
    step = Trainer._step

    def timed_step(self, *micro):
        src, _, tgt = micro[0]
        note(src, tgt, pad)
        return step(self, *micro)

    Trainer._step = timed_step
    if BATCHES:
        positions = fixed_batches()

        def given(self, epoch, seed):
            index = self.train_index
            return LazyBatches([index[p] for p in positions], lambda b: self._collate("train", b))

        TranslationTask.train_batches = given
    sys.argv = ["normlab-train", *overrides]
    train.main()


def run_fairseq(argv: list[str]) -> None:
    import numpy as np
    from fairseq import trainer
    from fairseq.data import data_utils
    from fairseq_cli import train

    step = trainer.Trainer.train_step

    def timed_step(self, samples, *args, **kwargs):
        s = samples[0]
        pad = self.task.target_dictionary.pad()
        note(s["net_input"]["src_tokens"], s["target"], pad)
        return step(self, samples, *args, **kwargs)

    trainer.Trainer.train_step = timed_step
    if BATCHES:
        given = [np.array(b, dtype=np.int64) for b in fixed_batches()]
        data_utils.batch_by_size = lambda *a, **k: given
    sys.argv = ["fairseq-train", *argv]
    train.cli_main()


if __name__ == "__main__":
    system, rest = sys.argv[1], sys.argv[2:]
    {"normlab": run_normlab, "fairseq": run_fairseq}[system](rest)
    raise SystemExit(f"{system} ended before {UPDATES} updates")
