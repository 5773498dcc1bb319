"""The version of jaxtopics: its one source (pyproject.toml reads it, ``jaxtopics.__version__``
re-exports it)."""

__version__ = "0.1.0"
