"""Goodness-of-fit statistics shared by the exact-enumeration tests (DESIGN.md "How to test a
sampler"): a pooled chi-square p-value and a total-variation distance with its sampling bound.
Tolerances come from the number of draws, never from observed values."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def pooled_chisquare_p(counts: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> float:
    """Chi-square goodness-of-fit p-value; bins with expected count < min_expected are pooled.
    Observed mass on a zero-probability bin gives p = 0 (an impossible outcome)."""
    counts = np.asarray(counts, np.float64)
    probs = np.asarray(probs, np.float64)
    if np.any(counts[probs == 0] > 0):
        return 0.0
    exp = probs * counts.sum()
    big = exp >= min_expected
    obs_b, exp_b = list(counts[big]), list(exp[big])
    if (~big).any() and exp[~big].sum() > 0:
        obs_b.append(counts[~big].sum())
        exp_b.append(exp[~big].sum())
    if len(exp_b) < 2:
        return 1.0
    return float(stats.chisquare(obs_b, exp_b).pvalue)


def tv_bound(probs: np.ndarray, n: int, delta: float) -> float:
    """Upper bound on TV(empirical of n iid draws, probs), exceeded with probability <= delta.

    E[TV] <= 1/2 sum_i sqrt(p_i (1 - p_i) / n) (Jensen per bin); one draw moves the empirical TV
    by at most 1/n, so McDiarmid adds sqrt(log(1/delta) / (2 n)).
    """
    p = np.asarray(probs, np.float64)
    return float(0.5 * np.sum(np.sqrt(p * (1 - p) / n)) + math.sqrt(math.log(1 / delta) / (2 * n)))


def tv(a: np.ndarray, b: np.ndarray) -> float:
    """Total-variation distance of two distributions on the same bins."""
    return float(0.5 * np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).sum())
