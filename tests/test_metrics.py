"""jt.metrics: clustering scores agree with scikit-learn (a test-only dependency) on random and
edge-case labellings, and bad input raises ParameterError."""

from __future__ import annotations

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import ParameterError

sk = pytest.importorskip("sklearn.metrics")


def _purity_reference(t, p) -> float:
    """Textbook purity: sum over clusters of the size of their majority class, / N."""
    t, p = np.asarray(t), np.asarray(p)
    total = 0
    for c in np.unique(p):
        _, counts = np.unique(t[p == c], return_counts=True)
        total += counts.max()
    return total / len(t)


def _labellings():
    rng = np.random.default_rng(0)
    out = []
    for n, kt, kp in [(50, 3, 4), (500, 20, 7), (1000, 89, 300), (7, 7, 1), (30, 1, 5), (200, 2, 2)]:
        t = rng.integers(0, kt, n)
        p = rng.integers(0, kp, n)
        out.append((t, p))
        q = t.copy()                                            # correlated: a noisy copy
        flip = rng.random(n) < 0.2
        q[flip] = rng.integers(0, kp, flip.sum())
        out.append((t, q))
    out.append((np.arange(10), np.arange(10)))                 # all singletons, identical
    out.append((np.zeros(10, int), np.zeros(10, int)))         # one cluster each
    out.append((np.zeros(10, int), np.arange(10)))
    out.append((np.array(["a", "b", "a", "c"]), np.array([5, 5, 1, 2])))   # strings vs ints
    out.append(([3, 3, 1], [-1, 2, 2]))
    return out


@pytest.mark.parametrize("case", range(len(_labellings())))
def test_scores_agree_with_scikit_learn(case: int) -> None:
    t, p = _labellings()[case]
    for method in ("arithmetic", "geometric", "min", "max"):
        assert jt.metrics.nmi(t, p, average_method=method) == pytest.approx(
            sk.normalized_mutual_info_score(t, p, average_method=method), abs=1e-10)
    assert jt.metrics.ari(t, p) == pytest.approx(sk.adjusted_rand_score(t, p), abs=1e-10)
    assert jt.metrics.homogeneity(t, p) == pytest.approx(sk.homogeneity_score(t, p), abs=1e-10)
    assert jt.metrics.completeness(t, p) == pytest.approx(sk.completeness_score(t, p), abs=1e-10)
    assert jt.metrics.v_measure(t, p) == pytest.approx(sk.v_measure_score(t, p), abs=1e-10)
    assert jt.metrics.v_measure(t, p, beta=2.0) == pytest.approx(
        sk.v_measure_score(t, p, beta=2.0), abs=1e-10)
    assert jt.metrics.purity(t, p) == pytest.approx(_purity_reference(t, p), abs=1e-12)
    np.testing.assert_array_equal(jt.metrics.contingency(t, p),
                                  sk.cluster.contingency_matrix(t, p))
    scores = jt.metrics.clustering_scores(t, p)
    assert set(scores) == {"nmi", "ari", "purity", "homogeneity", "completeness", "v_measure"}
    assert scores["nmi"] == jt.metrics.nmi(t, p) and all(isinstance(v, float) for v in scores.values())


def test_aliases_and_known_values() -> None:
    t, p = [0, 0, 1, 1], [1, 1, 0, 0]                     # the same partition, renamed
    for f in (jt.metrics.nmi, jt.metrics.ari, jt.metrics.purity, jt.metrics.normalized_mutual_info,
              jt.metrics.adjusted_rand_index, jt.metrics.normalized_mutual_info_score,
              jt.metrics.adjusted_rand_score, jt.metrics.homogeneity_score,
              jt.metrics.completeness_score, jt.metrics.v_measure_score, jt.metrics.purity_score):
        assert f(t, p) == pytest.approx(1.0)
    assert jt.metrics.purity([0, 0, 0, 1], [0, 0, 1, 1]) == pytest.approx(0.75)


def test_large_labellings_do_not_overflow() -> None:
    """ARI's pair counts exceed int32 at ~46k items; they are exact Python integers here."""
    rng = np.random.default_rng(1)
    t = rng.integers(0, 50, 200_000)
    p = np.where(rng.random(200_000) < 0.5, t, rng.integers(0, 50, 200_000))
    assert jt.metrics.ari(t, p) == pytest.approx(sk.adjusted_rand_score(t, p), abs=1e-10)


@pytest.mark.parametrize("t,p,match", [
    ([0, 1, 2], [0, 1], "3 items"),
    ([[0, 1]], [[0, 1]], "one-dimensional"),
    ([0.0, 1.0, float("nan")], [0, 1, 1], "labels_true holds NaN at item 2"),
    ([0, 1, 1], np.array([1.0, np.nan, 0.0]), "labels_pred holds NaN at item 1"),
])
def test_bad_input_is_refused(t, p, match) -> None:
    with pytest.raises(ParameterError, match=match):
        jt.metrics.nmi(t, p)


def test_bad_average_method() -> None:
    with pytest.raises(ParameterError, match="average_method"):
        jt.metrics.nmi([0, 1], [0, 1], average_method="harmonic")


def _degenerate_labellings():
    """One class, one cluster, all singletons, two items...: where a ~1e-16 rounding residue of
    the mutual information divided by a zero entropy used to give NMI 1.2 (issue 35)."""
    out = [([0] * 10, [0] * 6 + [1] * 4), ([0] * 6 + [1] * 4, [0] * 10), ([], [])]
    for n in range(1, 16):
        for a in range(n + 1):
            split = [0] * a + [1] * (n - a)
            out += [([0] * n, split), (split, [0] * n), (list(range(n)), split),
                    (split, list(range(n))), (list(range(n)), [0] * n), ([7] * n, [7] * n)]
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        out.append((rng.integers(0, rng.integers(1, n + 1), n),
                    rng.integers(0, rng.integers(1, n + 1), n)))
    return out


def test_scores_stay_in_range_and_match_scikit_learn_on_degenerate_inputs() -> None:
    assert jt.metrics.nmi([0] * 10, [0] * 6 + [1] * 4, "geometric") == 0.0
    assert jt.metrics.nmi([0] * 10, [0] * 6 + [1] * 4, "min") == 0.0
    for t, p in _degenerate_labellings():
        for method in ("arithmetic", "geometric", "min", "max"):
            v = jt.metrics.nmi(t, p, average_method=method)
            assert 0.0 <= v <= 1.0, (t, p, method, v)
            assert v == pytest.approx(sk.normalized_mutual_info_score(
                t, p, average_method=method), abs=1e-10), (t, p, method)
        for ours, theirs in ((jt.metrics.homogeneity, sk.homogeneity_score),
                             (jt.metrics.completeness, sk.completeness_score),
                             (jt.metrics.v_measure, sk.v_measure_score),
                             (jt.metrics.purity, None)):
            v = ours(t, p)
            assert 0.0 <= v <= 1.0, (ours.__name__, t, p, v)
            if theirs is not None:
                assert v == pytest.approx(theirs(t, p), abs=1e-10), (ours.__name__, t, p)
        a = jt.metrics.ari(t, p)
        assert -1.0 <= a <= 1.0 and a == pytest.approx(sk.adjusted_rand_score(t, p), abs=1e-10)


@pytest.mark.parametrize("beta", [-1, -0.5, True, float("nan"), float("inf"), "2"])
def test_bad_v_measure_beta(beta) -> None:
    with pytest.raises(ParameterError, match="beta must be a finite number >= 0"):
        jt.metrics.v_measure([0, 0, 1], [0, 1, 1], beta=beta)


def test_v_measure_with_beta_zero_is_homogeneity():
    from jaxtopics import metrics
    assert metrics.v_measure([0, 0], [0, 1], beta=0.0) == 1.0
    assert metrics.v_measure([0, 1, 1], [0, 0, 1], beta=0.0) == pytest.approx(
        metrics.homogeneity([0, 1, 1], [0, 0, 1]))
