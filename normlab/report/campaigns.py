"""Finding a campaign by name: the modules of normlab.campaigns and the ``normlab.campaigns``
entry points of installed packages. The report and the study machinery know a campaign only
through this lookup, so nothing below the campaigns imports one."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil

ENTRY_POINTS = "normlab.campaigns"
PACKAGE = "normlab.campaigns"


def names() -> list[str]:
    """Every campaign installed: normlab's own, then the entry points' names."""
    own = [m.name for m in pkgutil.iter_modules(importlib.import_module(PACKAGE).__path__)]
    return sorted(
        set(own) | {ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)}
    )


def get_campaign(name: str):
    """The campaign ``name``'s report sections (its module's CAMPAIGN object); ValueError naming
    the installed ones when there is none."""
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)}
    if name in eps:
        return eps[name].load()
    if name in names():
        return importlib.import_module(f"{PACKAGE}.{name}").CAMPAIGN
    raise ValueError(f"no campaign {name!r}; installed: {', '.join(names()) or 'none'}")
