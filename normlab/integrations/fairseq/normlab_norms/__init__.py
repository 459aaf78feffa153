"""The fairseq --user-dir package (its folder name must be unique on sys.path, so not "fairseq").
Importing it registers the ``normlab_translation`` task."""

from ..task import NormlabTranslationTask  # noqa: F401  (registers the task)
