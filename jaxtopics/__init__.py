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
from . import distributed, metrics  # noqa: E402
from .estimators import (  # noqa: E402
    DMM, DPMM, DPMRM, HDP, LDA, PTM, FittedModel, SentenceLDA, TransformInfo, load,
)

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
]
