"""The fairseq --user-dir package (its folder name must be unique on sys.path, so not "fairseq").
Importing it registers the ``normlab_translation`` task.

fairseq imports this folder as a top-level package (``normlab_norms``, its parent put on
sys.path), so the import below must be absolute: a relative one reaches beyond the top level.
"""

from normlab.integrations.fairseq.task import NormlabTranslationTask  # noqa: F401  (registers the task)
