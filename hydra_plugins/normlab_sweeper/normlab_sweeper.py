"""``hydra/sweeper=normlab`` (normlab's default): Hydra's basic sweeper, except that a sweep point
whose config cannot be composed (a key that does not exist for one task of the grid, a value of
the wrong type) fails alone.

The basic sweeper composes every point of a batch before launching any and stops the whole sweep
at the first error. Here the other points of the grid run, and each keeps the job number of its
grid position (``hydra.job.num``, hence ``hydra.job.id`` and the sweep subdirectory), so a batch
with a bad point is launched as the runs of composable points around it. ``sweep()`` returns, as
the basic sweeper does, one list per batch with one ``JobReturn`` per grid point: a point that was
not composed is a FAILED return holding its composition error.

How the sweep ends: in normlab's own app, ``normlab.run.callbacks.SweepSummary`` counts the points not
composed among the failed jobs and exits with that count. In any other app the sweeper raises the
first composition error once the other points have run, so Hydra reports it and exits 1, as with
the basic sweeper. This module imports neither torch nor normlab's training code: normlab's key
hints are looked up only for a point that failed in normlab's own app.
"""

import contextlib
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

SUMMARY = "normlab.run.callbacks.SweepSummary"


@dataclass
class NormlabSweeperConf:
    _target_: str = "hydra_plugins.normlab_sweeper.normlab_sweeper.NormlabSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(
    group="hydra/sweeper", name="normlab", node=NormlabSweeperConf, provider="normlab"
)


def runs(flags: Sequence[bool]) -> List[range]:
    """The maximal runs of consecutive True entries, as index ranges."""
    out, start = [], None
    for i, ok in enumerate([*flags, False]):
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            out.append(range(start, i))
            start = None
    return out


class NormlabSweeper(BasicSweeper):
    def sweep(self, arguments: List[str]) -> Any:
        assert (
            self.config is not None and self.launcher is not None and self.hydra_context is not None
        )
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self.overrides = self.split_arguments(
            parser.parse_overrides(self._parse_config() + list(arguments)), self.max_batch_size
        )
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        if self._summary_counts_them():  # normlab's own app: each job says where the sweep is
            from normlab.run.callbacks import start_progress

            start_progress(sweep_dir, sum(len(batch) for batch in self.overrides))

        returns: List[Sequence[JobReturn]] = []
        errors: List[BaseException] = []
        first = 0  # the grid position of the batch's first point
        while not self.is_done():
            batch = self.get_job_batch()
            results: List[Optional[JobReturn]] = [self._compose_error(o) for o in batch]
            errors += [r._return_value for r in results if r is not None]
            for span in runs([r is None for r in results]):
                with self._stops() as stops:
                    try:
                        launched = self.launcher.launch(
                            [batch[i] for i in span], initial_job_idx=first + span.start
                        )
                    finally:
                        if stops is not None and stops.code() is not None:
                            self._stopped(stops)
                for r in launched:
                    _ = r.return_value  # as the basic sweeper: a job that raised ends the sweep
                results[span.start : span.stop] = launched
            first += len(batch)
            returns.append(results)
        if errors and not self._summary_counts_them():
            raise errors[0]
        return returns

    def _stops(self):
        """normlab.run.workers.SweepStops around a launch whose jobs run in worker processes
        (joblib): a stop signal reaches the workers and ends the sweep with its code."""
        if not self._summary_counts_them():  # not normlab's own app
            return contextlib.nullcontext(None)
        from normlab.run.workers import SweepStops, in_worker

        launcher = type(self.launcher).__module__
        return SweepStops() if in_worker(launcher) else contextlib.nullcontext(None)

    @staticmethod
    def _stopped(stops) -> None:
        name = signal.Signals(stops.signum).name
        print(
            f"[normlab] {name}: the sweep stopped; its running jobs wrote checkpoints. Re-run the "
            "same command to resume it",
            file=sys.stderr,
        )
        sys.exit(stops.code())

    def _summary_counts_them(self) -> bool:
        callbacks = self.config.hydra.get("callbacks") or {}
        return any(
            str(c.get("_target_", "")) == SUMMARY for c in callbacks.values() if c is not None
        )

    def _compose_error(self, overrides: Sequence[str]) -> Optional[JobReturn]:
        """None if the point composes, else a FAILED JobReturn holding the error (reported here)."""
        try:
            self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            return None
        except Exception as e:  # Hydra's composition errors have no common base class
            point = " ".join(overrides)
            cause = str(e.__cause__).splitlines()[0] if e.__cause__ else ""
            message = " ".join(f"{e} {cause}".split()).split(" Config search path:")[0]
            if self._summary_counts_them():  # normlab's own app: add its key hints, count the point
                from normlab.hints import explain_unknown_keys
                from normlab.run.callbacks import record_invalid

                message += "".join(f"\n  {h}" for h in explain_unknown_keys(list(overrides)))
                record_invalid(self.config.hydra.sweep.dir, point, message)
                from normlab.run.callbacks import progress

                print(progress(self.config.hydra.sweep.dir, "invalid", point), flush=True)
            print(f"[normlab] sweep point not run: {point}\n  {message}", file=sys.stderr)
            return JobReturn(overrides=list(overrides), status=JobStatus.FAILED, _return_value=e)
