"""Topic coherence: how often a topic's top words occur together in a reference corpus
(host-side numpy; ``jt.topic_coherence``, ``FittedModel.coherence``).

The measures are those of Röder, Both & Hinneburg (2015), "Exploring the space of topic
coherence measures", under the names gensim and tomotopy give them, with their defaults, so the
numbers are comparable with papers that report them. For a topic's top words w_1..w_n (most
probable first) and P(.) the share of *windows* of the reference corpus holding the words:

- ``"u_mass"`` (Mimno et al. 2011): mean over i > j of log((P(w_i, w_j) + eps) / P(w_j)),
  each document one window (boolean document).
- ``"c_uci"`` (Newman et al. 2010): mean over i != j of PMI(w_i, w_j) =
  log((P(w_i, w_j) + eps) / (P(w_i) P(w_j))), sliding windows of 10 tokens.
- ``"c_npmi"`` (Aletras & Stevenson 2013): mean over i != j of NPMI(w_i, w_j) =
  PMI(w_i, w_j) / -log(P(w_i, w_j) + eps), sliding windows of 10 tokens.
- ``"c_v"`` (Röder et al. 2015): each word's NPMI vector against the topic's words,
  v_i = (NPMI(w_i, w_j))_j; mean over i of cos(v_i, sum_j v_j), sliding windows of 110 tokens.

``eps`` (default 1e-12, gensim's and tomotopy's) smooths the joint probability of pairs that never
co-occur; it must lie in (0, 1) (0 would give log 0), and every accepted eps gives finite scores.
In NPMI (c_npmi, c_v) the smoothed P(w_i, w_j) + eps is capped at min(P(w_i), P(w_j)), which no
joint probability exceeds, so NPMI stays in [-1, 1]: 1 for complete co-occurrence,
-1 + (-log P(w_i) - log P(w_j)) / -log eps for pairs that never co-occur (-1 in the limit
eps -> 0). With the default eps the cap moves NPMI by ~eps / P (gensim's NPMI of a word with
itself is 1 + ~1e-10). Keep eps well below 1 / (number of windows), the smallest non-zero
probability: a larger one outweighs real co-occurrences.

A sliding window of s tokens moves one token at a time over each document: a document of L
tokens gives max(1, L - s + 1) windows (a shorter one is a single window), and P(.) counts the
windows that hold the word(s). Positions are the corpus's tokens (words removed when the corpus
was built, e.g. stop words, are not positions), as gensim counts them on tokenised texts.

Counting costs O(tokens of the top words) plus O(their runs of windows) per pair of words: the
windows holding word w are a union of intervals of window ids (token at position p of document d
lies in d's windows p-s+1..p), merged into disjoint runs once per word; the windows holding both
a and b are |a| + |b| - |a or b|, the union's size read off the two words' runs sorted together.
No window is materialised, so a corpus of any size and s = 110 costs what s = 10 does.
Counts add over documents: :func:`window_counts` of disjoint parts of a corpus sum to those of
the whole (a multi-process fit sums each process's counts).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from .corpus import Corpus
from .errors import CorpusError, ParameterError
from .validate import check_positive_int

__all__ = ["MEASURES", "WindowCounts", "coherence_scores", "topic_coherence", "window_counts",
           "words_coherence"]

#: measure -> its default sliding window (None: each document is one window)
MEASURES: dict[str, int | None] = {"u_mass": None, "c_uci": 10, "c_npmi": 10, "c_v": 110}

#: the default ``eps`` of every measure (gensim's and tomotopy's)
EPS = 1e-12


class WindowCounts(NamedTuple):
    """Window counts of T topics' n top words in a reference corpus (int64).

    Attributes:
        windows: the number of windows.
        word: [T, n] windows holding each word.
        pair: [T, n, n] windows holding both words (symmetric, the diagonal equal to ``word``)."""
    windows: int
    word: np.ndarray
    pair: np.ndarray

    def __add__(self, other: "WindowCounts") -> "WindowCounts":        # disjoint documents
        return WindowCounts(self.windows + other.windows, self.word + other.word,
                            self.pair + other.pair)


def check_measure(measure: Any, window_size: Any = "default") -> tuple[str, int | None]:
    """(measure, window size): `window_size` "default" is the measure's own, None one window
    per document, else a positive int."""
    if measure not in MEASURES:
        raise ParameterError(f"measure must be one of {', '.join(map(repr, MEASURES))}, "
                             f"got {measure!r}")
    if isinstance(window_size, str) and window_size == "default":
        return measure, MEASURES[measure]
    if window_size is None:
        return measure, None
    # a window longer than any corpus is every document whole: bounded so numpy's int64 holds it
    return measure, min(check_positive_int(window_size, "window_size", high=None), 2**62)


def check_eps(eps: Any) -> float:
    """`eps` as a float in (0, 1): the smoothing added to a joint probability.

    0 is refused (a pair that never co-occurs would give log 0 = -inf in every measure), and so
    is 1 or more (more than any probability: -log(P + eps) <= 0 would flip NPMI's sign); bools
    and strings are not numbers here."""
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real):
        raise ParameterError(f"eps must be a number in (0, 1), got {eps!r}")
    value = float(eps)
    if not 0.0 < value < 1.0:            # NaN fails too
        raise ParameterError(
            f"eps must be a number in (0, 1), got {eps!r}: it smooths the joint probability of "
            f"pairs that never co-occur (0 would give log 0), default {EPS:g}")
    return value


def window_counts(top_ids: Any, corpus: Corpus, window_size: int | None) -> WindowCounts:
    """Window counts (see the module docstring) of topics' top words over the documents of a
    corpus.

    Args:
        top_ids: [T, n] word ids in `corpus`'s vocabulary (-1: a word the corpus does not hold,
            counted 0).
        corpus: the reference corpus.
        window_size: sliding windows of this many tokens; None: each document is one window.

    Returns:
        A :class:`WindowCounts`; those of disjoint parts of a corpus sum to the whole's.

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics.coherence import window_counts
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> counts = window_counts([[0, 2], [0, 1]], corpus, None)   # apple banana, apple car
        >>> counts.windows, counts.word.tolist(), counts.pair[:, 0, 1].tolist()
        (20, [[10, 10], [10, 10]], [10, 0])
    """
    ids = np.asarray(top_ids, np.int64)
    if ids.ndim != 2:
        raise ParameterError(f"top_ids must be [topics, words], got shape {ids.shape}")
    t, n = ids.shape
    offsets = np.asarray(corpus.doc_offsets, np.int64)
    lengths = np.diff(offsets)
    per_doc = np.ones_like(lengths) if window_size is None else np.maximum(1, lengths - window_size + 1)
    first_window = np.concatenate([[0], np.cumsum(per_doc)[:-1]]).astype(np.int64)
    runs = _runs_per_word(np.unique(ids[ids >= 0]), corpus.word_ids, offsets, per_doc,
                          first_window, window_size)
    word = np.zeros((t, n), np.int64)
    pair = np.zeros((t, n, n), np.int64)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    for topic in range(t):
        members = [runs.get(int(w), empty) for w in ids[topic]]
        sizes = [int((end - start + 1).sum()) for start, end in members]
        word[topic] = sizes
        for i in range(n):
            pair[topic, i, i] = sizes[i]
            for j in range(i):
                both = sizes[i] + sizes[j] - _union_size(members[i], members[j])
                pair[topic, i, j] = pair[topic, j, i] = both
    return WindowCounts(int(per_doc.sum()), word, pair)


def _runs_per_word(words: np.ndarray, word_ids: np.ndarray, offsets: np.ndarray,
                   per_doc: np.ndarray, first_window: np.ndarray, window_size: int | None
                   ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """word -> (start, end) int64 arrays: the disjoint, sorted runs of window ids holding it."""
    positions = np.flatnonzero(np.isin(word_ids, words))
    if positions.size == 0:
        return {}
    doc = np.searchsorted(offsets, positions, side="right") - 1
    local = positions - offsets[doc]
    base = first_window[doc]
    if window_size is None:
        lo = hi = base
    else:
        lo = base + np.maximum(0, local - window_size + 1)
        hi = base + np.minimum(local, per_doc[doc] - 1)
    which = np.asarray(word_ids)[positions]
    order = np.argsort(which, kind="stable")          # by word, then by position
    which, lo, hi = which[order], lo[order], hi[order]
    cuts = np.flatnonzero(np.diff(which)) + 1
    out = {}
    for w, l_, h_ in zip(which[np.concatenate([[0], cuts])], np.split(lo, cuts), np.split(hi, cuts)):
        # lo and hi rise with the position: a new run starts where a token's windows begin
        # past the previous token's last window + 1
        new = np.concatenate([[True], l_[1:] > h_[:-1] + 1])
        ends = np.concatenate([np.flatnonzero(new)[1:] - 1, [len(h_) - 1]])
        out[int(w)] = (l_[new], h_[ends])
    return out


def _union_size(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """Windows in the union of two words' runs (each disjoint and sorted)."""
    start = np.concatenate([a[0], b[0]])
    end = np.concatenate([a[1], b[1]])
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)                 # the furthest window covered so far
    before = np.concatenate([[-1], reach[:-1]])
    return int(np.maximum(0, end - np.maximum(start, before + 1) + 1).sum())


def coherence_scores(counts: WindowCounts, measure: str, eps: float = EPS) -> np.ndarray:
    """Each topic's coherence from its window counts (module docstring).

    Args:
        counts: the topics' :func:`window_counts`.
        measure: one of ``MEASURES``: "u_mass", "c_uci", "c_npmi", "c_v".
        eps: in (0, 1), smooths pairs that never co-occur.

    Returns:
        float64 [T], finite for every `eps` in (0, 1).

    Raises:
        CorpusError: a word occurs in no window (u_mass divides by P(w_j), the others by
            P(w_i) P(w_j))."""
    measure, _ = check_measure(measure)
    eps = check_eps(eps)
    n = counts.word.shape[1]
    total = float(counts.windows)
    p = counts.word / total                                              # [T, n]
    joint = counts.pair / total                                          # [T, n, n]
    if n < 2:
        raise ParameterError("coherence needs at least 2 top words per topic (it scores pairs)")
    if np.any(counts.word <= 0):
        raise CorpusError("coherence: a top word occurs in no window of the reference corpus "
                          "(the measures divide by its probability)")
    marginals = p[:, :, None] * p[:, None, :]
    # u_mass and c_uci: gensim's formulas, finite for any eps > 0
    if measure == "u_mass":
        i, j = np.tril_indices(n, -1)                                    # i > j: w_j ranks higher
        return np.log((joint[:, i, j] + eps) / p[:, j]).mean(1)
    off = ~np.eye(n, dtype=bool)
    if measure == "c_uci":
        return np.log((joint + eps) / marginals)[:, off].mean(1)
    # NPMI: the smoothed joint probability capped at min(P(w_i), P(w_j)), which no joint
    # probability exceeds, so 0 < smoothed <= 1 and NPMI stays in [-1, 1] (for the default eps
    # the cap moves NPMI by ~eps / P, where one word never occurs without the other)
    smoothed = np.minimum(joint + eps, np.minimum(p[:, :, None], p[:, None, :]))
    pmi = np.log(smoothed / marginals)
    # NPMI is 1 where both words hold every window (complete co-occurrence: 0 / 0 by the formula)
    whole = smoothed >= 1.0
    npmi = np.clip(np.where(whole, 1.0, pmi / -np.log(np.where(whole, 0.5, smoothed))), -1.0, 1.0)
    if measure == "c_npmi":
        return npmi[:, off].mean(1)
    topic = npmi.sum(1, keepdims=True)                                   # [T, 1, n]: sum_j v_j
    norms = np.linalg.norm(npmi, axis=2) * np.linalg.norm(topic, axis=2)
    # v_i holds NPMI(w_i, w_i) = 1, so only a topic vector of 0 (no direction) has norm 0:
    # cosine 0 there rather than 0 / 0
    cos = np.where(norms > 0, (npmi * topic).sum(2) / np.where(norms > 0, norms, 1.0), 0.0)
    return cos.mean(1)


def topic_coherence(topics: Iterable[Iterable[str]], corpus: Corpus, measure: str = "c_v", *,
                    window_size: int | None | str = "default", eps: float = EPS) -> np.ndarray:
    """The coherence of each topic, given as its top words, in a reference corpus (Röder et al.
    2015; module docstring).

    Args:
        topics: each topic's top words (strings, most probable first, the same number for every
            topic); matched to the corpus by their string.
        corpus: the reference corpus.
        measure: "c_v" (default), "c_npmi", "c_uci" or "u_mass".
        window_size: the sliding window in tokens ("default": the measure's own, 10 for c_uci
            and c_npmi, 110 for c_v; None: each document is one window, u_mass's default).
        eps: in (0, 1), smooths pairs that never co-occur (NPMI stays in [-1, 1], scores
            finite).

    Returns:
        float64 [T]: one score per topic.

    Raises:
        CorpusError: a word occurs in none of the corpus's windows (the measures divide by its
            probability), naming it and its topic.

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> topics = [["apple", "banana", "cherry"], ["apple", "car", "wheel"]]
        >>> jt.topic_coherence(topics, corpus, "c_npmi").round(2).tolist()
        [1.0, -0.3]
    """
    return words_coherence(topics, corpus, measure, window_size=window_size, eps=eps)


def words_coherence(topics: Iterable[Iterable[str]], corpus: Corpus, measure: str, *,
                    window_size: int | None | str, eps: float,
                    total: Callable[[WindowCounts], WindowCounts] = lambda counts: counts,
                    sizes: Any = None, names: Sequence[Any] | None = None,
                    hint: str = "(e.g. the training corpus)") -> np.ndarray:
    """:func:`topic_coherence`, for a reference corpus split over processes.

    Args:
        topics, corpus, measure, window_size, eps: as in :func:`topic_coherence`.
        total: maps this corpus's window counts to those of the whole reference corpus (a
            multi-process fit: the sum over the processes' documents).
        sizes: [T] ints >= 2: score only each topic's first sizes[k] words (the rest are
            counted, never required or scored); None: all.
        names: each topic's name in an error (default its position).
        hint: where to find a corpus that holds the words, in that error.

    Returns:
        float64 [T]: one score per topic."""
    measure, window = check_measure(measure, window_size)
    eps = check_eps(eps)
    if not isinstance(corpus, Corpus):
        raise CorpusError(f"topic_coherence expects a jaxtopics.Corpus as the reference corpus, "
                          f"got {type(corpus).__name__}")
    if isinstance(topics, (str, bytes)) or not hasattr(topics, "__iter__"):
        raise ParameterError("topics must be a sequence of topics, each a sequence of words")
    topics = [t.tolist() if isinstance(t, np.ndarray) else t for t in topics]
    if any(isinstance(t, (str, bytes)) or not hasattr(t, "__iter__") for t in topics):
        raise ParameterError("topics must be a sequence of topics, each a sequence of words "
                             "(strings), not of single words")
    topics = [list(t) for t in topics]
    if not topics:
        return np.zeros(0)
    lengths = {len(t) for t in topics}
    if len(lengths) > 1:
        raise ParameterError(f"every topic needs the same number of top words, got {sorted(lengths)}")
    if min(lengths) < 2:
        raise ParameterError("coherence needs at least 2 top words per topic (it scores pairs)")
    for k, t in enumerate(topics):
        bad = [w for w in t if not isinstance(w, str)]
        if bad:
            raise ParameterError(f"topic {k} holds a word that is not a string: {bad[0]!r}")
    index = {w: i for i, w in enumerate(corpus.vocab)}
    ids = np.array([[index.get(w, -1) for w in t] for t in topics], np.int64)
    counts = total(window_counts(ids, corpus, window))
    names = list(range(len(topics))) if names is None else list(names)
    sizes = np.full(len(topics), ids.shape[1]) if sizes is None else np.asarray(sizes, np.int64)
    used = np.arange(ids.shape[1])[None, :] < sizes[:, None]
    require_occurring(counts, topics, "the reference corpus", names=names, hint=hint, used=used)
    out = np.empty(len(topics))
    for size in np.unique(sizes).tolist():          # topics scored on the same number of words
        rows = np.flatnonzero(sizes == size)
        out[rows] = coherence_scores(WindowCounts(counts.windows, counts.word[rows, :size],
                                                  counts.pair[rows, :size, :size]), measure, eps)
    return out


def require_occurring(counts: WindowCounts, topics: Sequence[Sequence[str]], where: str, *,
                      names: Sequence[Any] | None = None, hint: str = "(e.g. the training corpus)",
                      used: np.ndarray | None = None) -> None:
    """Refuse top words that occur in no window of the reference corpus, naming them and their
    topics (`names`, default their positions); `used` [T, n] bool: the words to check."""
    absent = counts.word == 0
    missing = np.argwhere(absent if used is None else absent & used)
    if missing.size:
        names = list(range(len(topics))) if names is None else names
        named = ", ".join(f"{topics[k][i]!r} (topic {names[k]})" for k, i in missing[:5].tolist())
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise CorpusError(f"coherence: {len(missing)} top word(s) never occur in {where}: "
                          f"{named}{more}; score the topics on a corpus that holds their words "
                          f"{hint}".rstrip())
