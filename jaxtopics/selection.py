"""Choosing the number of topics: fit a list of K, several seeds each, and compare them on
held-out documents (``jaxtopics.evaluation``) and topic coherence (``jaxtopics.coherence``).

``compare_num_topics(jt.LDA, corpus, [5, 10, 20, 40])`` holds out a seeded 10 % of the
documents (split seed 0: the same documents for every K and seed; or takes `held_out`, a Corpus), fits every (K, seed) on the rest, and returns a
``NumTopicsReport``: one row per K with the mean and standard deviation over seeds of the
held-out perplexity and of the mean topic coherence on the training documents; ``print(report)``
shows it as a table and ``report.best`` is the K of lowest mean perplexity.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, NamedTuple, Sequence

import numpy as np

from .corpus import Corpus
from .errors import CorpusError, ParameterError, UnknownWordsWarning
from .validate import check_int, check_positive_int, check_seed

__all__ = ["NumTopicsRow", "NumTopicsReport", "compare_num_topics", "split_documents"]


class NumTopicsRow(NamedTuple):
    """One K: held-out perplexity and mean coherence, mean and standard deviation over seeds
    (ddof=1; 0 for one seed), and each seed's values.

    Attributes:
        num_topics: K.
        perplexity, perplexity_std: held-out perplexity, mean and sd over the seeds.
        coherence, coherence_std: mean topic coherence, mean and sd over the seeds (NaN when
            not measured).
        per_seed_perplexity, per_seed_coherence: each seed's values."""

    num_topics: int
    perplexity: float
    perplexity_std: float
    coherence: float
    coherence_std: float
    per_seed_perplexity: tuple[float, ...]
    per_seed_coherence: tuple[float, ...]


class NumTopicsReport(NamedTuple):
    """What :func:`compare_num_topics` found; ``str()`` is a table, one row per K.

    Attributes:
        rows: one :class:`NumTopicsRow` per K, in the order given.
        method: the held-out method used.
        measure: the coherence measure used, or None.
        num_train_docs, num_held_out_docs: the documents fitted and held out."""

    rows: tuple[NumTopicsRow, ...]
    method: str
    measure: str | None
    num_train_docs: int
    num_held_out_docs: int

    @property
    def best(self) -> int:
        """The K of lowest mean held-out perplexity."""
        return min(self.rows, key=lambda r: r.perplexity).num_topics

    def __str__(self) -> str:
        head = (f"held-out perplexity ({self.method}, {self.num_held_out_docs} documents; lower is "
                f"better)" + (f" and mean {self.measure} coherence (higher is better)"
                              if self.measure else "") + ", mean +- sd over seeds")
        lines = [head, f"{'K':>6}  {'perplexity':>20}" + (f"  {'coherence':>18}" if self.measure else "")]
        for r in self.rows:
            line = f"{r.num_topics:>6}  {r.perplexity:>11.2f} +- {r.perplexity_std:<6.2f}"
            if self.measure:
                line += f"  {r.coherence:>9.4f} +- {r.coherence_std:<6.4f}"
            lines.append(line + ("  <- best" if r.num_topics == self.best else ""))
        return "\n".join(lines)


def split_documents(corpus: Corpus, fraction: float = 0.1, seed: int = 0) -> tuple[Corpus, Corpus]:
    """Hold out a seeded random share of the documents.

    Args:
        corpus: the documents.
        fraction: the share held out, in (0, 1) (at least one document, and at least one left
            to train on).
        seed: the draw's seed.

    Returns:
        (train, held_out), two Corpus objects with the corpus's vocabulary.

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics.selection import split_documents
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> train, held_out = split_documents(corpus, fraction=0.1)
        >>> train.num_docs, held_out.num_docs
        (18, 2)
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.floating)) \
            or not 0 < fraction < 1:
        raise ParameterError(f"held_out must be a Corpus or a fraction in (0, 1), got {fraction!r}")
    d = corpus.num_docs
    if d < 2:
        raise CorpusError(f"holding out documents needs at least 2, the corpus has {d}")
    count = min(max(1, int(round(fraction * d))), d - 1)
    order = np.random.default_rng(check_int(seed, "seed", low=0)).permutation(d)
    held = np.sort(order[:count])
    train = np.sort(order[count:])
    return corpus.subset(train), corpus.subset(held)


def compare_num_topics(estimator: Any, corpus: Corpus, num_topics: Sequence[int], *,
                       held_out: Corpus | float = 0.1, seeds: Sequence[int] = (0, 1, 2),
                       num_sweeps: int = 200, method: str | None = None,
                       coherence: str | None = "c_npmi", top_n: int = 10,
                       vmap_seeds: bool | None = None, **options: Any) -> NumTopicsReport:
    """Fit ``estimator(num_topics=K, **options)`` for every K and seed on `corpus` less the
    held-out documents, and report held-out perplexity and mean topic coherence on the
    training documents.

    Args:
        estimator: an estimator class such as ``jt.LDA`` (``num_clusters=K`` for DMM).
        corpus: the documents.
        num_topics: the values of K to compare.
        held_out: a Corpus of held-out documents, or the share of `corpus` to hold out
            (:func:`split_documents`).
        seeds: one chain per seed and K.
        num_sweeps: sweeps per chain.
        method: the held-out method (``FittedModel.log_likelihood``); None: the model's default.
        coherence: the coherence measure (``FittedModel.coherence``); None: skip it.
        top_n: top words per topic scored for coherence.
        vmap_seeds: run the seeds of one K together (``Estimator.fit_chains``: one vmapped
            loop) rather than one after another. None: together on an accelerator (GPU, TPU),
            one after another on a CPU, where the batched loop measured slower (LDA 1.1x, PTM
            1.2x, DMM 4x on 2 cores: ``scripts/bench_chains.py``, ``docs/benchmarks.md``).
            Either way a seed's chain is the chain ``fit`` runs, up to float rounding in the
            batch.
        **options: the estimator's other settings.

    Returns:
        A :class:`NumTopicsReport` (``print`` it for a table; ``.best`` is the K of lowest
        perplexity).

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> held_out = jt.Corpus.from_texts(["cherry apple banana", "car wheel"])
        >>> report = jt.compare_num_topics(jt.LDA, corpus, [2, 3], held_out=held_out,
        ...                                seeds=(0,), num_sweeps=50)
        >>> [row.num_topics for row in report.rows], report.best
        ([2, 3], 2)
        >>> print(report)
        held-out perplexity (left_to_right, 2 documents; lower is better) and mean c_npmi ...
             K            perplexity           coherence
             2 ... <- best
             3 ...
    """
    from .coherence import check_measure
    from .evaluation import methods_of

    ks = [check_positive_int(k, "num_topics") for k in num_topics]
    if not ks:
        raise ParameterError("num_topics must list at least one K")
    seeds = [check_seed(s) for s in seeds]
    if not seeds:
        raise ParameterError("seeds must list at least one seed")
    for name, values in (("num_topics", ks), ("seeds", seeds)):
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:         # a repeated seed is the same chain: its spread would read as 0
            raise ParameterError(f"{name} lists {repeated[0]} more than once: give each value "
                                 "once")
    if not (isinstance(estimator, type) and hasattr(estimator, "module")):
        raise ParameterError(f"estimator must be an estimator class such as jt.LDA, got "
                             f"{estimator!r}"[:200])
    size_arg = "num_clusters" if getattr(estimator, "name", "") == "dmm" else "num_topics"
    if size_arg not in inspect.signature(estimator.__init__).parameters:
        raise ParameterError(f"{estimator.__name__} infers its number of topics or clusters from "
                             f"the data: compare_num_topics compares models of a given K "
                             f"(LDA, SentenceLDA, PTM, DMM)")
    if method is not None and method not in methods_of(estimator.module):
        raise ParameterError(f"method must be one of {methods_of(estimator.module)} for "
                             f"{estimator.__name__}, got {method!r}")
    if coherence:
        try:
            check_measure(coherence, "default")
        except ParameterError as e:
            raise ParameterError(f"coherence: {e} (or None: no coherence)") from None
    if not isinstance(corpus, Corpus):
        raise CorpusError(f"compare_num_topics expects a jaxtopics.Corpus, got {type(corpus).__name__}")
    if isinstance(held_out, Corpus):
        train, held = corpus, held_out
    else:
        train, held = split_documents(corpus, held_out, 0)
    if not set(held.vocab[i] for i in np.unique(held.word_ids)) & set(train.vocab):
        raise CorpusError("held_out: no token of the held-out documents is a word of the "
                          "training documents")
    if vmap_seeds is None:
        import jax
        vmap_seeds = jax.default_backend() != "cpu"
    elif not isinstance(vmap_seeds, (bool, np.bool_)):
        raise ParameterError(f"vmap_seeds must be True, False or None, got {vmap_seeds!r}")
    rows, used = [], None
    for k in ks:
        ppl, coh = [], []
        est = estimator(**{size_arg: k}, **options)
        if vmap_seeds:
            models = est.fit_chains(train, num_sweeps, seeds)
        else:
            models = (est.fit(train, num_sweeps=num_sweeps, seed=seed) for seed in seeds)
        for seed, model in zip(seeds, models):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UnknownWordsWarning)   # words only held out
                ppl.append(model.perplexity(held, method, seed=seed))
            used = method or model._module.__dict__.get("DEFAULT_HELD_OUT_METHOD", "left_to_right")
            if coherence:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)    # all-NaN topics
                    coh.append(float(np.nanmean(model.coherence(train, coherence, top_n))))
        rows.append(NumTopicsRow(k, float(np.mean(ppl)), _sd(ppl),
                                 float(np.mean(coh)) if coh else float("nan"),
                                 _sd(coh) if coh else float("nan"), tuple(ppl), tuple(coh)))
    return NumTopicsReport(tuple(rows), used, coherence, train.num_docs, held.num_docs)


def _sd(values: list[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
