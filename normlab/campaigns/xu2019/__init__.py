"""The reproduction of "Understanding and Improving Layer Normalization" (Xu et al., NeurIPS
2019): the paper's tables and published numbers, its five claims and their family of tests, its
figures, the tuned-lr protocol, the studies' declarations and the README's results section.

``CAMPAIGN`` is what ``normlab-report --campaign xu2019`` adds to the generic report."""

from .sections import CAMPAIGN

__all__ = ["CAMPAIGN"]
