"""jaxtopics: topic-model samplers written as pure JAX functions.

Quick use::

    import jaxtopics as jt
    corpus = jt.Corpus.from_texts(texts)
    model = jt.LDA(num_topics=20).fit(corpus, num_sweeps=500, seed=0)
    print(model.summary())
"""

__version__ = "0.1.0"

from .corpus import Corpus  # noqa: E402
from .errors import (  # noqa: E402
    CorpusError,
    EmptyDocumentError,
    FormatError,
    JaxTopicsError,
    ParameterError,
    ShardLayoutWarning,
    UnknownWordsWarning,
)
from . import metrics  # noqa: E402
from .coherence import topic_coherence  # noqa: E402

# What needs JAX is imported on first use (PEP 562): `import jaxtopics` (corpora, metrics,
# errors) stays light, and the command line imports JAX (~1.5 s) inside its own Ctrl-C handling,
# so an interrupt while JAX loads ends the command with its one line instead of a traceback.
_FROM_ESTIMATORS = ("DMM", "DPMM", "DPMRM", "HDP", "LDA", "PTM", "FittedModel", "SentenceLDA",
                    "TransformInfo", "load")


def __getattr__(name: str):
    import importlib
    if name == "distributed":
        return importlib.import_module(".distributed", __name__)
    if name in _FROM_ESTIMATORS:
        value = getattr(importlib.import_module(".estimators", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "__version__",
    "Corpus",
    "CorpusError",
    "DMM",
    "DPMM",
    "DPMRM",
    "EmptyDocumentError",
    "FittedModel",
    "FormatError",
    "HDP",
    "JaxTopicsError",
    "LDA",
    "ParameterError",
    "PTM",
    "SentenceLDA",
    "TransformInfo",
    "ShardLayoutWarning",
    "UnknownWordsWarning",
    "distributed",
    "load",
    "metrics",
    "topic_coherence",
]
