"""The fairseq --user-dir package (its folder name must be unique on sys.path, so not "fairseq").
Importing it registers the ``normlab_translation`` task."""

from normlab.integrations.fairseq.task import NormlabTranslationTask  # noqa: F401  (registers the task)
