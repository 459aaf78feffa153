"""On PYTHONPATH for scripts/test_hydra.sh only: every Hydra app of this interpreter gets normlab's
sweeper where it asks for the basic one (the default, or ``hydra/sweeper=basic``), so Hydra's own
tests of its basic sweeper run against normlab's. ``NORMLAB_SWAP_SWEEPER=0`` leaves Hydra as it is
(the same tests against the basic sweeper, for comparison).

Hydra's plugin scan re-executes its core plugin modules, which store the basic sweeper's config
again, so the swap sits in the ConfigStore itself: whenever that entry is stored, normlab's is."""

import os

if os.environ.get("NORMLAB_SWAP_SWEEPER", "1") != "0":
    from dataclasses import dataclass
    from typing import Dict, Optional

    from hydra.core.config_store import ConfigStore

    @dataclass
    class SwappedConf:  # NormlabSweeperConf's fields; importing it here would be an import circle
        _target_: str = "hydra_plugins.normlab_sweeper.normlab_sweeper.NormlabSweeper"
        max_batch_size: Optional[int] = None
        params: Optional[Dict[str, str]] = None

    _store = ConfigStore.store

    def store(self, name, node, group=None, package=None, provider=None):
        if group == "hydra/sweeper" and name == "basic":
            node = SwappedConf
        return _store(self, name=name, node=node, group=group, package=package, provider=provider)

    ConfigStore.store = store
