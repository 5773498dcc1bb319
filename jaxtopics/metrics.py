"""Clustering scores of a labelling against gold labels (host-side numpy; ``jt.metrics``).

Each function takes two label sequences of the same length (ints, strings: any values
``numpy.unique`` orders) and returns a float. Definitions and limit cases follow scikit-learn
(natural logs; the tests check agreement with it), so numbers are comparable with the papers
that use it (e.g. GSDMM's NMI):

- ``nmi``: normalised mutual information I(T; P) / mean(H(T), H(P)) (``average_method``:
  "arithmetic" (default, = V-measure), "geometric", "min" or "max"); 1 when both labellings
  have one cluster, 0 when only one of them does (it shares no information, whatever the
  normaliser), and always in [0, 1].
- ``ari``: adjusted Rand index (Hubert & Arabie 1985) from the pair-confusion counts.
- ``purity``: the share of items in the majority gold class of their predicted cluster.
- ``homogeneity``: I(T; P) / H(T) (each cluster holds one class); ``completeness``:
  I(T; P) / H(P) (each class lies in one cluster); ``v_measure``: their weighted harmonic mean.

``clustering_scores`` returns all of them in one dict.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .errors import ParameterError
from .validate import as_sequence

__all__ = [
    "nmi", "ari", "purity", "homogeneity", "completeness", "v_measure", "clustering_scores",
    "contingency", "normalized_mutual_info", "adjusted_rand_index",
    "normalized_mutual_info_score", "adjusted_rand_score", "homogeneity_score",
    "completeness_score", "v_measure_score", "purity_score",
]

_AVERAGES = ("arithmetic", "geometric", "min", "max")


def _labels(labels_true: Any, labels_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    t, p = (np.asarray(as_sequence(a)) for a in (labels_true, labels_pred))   # generators too
    for name, a in (("labels_true", t), ("labels_pred", p)):
        if a.ndim != 1:
            raise ParameterError(f"{name} must be one-dimensional, got shape {a.shape}")
        if a.dtype == object:          # mixed or None labels: numpy.unique cannot order them
            kinds = sorted({type(x).__name__ for x in a.tolist()})
            if len(kinds) > 1 or kinds == ["NoneType"]:
                raise ParameterError(f"{name} must hold labels of one kind (ints or strings), "
                                     f"got {', '.join(kinds)}")
        if a.dtype.kind in "fc" and np.isnan(a).any():     # a missing label, not a class
            raise ParameterError(f"{name} holds NaN at item {int(np.flatnonzero(np.isnan(a))[0])}: "
                                 f"every item needs a label")
    if t.shape[0] != p.shape[0]:
        raise ParameterError(f"labels_true has {t.shape[0]} items, labels_pred {p.shape[0]}")
    return t, p


def contingency(labels_true: Any, labels_pred: Any) -> np.ndarray:
    """The contingency table of two labellings.

    Args:
        labels_true: the gold label of each item (ints, strings: any values ``numpy.unique``
            orders).
        labels_pred: the predicted cluster of each item, as many.

    Returns:
        Dense int64 [classes, clusters]: n_ij = items of class i in cluster j (classes and
        clusters in ``numpy.unique`` order).

    Example:
        >>> from jaxtopics.metrics import contingency
        >>> contingency(["a", "a", "b", "b", "c", "c"], [0, 0, 0, 1, 1, 1]).tolist()
        [[2, 0], [1, 1], [0, 2]]
    """
    t, p = _labels(labels_true, labels_pred)
    _, ti = np.unique(t, return_inverse=True)
    _, pi = np.unique(p, return_inverse=True)
    table = np.zeros((ti.max(initial=-1) + 1, pi.max(initial=-1) + 1), np.int64)
    np.add.at(table, (ti.ravel(), pi.ravel()), 1)
    return table


def _unit(x: float) -> float:
    """A ratio that is in [0, 1] by definition, with float rounding (1 + 2e-16) clipped off."""
    return float(min(max(x, 0.0), 1.0))


def _entropy(sizes: np.ndarray) -> float:
    sizes = sizes[sizes > 0].astype(np.float64)
    if sizes.size <= 1:
        return 0.0
    total = sizes.sum()
    return float(-np.sum(sizes / total * (np.log(sizes) - np.log(total))))


def _mutual_info(table: np.ndarray) -> float:
    # MI <= min(H(T), H(P)): a labelling with a single cluster (zero entropy) shares no
    # information, exactly (scikit-learn's convention). Summing the logs instead leaves a
    # ~1e-16 rounding residue that a zero-entropy normaliser would blow up to > 1.
    if table.shape[0] <= 1 or table.shape[1] <= 1:
        return 0.0
    rows, cols = np.nonzero(table)
    n = table[rows, cols].astype(np.float64)
    total = n.sum()
    a = table.sum(1).astype(np.float64)[rows]
    b = table.sum(0).astype(np.float64)[cols]
    mi = n / total * (np.log(n) + np.log(total) - np.log(a) - np.log(b))
    mi = np.where(np.abs(mi) < np.finfo(np.float64).eps, 0.0, mi)
    return float(max(mi.sum(), 0.0))


def nmi(labels_true: Any, labels_pred: Any, average_method: str = "arithmetic") -> float:
    """Normalised mutual information I(T; P) / mean(H(T), H(P)).

    Args:
        labels_true, labels_pred: the gold labels and the predicted clusters, one per item.
        average_method: the mean of the two entropies normalised by: "arithmetic" (default,
            = V-measure), "geometric", "min" or "max".

    Returns:
        A float in [0, 1]: 1 for the same partition (or both one cluster), 0 when only one of
        them is a single cluster.

    Example:
        >>> from jaxtopics import metrics
        >>> round(metrics.nmi([0, 0, 1, 1], [1, 1, 0, 0]), 6)      # the same partition, renamed
        1.0
        >>> round(metrics.nmi(["a", "a", "b", "b", "c", "c"], [0, 0, 0, 1, 1, 1]), 3)
        0.516
    """
    if average_method not in _AVERAGES:
        raise ParameterError(f"average_method must be one of {_AVERAGES}, got {average_method!r}")
    table = contingency(labels_true, labels_pred)
    if table.shape[0] == table.shape[1] <= 1:
        return 1.0                       # neither labelling splits the data: a perfect match
    mi = _mutual_info(table)
    if mi == 0.0:
        return 0.0
    h_t, h_p = _entropy(table.sum(1)), _entropy(table.sum(0))
    norm = {"arithmetic": (h_t + h_p) / 2, "geometric": np.sqrt(h_t * h_p),
            "min": min(h_t, h_p), "max": max(h_t, h_p)}[average_method]
    return _unit(mi / norm)          # norm > 0 here: mi > 0 needs both labellings to split


def ari(labels_true: Any, labels_pred: Any) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985) from the pair-confusion counts.

    Args:
        labels_true, labels_pred: the gold labels and the predicted clusters, one per item.

    Returns:
        A float: 1 for identical partitions, ~0 for independent ones (can be < 0).

    Example:
        >>> from jaxtopics import metrics
        >>> round(metrics.ari(["a", "a", "b", "b", "c", "c"], [0, 0, 0, 1, 1, 1]), 3)
        0.242
    """
    table = contingency(labels_true, labels_pred)
    n = int(table.sum())
    sum_squares = int((table.astype(object) ** 2).sum())
    a = table.sum(1).astype(object)
    b = table.sum(0).astype(object)
    tp = sum_squares - n
    fp = int((table.astype(object) @ b).sum()) - sum_squares
    fn = int((table.T.astype(object) @ a).sum()) - sum_squares
    tn = n * n - fp - fn - sum_squares
    if fn == 0 and fp == 0:
        return 1.0
    return float(2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)))


def purity(labels_true: Any, labels_pred: Any) -> float:
    """Purity: the share of items in the majority gold class of their predicted cluster.

    Args:
        labels_true, labels_pred: the gold labels and the predicted clusters, one per item.

    Returns:
        A float in (0, 1]: the sum over predicted clusters of their largest gold class, over
        the number of items (1 for an empty input).

    Example:
        >>> from jaxtopics import metrics
        >>> metrics.purity([0, 0, 1, 1], [0, 0, 0, 1])
        0.75
    """
    table = contingency(labels_true, labels_pred)
    n = table.sum()
    return 1.0 if n == 0 else float(table.max(0).sum() / n)


def _homogeneity_completeness(labels_true: Any, labels_pred: Any) -> tuple[float, float]:
    table = contingency(labels_true, labels_pred)
    if table.sum() == 0:
        return 1.0, 1.0
    mi = _mutual_info(table)
    h_t, h_p = _entropy(table.sum(1)), _entropy(table.sum(0))
    return (_unit(mi / h_t) if h_t else 1.0), (_unit(mi / h_p) if h_p else 1.0)


def homogeneity(labels_true: Any, labels_pred: Any) -> float:
    """Homogeneity I(T; P) / H(T).

    Args:
        labels_true, labels_pred: the gold labels and the predicted clusters, one per item.

    Returns:
        A float in [0, 1]: 1 when every predicted cluster holds members of one gold class only.

    Example:
        >>> from jaxtopics import metrics
        >>> metrics.homogeneity([0, 0, 1, 1], [0, 1, 2, 3])    # one item per cluster
        1.0
    """
    return float(_homogeneity_completeness(labels_true, labels_pred)[0])


def completeness(labels_true: Any, labels_pred: Any) -> float:
    """Completeness I(T; P) / H(P).

    Args:
        labels_true, labels_pred: the gold labels and the predicted clusters, one per item.

    Returns:
        A float in [0, 1]: 1 when all members of a gold class are in one predicted cluster.

    Example:
        >>> from jaxtopics import metrics
        >>> metrics.completeness([0, 0, 1, 1], [0, 1, 2, 3])
        0.5
    """
    return float(_homogeneity_completeness(labels_true, labels_pred)[1])


def v_measure(labels_true: Any, labels_pred: Any, beta: float = 1.0) -> float:
    """V-measure (1 + beta) h c / (beta h + c), h = homogeneity, c = completeness (= NMI
    arithmetic for beta = 1).

    Args:
        labels_true, labels_pred: the gold labels and the predicted clusters, one per item.
        beta: >= 0; weighs completeness (beta > 1) or homogeneity (beta < 1) more.

    Returns:
        A float in [0, 1].

    Example:
        >>> from jaxtopics import metrics
        >>> round(metrics.v_measure(["a", "a", "b", "b", "c", "c"], [0, 0, 0, 1, 1, 1], beta=2), 3)
        0.558
    """
    if (isinstance(beta, (bool, np.bool_)) or not isinstance(beta, numbers.Real)
            or not math.isfinite(float(beta)) or float(beta) < 0):
        raise ParameterError(f"beta must be a finite number >= 0, got {beta!r}")
    h, c = _homogeneity_completeness(labels_true, labels_pred)
    if beta == 0:
        return _unit(h)                    # the limit of the formula, defined where c = 0 too
    if h + c == 0.0:
        return 0.0
    return _unit((1 + beta) * h * c / (beta * h + c))


def clustering_scores(labels_true: Any, labels_pred: Any) -> dict[str, float]:
    """Every score of this module in one call.

    Args:
        labels_true, labels_pred: the gold labels and the predicted clusters, one per item.

    Returns:
        {"nmi", "ari", "purity", "homogeneity", "completeness", "v_measure"}: floats.

    Example:
        >>> from jaxtopics import metrics
        >>> scores = metrics.clustering_scores(["a", "a", "b", "b", "c", "c"], [0, 0, 0, 1, 1, 1])
        >>> {name: round(value, 3) for name, value in scores.items()}
        {'nmi': 0.516, 'ari': 0.242, 'purity': 0.667, 'homogeneity': 0.421,
         'completeness': 0.667, 'v_measure': 0.516}
    """
    h, c = _homogeneity_completeness(labels_true, labels_pred)
    return {"nmi": nmi(labels_true, labels_pred), "ari": ari(labels_true, labels_pred),
            "purity": purity(labels_true, labels_pred), "homogeneity": float(h),
            "completeness": float(c), "v_measure": v_measure(labels_true, labels_pred)}


# scikit-learn-style and long names
normalized_mutual_info = normalized_mutual_info_score = nmi
adjusted_rand_index = adjusted_rand_score = ari
homogeneity_score = homogeneity
completeness_score = completeness
v_measure_score = v_measure
purity_score = purity
