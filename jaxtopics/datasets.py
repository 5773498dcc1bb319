"""Data sets: synthetic corpora with ground truth, an embedded real corpus, shared-data loaders.

* :func:`synthetic_lda` draws a corpus from the LDA generative process and returns the planted
  theta, phi and per-token topics (for recovery tests and benchmarks at any size);
  :func:`synthetic_dmm` draws short texts with one planted cluster per document;
  :func:`synthetic_slda` draws documents of sentences with one planted topic per sentence.
* :func:`stdlib_corpus` / :func:`demo_corpus` build a real corpus that needs no download: the
  docstrings of Python's standard library plus the ``pydoc`` help topics.
* :func:`load_shared` reads the project's real corpora in ``../shared/data``.

These are host-side (numpy) generators: they use a ``numpy.random.Generator`` seeded from
``seed``; they are not samplers and never touch JAX.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

import numpy as np

from .corpus import Corpus, TextOptions
from .errors import ParameterError
from .io import decode_strings, encode_strings

__all__ = [
    "SyntheticCorpus",
    "synthetic_lda",
    "synthetic_dmm",
    "synthetic_slda",
    "stdlib_corpus",
    "demo_corpus",
    "load_shared",
    "SHARED_DATASETS",
]


# ---------------------------------------------------------------------------------------------
# Synthetic LDA
# ---------------------------------------------------------------------------------------------


class SyntheticCorpus(NamedTuple):
    """A corpus drawn from a generative model, with the planted truth.

    Attributes:
        corpus: the observed documents.
        theta: float64 [D, K], each document's topic proportions (rows sum to 1).
        phi: float64 [K, V], each topic's word distribution (rows sum to 1).
        assignments: int32 [N], the true topic of each token, aligned with ``corpus.word_ids``.
    """

    corpus: Corpus
    theta: np.ndarray
    phi: np.ndarray
    assignments: np.ndarray


def _log_dirichlet(
    rng: np.random.Generator, conc: float | np.ndarray, shape: tuple[int, ...]
) -> np.ndarray:
    """Log of Dirichlet draws over the last axis of ``shape`` (``conc`` > 0 broadcasts to it).

    Uses Gamma(a) = Gamma(a + 1) * U**(1/a), so log G = log Gamma(a + 1) + log(U) / a stays
    finite for tiny a, where a direct Gamma(a) draw underflows to 0 (all-zero rows).
    """
    conc = np.asarray(conc, dtype=np.float64)
    log_g = np.log(rng.standard_gamma(conc + 1.0, size=shape))  # scalar conc: faster path
    log_g -= rng.standard_exponential(shape) / conc  # log U = -Exp(1)
    log_g -= log_g.max(axis=-1, keepdims=True)
    log_g -= np.log(np.exp(log_g).sum(axis=-1, keepdims=True))
    return log_g


def _dirichlet(
    rng: np.random.Generator, conc: float | np.ndarray, shape: tuple[int, ...]
) -> np.ndarray:
    """Dirichlet draws (float64, rows sum to 1, the largest entry of a row is never 0)."""
    p = np.exp(_log_dirichlet(rng, conc, shape))
    p /= p.sum(axis=-1, keepdims=True)
    return p


def _zipf_weights(num_words: int, exponent: float) -> np.ndarray:
    """Zipf weights 1 / rank**exponent over ranks 1..V, normalised to sum 1."""
    w = np.arange(1, num_words + 1, dtype=np.float64) ** -float(exponent)
    return w / w.sum()


def _check_positive(name: str, value: float, *, integer: bool = False) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ParameterError(f"{name} must be a positive number, got {value!r}")
    ok = value > 0 and np.isfinite(value)
    if integer:
        ok = ok and float(value).is_integer()
    if not ok:
        kind = "a positive integer" if integer else "a positive finite number"
        raise ParameterError(f"{name} must be {kind}, got {value!r}")


def _zipf_topics(rng: np.random.Generator, K: int, V: int, beta: float, zipf_exponent: float,
                 rank_noise: float) -> np.ndarray:
    """phi [K, V]: one Dirichlet draw per topic over its own (noisy Zipf) ranking (see
    :func:`synthetic_lda`)."""
    zipf = _zipf_weights(V, zipf_exponent)
    log_base_rank = np.log(np.arange(1, V + 1, dtype=np.float64))
    phi = np.empty((K, V), dtype=np.float64)
    conc = np.empty(V, dtype=np.float64)
    for k in range(K):
        if rank_noise > 0 and zipf_exponent > 0:
            order = np.argsort(log_base_rank + rank_noise * rng.standard_normal(V))
            conc[order] = zipf
        else:
            conc[:] = zipf
        phi[k] = _dirichlet(rng, (V * beta) * conc, (V,))
    return phi


def _planted_sizes(num_docs: int, num_words: int, num_topics: int, zipf_exponent: float,
                   rank_noise: float) -> tuple[int, int, int]:
    """(D, V, K) of a planted corpus, after checking the Zipf shape settings and int32 sizes."""
    if not (np.isfinite(zipf_exponent) and zipf_exponent >= 0):
        raise ParameterError(f"zipf_exponent must be finite and >= 0, got {zipf_exponent!r}")
    if not (np.isfinite(rank_noise) and rank_noise >= 0):
        raise ParameterError(f"rank_noise must be finite and >= 0, got {rank_noise!r}")
    D, V, K = int(num_docs), int(num_words), int(num_topics)
    if max(D, K, V) > np.iinfo(np.int32).max:
        raise ParameterError("num_docs, num_topics and num_words must fit in int32")
    return D, V, K


def _planted_vocab(num_words: int) -> tuple[str, ...]:
    """The words of a planted corpus: w00000, w00001, ... (at least 5 digits)."""
    width = max(5, len(str(num_words - 1)))
    return tuple(f"w{v:0{width}d}" for v in range(num_words))


def _draw_words(rng: np.random.Generator, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """int32 [N]: a word ~ Cat(phi[z_i]) for every token, topic by topic (inverse CDF)."""
    k_count, v = phi.shape
    word_ids = np.empty(z.shape[0], dtype=np.int32)
    for k in range(k_count):
        at = np.flatnonzero(z == k)
        if at.size:
            cdf = np.cumsum(phi[k])
            word_ids[at] = np.minimum(np.searchsorted(cdf, rng.random(at.size) * cdf[-1],
                                                      side="right"), v - 1)
    return word_ids


def synthetic_lda(
    num_docs: int = 1000,
    num_words: int = 5000,
    num_topics: int = 20,
    mean_doc_length: float = 100,
    alpha: float | Sequence[float] = 0.1,
    beta: float = 0.01,
    zipf_exponent: float = 1.0,
    seed: int = 0,
    *,
    rank_noise: float = 2.0,
) -> SyntheticCorpus:
    """Draw a corpus from the LDA generative process (Blei et al. 2003), with its ground truth.

    * document lengths ``max(1, Poisson(mean_doc_length))``;
    * ``theta_d ~ Dir(alpha * 1_K)``, or ``Dir(alpha)`` for a sequence of K values (an
      asymmetric prior);
    * ``phi_k ~ Dir(V * beta * z_k)`` with ``z_k`` Zipf weights (``1 / rank**zipf_exponent``,
      summing to 1) over topic k's own ranking of the vocabulary, so ``E[phi_k] = z_k`` and the
      total concentration is ``V * beta`` as for a symmetric ``Dir(beta)``;
    * each token: ``z ~ Cat(theta_d)``, ``w ~ Cat(phi_z)``.

    Topic rankings: word ``v`` has a shared base rank ``v + 1`` (in expectation ``"w00000"`` is
    the commonest word corpus-wide) and topic k ranks the vocabulary by
    ``log(v + 1) + rank_noise * eps_kv`` with ``eps ~ N(0, 1)``. Multiplicative noise on the
    rank keeps the corpus-wide rank-frequency curve close to a power law with about the same
    exponent (as in real text), while each topic gets its own head words, so topics stay
    distinguishable (with the defaults, V=5000, K=20: mean cosine between topics ~0.09, top-10
    words of two topics overlap ~4%; rank-frequency slope of the corpus ~-1.0).
    ``rank_noise=0`` gives every topic the same ranking (topics then differ only by Dirichlet
    noise: cosine ~0.5); large values give independent random rankings (corpus-wide
    frequencies then flatten). ``zipf_exponent=0`` is the plain symmetric ``Dir(beta)`` prior.

    Cost is O(N log(K V) + D K + K V log V) time and O(N + D K + K V) memory, with no Python
    loop over documents or tokens (only over topics and blocks of documents): about 1.5 s for
    1M tokens (D=5000, V=10000, K=500) on one CPU core.

    Args:
        num_docs, num_words, num_topics: D, V, K.
        mean_doc_length: the Poisson mean of the document lengths.
        alpha: the symmetric doc-topic prior, or a sequence of K values (asymmetric).
        beta: the topic-word concentration per word (total ``V * beta``).
        zipf_exponent: the exponent of each topic's Zipf weights (0: a symmetric ``Dir(beta)``).
        seed: the seed of every draw (numpy's ``default_rng``).
        rank_noise: the noise of each topic's ranking of the vocabulary (above).

    Returns:
        A :class:`SyntheticCorpus`: the corpus (words named ``"w00000"``, ...) and its truth.

    Example:
        >>> from jaxtopics.datasets import synthetic_lda
        >>> data = synthetic_lda(num_docs=20, num_words=30, num_topics=3, mean_doc_length=10)
        >>> data.corpus.num_docs, data.theta.shape, data.phi.shape
        (20, (20, 3), (3, 30))
        >>> data.assignments.shape == (data.corpus.num_tokens,)
        True
    """
    _check_positive("num_docs", num_docs, integer=True)
    _check_positive("num_words", num_words, integer=True)
    _check_positive("num_topics", num_topics, integer=True)
    _check_positive("mean_doc_length", mean_doc_length)
    if np.ndim(alpha) == 1:
        values = np.asarray(alpha)
        if values.dtype.kind not in "iuf" or values.shape != (int(num_topics),):
            raise ParameterError(f"alpha must be a positive number or {num_topics} positive "
                                 f"numbers (one per topic), got {values.shape[0]} of dtype "
                                 f"{values.dtype}")
        for k, a in enumerate(values.astype(np.float64)):
            _check_positive(f"alpha[{k}]", float(a))
        alpha = values.astype(np.float64)
    else:
        _check_positive("alpha", alpha)
        alpha = float(alpha)
    _check_positive("beta", beta)
    D, V, K = _planted_sizes(num_docs, num_words, num_topics, zipf_exponent, rank_noise)
    rng = np.random.default_rng(seed)

    phi = _zipf_topics(rng, K, V, beta, zipf_exponent, rank_noise)

    # Documents: lengths, theta and per-token topics, a block of documents at a time.
    lengths = np.maximum(rng.poisson(mean_doc_length, size=D), 1).astype(np.int64)
    doc_offsets = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(lengths, out=doc_offsets[1:])
    N = int(doc_offsets[-1])
    theta = np.empty((D, K), dtype=np.float64)
    z = np.empty(N, dtype=np.int32)
    block = max(1, (1 << 20) // K)
    for d0 in range(0, D, block):
        d1 = min(D, d0 + block)
        th = _dirichlet(rng, alpha, (d1 - d0, K))
        theta[d0:d1] = th
        # z_i ~ Cat(theta_d) by inverse CDF on one flat table: row r holds r + cumsum(theta_r),
        # so the query r + u (u ~ U[0, 1)) can only land in row r. Local row indices keep the
        # offsets small (float64 resolution ~ block * 2**-52).
        cdf = np.cumsum(th, axis=1)
        cdf += np.arange(d1 - d0, dtype=np.float64)[:, None]
        cdf[:, -1] = np.arange(1, d1 - d0 + 1, dtype=np.float64)
        t0, t1 = int(doc_offsets[d0]), int(doc_offsets[d1])
        local_doc = np.repeat(np.arange(d1 - d0, dtype=np.int64), lengths[d0:d1])
        q = rng.random(t1 - t0)
        q += local_doc
        flat = np.searchsorted(cdf.ravel(), q, side="right")
        flat -= local_doc * K
        np.minimum(flat, K - 1, out=flat)  # guard against rounding at a row end
        z[t0:t1] = flat

    # Words: group token positions by topic (one counting sort) and draw each topic's words at
    # once by inverse CDF.
    zs = z.astype(np.int16) if K <= np.iinfo(np.int16).max else z
    by_topic = np.argsort(zs, kind="stable")  # radix sort for int16
    del zs
    topic_ends = np.cumsum(np.bincount(z, minlength=K))
    word_ids = np.empty(N, dtype=np.int32)
    start = 0
    for k in range(K):
        end = int(topic_ends[k])
        if end > start:
            cdf_k = np.cumsum(phi[k])
            u = rng.random(end - start)
            u *= cdf_k[-1]
            w = np.searchsorted(cdf_k, u, side="right")
            np.minimum(w, V - 1, out=w)
            word_ids[by_topic[start:end]] = w
        start = end
    del by_topic

    corpus = Corpus.from_arrays(word_ids, doc_offsets, _planted_vocab(V))
    return SyntheticCorpus(corpus=corpus, theta=theta, phi=phi, assignments=z)


def synthetic_dmm(
    num_docs: int = 1000,
    num_words: int = 2000,
    num_clusters: int = 15,
    mean_doc_length: float = 12,
    cluster_alpha: float = 20.0,
    beta: float = 0.01,
    zipf_exponent: float = 1.0,
    seed: int = 0,
    *,
    rank_noise: float = 4.0,
) -> SyntheticCorpus:
    """Draw short texts from the Dirichlet multinomial mixture (one cluster per document), with
    the truth: the generative process of DMM / GSDMM (Yin & Wang, KDD 2014).

    * cluster weights ``pi ~ Dir(cluster_alpha * 1_K)`` (large values: balanced clusters);
    * ``phi_k`` as in :func:`synthetic_lda` (a Dirichlet over each cluster's own noisy Zipf
      ranking of the vocabulary, total concentration ``V * beta``); the default
      ``rank_noise=4`` gives well-separated clusters (max cosine between clusters ~0.1 with
      the defaults; at 2.0 similar clusters share head words, ~0.3, and 12-word documents
      often cannot tell them apart);
    * each document: length ``max(1, Poisson(mean_doc_length))``, cluster ``c ~ Cat(pi)``, every
      word ``w ~ Cat(phi_c)``.

    Args:
        num_docs, num_words, num_clusters: D, V, K.
        mean_doc_length: the Poisson mean of the document lengths.
        cluster_alpha: the symmetric prior of the cluster weights.
        beta, zipf_exponent, seed, rank_noise: as in :func:`synthetic_lda`.

    Returns:
        A :class:`SyntheticCorpus` whose ``corpus.labels`` are the planted clusters, ``theta``
        [D, K] their one-hot rows, ``phi`` [K, V] and ``assignments`` [N] the cluster of every
        token (its document's).

    Example:
        >>> from jaxtopics.datasets import synthetic_dmm
        >>> data = synthetic_dmm(num_docs=20, num_words=30, num_clusters=3)
        >>> data.corpus.labels.shape, data.theta.sum(1).tolist() == [1.0] * 20
        ((20,), True)
    """
    _check_positive("num_docs", num_docs, integer=True)
    _check_positive("num_words", num_words, integer=True)
    _check_positive("num_clusters", num_clusters, integer=True)
    _check_positive("mean_doc_length", mean_doc_length)
    _check_positive("cluster_alpha", cluster_alpha)
    _check_positive("beta", beta)
    if not (np.isfinite(zipf_exponent) and zipf_exponent >= 0):
        raise ParameterError(f"zipf_exponent must be finite and >= 0, got {zipf_exponent!r}")
    if not (np.isfinite(rank_noise) and rank_noise >= 0):
        raise ParameterError(f"rank_noise must be finite and >= 0, got {rank_noise!r}")
    D, V, K = int(num_docs), int(num_words), int(num_clusters)
    if K > np.iinfo(np.int32).max or V > np.iinfo(np.int32).max:
        raise ParameterError("num_clusters and num_words must fit in int32")
    rng = np.random.default_rng(seed)
    phi = _zipf_topics(rng, K, V, beta, zipf_exponent, rank_noise)
    pi = _dirichlet(rng, float(cluster_alpha), (K,))
    labels = np.minimum(np.searchsorted(np.cumsum(pi), rng.random(D) * pi.sum(), side="right"),
                        K - 1).astype(np.int32)
    lengths = np.maximum(rng.poisson(mean_doc_length, size=D), 1).astype(np.int64)
    doc_offsets = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(lengths, out=doc_offsets[1:])
    z = np.repeat(labels, lengths)
    word_ids = _draw_words(rng, phi, z)
    corpus = Corpus.from_arrays(word_ids, doc_offsets, _planted_vocab(V), labels=labels)
    theta = np.zeros((D, K))
    theta[np.arange(D), labels] = 1.0
    return SyntheticCorpus(corpus=corpus, theta=theta, phi=phi, assignments=z)


def synthetic_slda(
    num_docs: int = 400,
    num_words: int = 500,
    num_topics: int = 10,
    mean_sentences: float = 8,
    mean_sentence_length: float = 8,
    alpha: float = 0.3,
    beta: float = 0.02,
    zipf_exponent: float = 1.0,
    seed: int = 0,
    *,
    rank_noise: float = 4.0,
) -> SyntheticCorpus:
    """Draw a corpus with sentences from the Sentence-LDA generative process (Jo & Oh, WSDM
    2011), with its ground truth: one topic per sentence, every token of the sentence drawn from
    that topic.

    * ``phi_k`` as in :func:`synthetic_lda` (a Dirichlet over topic k's own noisy Zipf ranking,
      total concentration ``V * beta``; ``rank_noise=4`` gives well-separated topics);
    * each document: ``theta_d ~ Dir(alpha * 1_K)``, ``max(1, Poisson(mean_sentences))``
      sentences; each sentence: topic ``z ~ Cat(theta_d)``, length
      ``max(1, Poisson(mean_sentence_length))``, every word ``w ~ Cat(phi_z)``.

    Args:
        num_docs, num_words, num_topics: D, V, K.
        mean_sentences: the Poisson mean of the sentences per document.
        mean_sentence_length: the Poisson mean of the tokens per sentence.
        alpha: the symmetric doc-topic prior.
        beta, zipf_exponent, seed, rank_noise: as in :func:`synthetic_lda`.

    Returns:
        A :class:`SyntheticCorpus` whose ``corpus`` has sentence boundaries
        (``corpus.sentence_offsets``), ``theta`` [D, K], ``phi`` [K, V] and ``assignments`` [N]
        the topic of every token (its sentence's: the planted sentence topics are
        ``assignments[corpus.sentence_offsets[:-1]]``).

    Example:
        >>> from jaxtopics.datasets import synthetic_slda
        >>> data = synthetic_slda(num_docs=10, num_words=30, num_topics=3)
        >>> data.corpus.num_sentences > data.corpus.num_docs
        True
    """
    _check_positive("num_docs", num_docs, integer=True)
    _check_positive("num_words", num_words, integer=True)
    _check_positive("num_topics", num_topics, integer=True)
    _check_positive("mean_sentences", mean_sentences)
    _check_positive("mean_sentence_length", mean_sentence_length)
    _check_positive("alpha", alpha)
    _check_positive("beta", beta)
    D, V, K = _planted_sizes(num_docs, num_words, num_topics, zipf_exponent, rank_noise)
    rng = np.random.default_rng(seed)
    phi = _zipf_topics(rng, K, V, beta, zipf_exponent, rank_noise)
    theta = _dirichlet(rng, float(alpha), (D, K))
    sentences = np.maximum(rng.poisson(mean_sentences, size=D), 1).astype(np.int64)
    sent_doc = np.repeat(np.arange(D), sentences)
    cdf = np.cumsum(theta[sent_doc], axis=1)
    sent_topic = np.minimum((cdf < rng.random((sent_doc.size, 1)) * cdf[:, -1:]).sum(1),
                            K - 1).astype(np.int32)
    lengths = np.maximum(rng.poisson(mean_sentence_length, size=sent_doc.size), 1).astype(np.int64)
    sentence_offsets = np.zeros(sent_doc.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=sentence_offsets[1:])
    doc_offsets = np.zeros(D + 1, dtype=np.int64)
    doc_offsets[1:] = sentence_offsets[np.cumsum(sentences)]
    z = np.repeat(sent_topic, lengths)
    word_ids = _draw_words(rng, phi, z)
    corpus = Corpus.from_arrays(word_ids, doc_offsets, _planted_vocab(V),
                                sentence_offsets=sentence_offsets)
    return SyntheticCorpus(corpus=corpus, theta=theta, phi=phi, assignments=z)


# ---------------------------------------------------------------------------------------------
# Embedded real corpus: the standard library's docstrings and pydoc topics
# ---------------------------------------------------------------------------------------------

# Directories (any path component) whose files are not read: installed packages, tests, tools
# and demos that are not library API, vendored code, per-platform build data.
_SKIP_DIRS = frozenset(
    {
        "site-packages", "dist-packages", "__pycache__", "test", "tests", "idlelib", "lib2to3",
        "turtledemo", "ensurepip", "lib-dynload", "__phello__", "encodings",
    }
)


def _stdlib_files(stdlib: Path) -> list[Path]:
    """The standard library's ``.py`` files, sorted by relative path, minus :data:`_SKIP_DIRS`."""
    files = []
    for dirpath, dirnames, filenames in os.walk(stdlib):
        rel = Path(dirpath).relative_to(stdlib)
        dirnames[:] = sorted(
            d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("config-")
        )
        if any(part in _SKIP_DIRS for part in rel.parts):
            continue
        for f in filenames:
            if f.endswith(".py") and not f.startswith("_sysconfigdata"):
                files.append(Path(dirpath, f))
    files.sort(key=lambda p: p.relative_to(stdlib).as_posix())
    return files


def _strip_doctests(text: str) -> str:
    """Drop interactive examples: from a ``>>>`` line up to the next blank line."""
    out = []
    in_example = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(">>>"):
            in_example = True
        elif not stripped:
            in_example = False
        if not in_example:
            out.append(line)
    return "\n".join(out)


def _docstrings(tree: ast.Module, module: str) -> Iterator[tuple[str, str]]:
    """``(qualified name, docstring)`` of the module, its classes and functions, source order."""
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        yield module, doc

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}.{child.name}"
                d = ast.get_docstring(child, clean=True)
                if d:
                    yield name, d
                yield from walk(child, name)
            elif isinstance(child, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                yield from walk(child, prefix)  # definitions under `if`/`try` at the same level

    yield from walk(tree, module)


def _module_name(path: Path, stdlib: Path) -> str:
    parts = list(path.relative_to(stdlib).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


_IDENT_SEP_RE = re.compile(r"_+")
_POSSESSIVE_RE = re.compile(r"['\u2019]s\b")


def _normalise(text: str) -> str:
    """Split identifiers at underscores (``exc_info`` -> ``exc info``) and drop possessive 's."""
    return _POSSESSIVE_RE.sub("", _IDENT_SEP_RE.sub(" ", text))


def _stdlib_texts(stdlib: Path) -> tuple[list[str], list[str]]:
    """Names and texts of all docstrings under ``stdlib`` then all pydoc topics (deduplicated)."""
    names: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()

    def add(name: str, text: str) -> None:
        text = text.strip()
        if text and text not in seen:
            seen.add(text)
            names.append(name)
            texts.append(text)

    for path in _stdlib_files(stdlib):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source, filename=str(path))
        except (UnicodeDecodeError, SyntaxError, ValueError, OSError):
            continue
        for name, doc in _docstrings(tree, _module_name(path, stdlib)):
            add(name, _strip_doctests(doc))
    try:  # data only: a dict of help-topic name -> text
        from pydoc_data.topics import topics
    except ImportError:  # some distributions leave pydoc_data out
        topics = {}
    for key in sorted(topics):
        add(f"pydoc:{key}", _strip_doctests(str(topics[key])))
    return names, texts


# Words that are everywhere in API docs and name no subject. Chosen from the corpus's own
# frequencies: each was among the ~40 commonest words (most in >= 10% of the docstrings) and
# without them the top words of a 20-topic LDA are subjects (files, sockets, email headers,
# widgets, ...) instead of "object method return value" in every topic.
_DOC_NOISE_WORDS = frozenset(
    """
    return returns returned default none true false object objects function functions method
    methods argument arguments value values use used using given self class called instance
    optional specified
    """.split()
)


def _build_stdlib(stdlib: Path, min_tokens: int) -> Corpus:
    """Tokenise the docstrings and keep documents with at least ``min_tokens`` tokens."""
    from .corpus import ENGLISH_STOP_WORDS, default_tokenizer

    stops = ENGLISH_STOP_WORDS | _DOC_NOISE_WORDS
    names, texts = _stdlib_texts(stdlib)
    texts = [_normalise(t) for t in texts]
    # Pre-filter on a cheap count so min_df / max_df are fractions of the documents kept.
    keep = [
        i
        for i, t in enumerate(texts)
        if sum(len(w) >= 2 and w not in stops for w in default_tokenizer(t.lower())) >= min_tokens
    ]
    corpus = Corpus.from_texts(
        [texts[i] for i in keep],
        stop_words=stops,
        min_df=3,
        max_df=0.5,
        doc_names=[names[i] for i in keep],
    )
    return _compact(corpus.subset(np.flatnonzero(corpus.doc_lengths >= min_tokens)))


def _compact(corpus: Corpus) -> Corpus:
    """Drop vocabulary words that no document uses (word order otherwise kept)."""
    used = np.zeros(corpus.num_words, dtype=bool)
    used[corpus.word_ids] = True
    if used.all():
        return corpus
    new_id = np.cumsum(used, dtype=np.int64) - 1
    vocab = tuple(w for w, u in zip(corpus.vocab, used) if u)
    return Corpus.from_arrays(
        new_id[corpus.word_ids].astype(np.int32),
        corpus.doc_offsets,
        vocab,
        sentence_offsets=corpus.sentence_offsets,
        labels=corpus.labels,
        doc_names=corpus.doc_names,
        text_options=corpus.text_options,
    )


_STDLIB_BUILDER_VERSION = 2
"""Bump whenever the stdlib corpus builder changes what it produces (invalidates caches)."""


def cache_dir() -> Path:
    """``$JAXTOPICS_CACHE``, else ``$XDG_CACHE_HOME/jaxtopics``, else ``~/.cache/jaxtopics``."""
    env = os.environ.get("JAXTOPICS_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "jaxtopics"


def _stdlib_cache_key(stdlib: Path, min_tokens: int) -> str:
    from .corpus import ENGLISH_STOP_WORDS

    parts = [
        f"builder={_STDLIB_BUILDER_VERSION}",
        f"python={sys.implementation.name}-{sys.version_info[:3]}",
        f"stdlib={stdlib}",
        f"min_tokens={min_tokens}",
        "stops=" + " ".join(sorted(ENGLISH_STOP_WORDS | _DOC_NOISE_WORDS)),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def _cache_path(stdlib: Path, min_tokens: int) -> Path:
    v = sys.version_info
    name = f"stdlib-{sys.implementation.name}{v.major}.{v.minor}.{v.micro}"
    key = _stdlib_cache_key(stdlib, min_tokens)
    return cache_dir() / f"{name}-v{_STDLIB_BUILDER_VERSION}-{key}.npz"


def _save_corpus(path: Path, corpus: Corpus, key: str) -> None:
    """Write atomically (temp file + ``os.replace``); a cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                vocab, vocab_offsets = encode_strings(corpus.vocab)
                names, names_offsets = encode_strings(corpus.doc_names or ())
                options = None if corpus.text_options is None else corpus.text_options.to_json()
                np.savez(
                    f,
                    key=np.array(key),
                    word_ids=corpus.word_ids,
                    doc_offsets=corpus.doc_offsets,
                    vocab=vocab,
                    vocab_offsets=vocab_offsets,
                    doc_names=names,
                    doc_names_offsets=names_offsets,
                    text_options=np.array(json.dumps(options)),
                )
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass


def _load_corpus(path: Path, key: str) -> Corpus | None:
    """The cached corpus, or None if absent, unreadable, stale or invalid."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["key"]) != key:
                return None
            vocab = decode_strings(z["vocab"], z["vocab_offsets"])
            names = decode_strings(z["doc_names"], z["doc_names_offsets"])
            options = json.loads(str(z["text_options"]))
            return Corpus.from_arrays(
                z["word_ids"], z["doc_offsets"], vocab, doc_names=names,
                text_options=None if options is None else TextOptions.from_json(options))
    except Exception:  # missing, truncated, corrupt, wrong shapes: rebuild
        return None


def _is_positive_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 1


def stdlib_corpus(max_docs: int | None = None, min_tokens: int = 20) -> Corpus:
    """A real English corpus that needs no download: Python's standard-library docstrings.

    Documents are the docstrings of the stdlib's modules, classes and functions (read by
    parsing the ``.py`` sources with :mod:`ast`; nothing is imported) followed by the
    ``pydoc`` help topics (``pydoc_data.topics``), named ``"json.decoder.JSONDecoder.decode"``
    or ``"pydoc:TOPIC"``, in file-path then source order. Skipped: tests, ``idlelib``,
    ``lib2to3``, ``turtledemo``, ``ensurepip``, ``encodings`` and installed packages;
    interactive (``>>>``) examples; exact duplicates. Identifiers are split at underscores.

    Tokenised by :meth:`Corpus.from_texts` with English stop words plus a short list of words
    common to all API docs (``return``, ``value``, ``argument``, ...), ``min_df=3`` and
    ``max_df=0.5``; documents with fewer than ``min_tokens`` tokens are dropped. With
    ``max_docs``, that many documents are taken evenly spaced over the whole (so every part of
    the library is represented) and unused words are dropped from the vocabulary.

    On CPython 3.11 this gives ~1.5k documents, ~90k tokens, ~3.4k words. The build (a few
    seconds) is cached in ``$JAXTOPICS_CACHE`` (default ``~/.cache/jaxtopics``).

    Args:
        max_docs: take this many documents (None: all).
        min_tokens: drop documents with fewer tokens.

    Returns:
        The Corpus, with ``doc_names``."""
    if not _is_positive_int(min_tokens):
        raise ParameterError(f"min_tokens must be a positive int, got {min_tokens!r}")
    if max_docs is not None and not _is_positive_int(max_docs):
        raise ParameterError(f"max_docs must be a positive int or None, got {max_docs!r}")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if not stdlib.is_dir():
        raise FileNotFoundError(f"the standard library directory {stdlib} does not exist")
    min_tokens = int(min_tokens)
    path = _cache_path(stdlib, min_tokens)
    key = _stdlib_cache_key(stdlib, min_tokens)
    corpus = _load_corpus(path, key)
    if corpus is None:
        corpus = _build_stdlib(stdlib, min_tokens)
        _save_corpus(path, corpus, key)
    if max_docs is not None and max_docs < corpus.num_docs:
        idx = np.linspace(0, corpus.num_docs - 1, int(max_docs)).round().astype(np.int64)
        corpus = _compact(corpus.subset(idx))
    return corpus


def demo_corpus() -> Corpus:
    """The corpus ``jaxtopics demo`` uses.

    Returns:
        :func:`stdlib_corpus` with its defaults."""
    return stdlib_corpus()


# ---------------------------------------------------------------------------------------------
# The project's shared real corpora
# ---------------------------------------------------------------------------------------------

SHARED_DATASETS: dict[str, str] = {
    "reuters": "reuters/reuters.ldac (+ reuters.tokens): 395 Reuters news articles",
    "tweet": "gsdmm/Tweet.jsonl: 2,472 tweets with 89 gold clusters",
    "news-t": "gsdmm/News-T.jsonl: 11,109 news titles with 152 gold clusters",
    "lee": "lee/lee_background.cor: 300 news texts, one per line, sentences kept",
}
"""The names :func:`load_shared` knows, with the file each reads."""


def _shared_root(root: str | os.PathLike[str] | None) -> Path:
    if root is not None:
        return Path(root)
    env = os.environ.get("JAXTOPICS_SHARED_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parent.parent
    candidates = [repo.parent / "shared" / "data", Path.cwd().parent / "shared" / "data",
                  Path.cwd() / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0]


def load_shared(name: str, root: str | os.PathLike[str] | None = None) -> Corpus:
    """Load one of the project's real corpora (see :data:`SHARED_DATASETS`).

    ``root`` is the data folder; by default ``$JAXTOPICS_SHARED_DATA``, else the first that
    exists of ``<repo>/../shared/data``, ``../shared/data`` and ``./shared/data``. The short-text
    sets (``tweet``, ``news-t``) come pre-processed, so they are split on whitespace with no stop words and
    ``min_length=1``; their gold clusters become ``labels``.

    Args:
        name: a key of :data:`SHARED_DATASETS` ("reuters", "tweet", "news-t", "lee").
        root: the data folder (default above).

    Returns:
        The Corpus.

    Raises:
        ParameterError: an unknown `name`.
        FileNotFoundError: the data folder does not hold its files."""
    if name not in SHARED_DATASETS:
        raise ParameterError(
            f"unknown shared data set {name!r}; choose from {', '.join(SHARED_DATASETS)}"
        )
    base = _shared_root(root)
    files = {
        "reuters": ["reuters/reuters.ldac", "reuters/reuters.tokens"],
        "tweet": ["gsdmm/Tweet.jsonl"],
        "news-t": ["gsdmm/News-T.jsonl"],
        "lee": ["lee/lee_background.cor"],
    }[name]
    paths = [base / f for f in files]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"shared data set {name!r} not found: missing {', '.join(map(str, missing))} "
            f"(set JAXTOPICS_SHARED_DATA, or pass root=, to the folder that holds "
            f"{files[0].split('/')[0]}/)"
        )
    if name == "reuters":
        return Corpus.from_ldac(paths[0], vocab=paths[1])
    if name in ("tweet", "news-t"):
        return Corpus.from_jsonl(
            paths[0],
            text_key="text",
            label_key="cluster",
            tokenizer=str.split,
            stop_words=None,
            min_length=1,
        )
    return Corpus.from_text_file(paths[0], sentences=True)
