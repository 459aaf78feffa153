"""``hydra/sweeper=normlab`` (normlab's default): Hydra's basic sweeper, except that a sweep point
whose config cannot be composed (a key that does not exist for one task of the grid, a value of
the wrong type) fails alone. The basic sweeper composes every point of a batch before launching
any and stops the whole sweep at the first error; here the point is reported with Hydra's message
and normlab's hint, counted as failed in the sweep's exit status, and the other points run."""

import sys
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore


@dataclass
class NormlabSweeperConf:
    _target_: str = "hydra_plugins.normlab_sweeper.normlab_sweeper.NormlabSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="normlab", node=NormlabSweeperConf, provider="normlab")


class NormlabSweeper(BasicSweeper):
    def get_job_batch(self) -> Sequence[Sequence[str]]:
        from normlab.callbacks import INVALID_POINTS
        from normlab.hints import explain_unknown_keys

        batch = []
        for overrides in super().get_job_batch():
            try:
                self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            except Exception as e:   # Hydra's composition errors have no common base class
                point = " ".join(overrides)
                hints = explain_unknown_keys(list(overrides))
                cause = str(e.__cause__).splitlines()[0] if e.__cause__ else ""
                message = " ".join(f"{e} {cause}".split()) + "".join(f"\n  {h}" for h in hints)
                print(f"[normlab] sweep point not run: {point}\n  {message}", file=sys.stderr)
                INVALID_POINTS.append((point, message))
                continue
            batch.append(overrides)
        return batch
