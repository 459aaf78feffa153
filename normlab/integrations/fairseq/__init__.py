"""normlab's norms inside fairseq: ``fairseq-train --user-dir normlab/integrations/fairseq/normlab_norms``.

The user dir registers the task ``normlab_translation``: fairseq's ``translation`` task plus
``--norm`` and ``--norm-options``; after fairseq builds the model of any ``--arch`` (e.g. its own
``transformer_iwslt_de_en``), every norm in it is replaced through ``normlab.norms.convert_norms``,
before the optimizer exists and before a checkpoint is loaded::

    fairseq-train data-bin/iwslt14 --user-dir normlab/integrations/fairseq/normlab_norms \\
        --task normlab_translation --arch transformer_iwslt_de_en --norm adanorm --norm-options C=2,k=0.1

fairseq lives in its own environment (``make fairseq-env``): see docs/install.md. This
package imports fairseq only inside ``normlab_norms`` (what --user-dir loads), so importing
normlab never needs it.
"""

from __future__ import annotations


def parse_norm_options(text: str) -> dict:
    """``"C=2,k=0.1"`` -> {"C": 2, "k": 0.1} (values read as YAML scalars); a clear error otherwise."""
    import yaml

    options = {}
    for item in filter(None, (s.strip() for s in (text or "").split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(
                f"--norm-options: {item!r} is not KEY=VALUE (e.g. --norm-options C=2,k=0.1)"
            )
        options[key.strip()] = yaml.safe_load(value.strip())
    return options
