"""jaxtopics: topic-model samplers written as pure JAX functions.

Quick use::

    import jaxtopics as jt
    corpus = jt.Corpus.from_texts(texts)
    model = jt.LDA(num_topics=20).fit(corpus, num_sweeps=500, seed=0)
    print(model.summary())
"""

from ._version import __version__  # noqa: E402  (one source: jaxtopics/_version.py)

from .errors import (  # noqa: E402
    CorpusError,
    EmptyDocumentError,
    FormatError,
    InvariantError,
    JaxTopicsError,
    LabelWarning,
    ParameterError,
    ShardLayoutWarning,
    UnknownWordsWarning,
)

# Everything else is imported on first use (PEP 562): `import jaxtopics` loads only the standard
# library, so the command line imports numpy and JAX (~1.5 s) inside its own Ctrl-C handling
# and an interrupt at any moment ends the command with its one line instead of a traceback.
_LAZY = {"Corpus": ".corpus", "topic_coherence": ".coherence", "compare_num_topics": ".selection",
         "FittedModel": ".fitted", "use_compilation_cache": ".compile_cache", "TransformInfo": ".new_documents", "load": ".model_files",
         **{name: ".estimators" for name in ("DMM", "DPMM", "DPMRM", "HDP", "LDA", "PTM",
                                             "SentenceLDA")}}
_SUBMODULES = ("distributed", "evaluation", "hyper", "metrics", "plot", "selection")


def __getattr__(name: str):
    import importlib
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
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
    "InvariantError",
    "JaxTopicsError",
    "LabelWarning",
    "LDA",
    "ParameterError",
    "PTM",
    "SentenceLDA",
    "TransformInfo",
    "ShardLayoutWarning",
    "compare_num_topics",
    "UnknownWordsWarning",
    "distributed",
    "evaluation",
    "load",
    "metrics",
    "plot",
    "selection",
    "topic_coherence",
    "use_compilation_cache",
]
