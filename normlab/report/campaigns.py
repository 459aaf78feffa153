"""Finding a campaign by name: the modules of normlab.campaigns and the ``normlab.campaigns``
entry points of installed packages. The report and the study machinery know a campaign only
through this lookup, so nothing below the campaigns imports one."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil

ENTRY_POINTS = "normlab.campaigns"
PACKAGE = "normlab.campaigns"


def _installed() -> dict:
    """name -> how to load it: the entry points, then normlab's own modules (an entry point of
    the same name wins, so an installed package can replace one)."""
    own = pkgutil.iter_modules(importlib.import_module(PACKAGE).__path__)
    found = {
        m.name: lambda n=m.name: importlib.import_module(f"{PACKAGE}.{n}").CAMPAIGN for m in own
    }
    found.update({ep.name: ep.load for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)})
    return found


def get_campaign(name: str):
    """The campaign ``name``'s report sections (its module's CAMPAIGN object); ValueError naming
    the installed ones when there is none."""
    installed = _installed()
    if name not in installed:
        raise ValueError(
            f"no campaign {name!r}; installed: {', '.join(sorted(installed)) or 'none'}"
        )
    return installed[name]()
