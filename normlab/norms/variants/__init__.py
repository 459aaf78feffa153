"""Norms added to normlab one module each: a module here that registers a norm
(``@register_norm``) is imported by ``normlab.norms``; with ``normlab/configs/norm/<name>.yaml``
beside it the norm runs everywhere (every task's norm positions, convert_norms, the gradient probe,
the report, the fairseq plugin's ``--norm``). See docs/extending.md."""
