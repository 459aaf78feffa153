"""Hydra finds this plugin in the hydra_plugins namespace package and appends the example's
configs to normlab's search path, so ``norm=lpnorm`` composes (no hydra.searchpath needed)."""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class NormlabExampleSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="normlab-example", path="pkg://normlab_example.configs")
