"""Tests for jaxtopics.ops: categorical sampling, counts, Polya terms, block schedules, MH pieces.

Statistical tests use fixed seeds; each has a false-alarm rate of at most FAMILY_ALPHA (1e-3),
Bonferroni-split over its comparisons. Tolerances come from the sampling error of the number of
draws (chi-square goodness of fit and a total-variation bound), never from the observed values.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

from jaxtopics.ops import (
    block_uniforms,
    categorical,
    categorical_logits,
    chunked_map,
    LANE_MULTIPLE,
    count_table,
    dirichlet_multinomial_log_evidence,
    exchange,
    exchange_others,
    from_strided,
    join_groups,
    log_dirichlet,
    log_gamma,
    log_rising_factorial,
    mh_accept,
    move_counts,
    propose_from_members,
    rotate,
    row_group,
    strided_blocks,
    strided_width,
    to_strided,
    uniform_index,
    uniform_integer,
)
from enumeration_stats import pooled_chisquare_p as _pooled_chisquare_p, tv_bound as _tv_bound

FAMILY_ALPHA = 1e-3


# ------------------------------------------------------------------------------------------
# helpers


def _uniforms(seed: int, shape) -> np.ndarray:
    """float32 uniforms in [0, 1) (numpy's float32 generator never returns 1.0)."""
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def _check_distribution(draws: np.ndarray, probs: np.ndarray, alpha: float = FAMILY_ALPHA) -> None:
    probs = np.asarray(probs, np.float64)
    k = probs.shape[0]
    draws = np.asarray(draws)
    assert draws.min() >= 0 and draws.max() < k
    counts = np.bincount(draws, minlength=k)
    assert counts[probs == 0].sum() == 0, "a zero-probability category was drawn"
    n = draws.size
    tv = 0.5 * np.abs(counts / n - probs).sum()
    assert tv < _tv_bound(probs, n, alpha / 2), (tv, _tv_bound(probs, n, alpha / 2))
    p = _pooled_chisquare_p(counts, probs)
    assert p > alpha / 2, p


# ------------------------------------------------------------------------------------------
# categorical


_categorical_jit = jax.jit(categorical)


def _draw_same_weights(weights: np.ndarray, n: int, seed: int, batch: int = 20000) -> np.ndarray:
    """n draws from one weight vector, each with its own uniform (batched to bound memory)."""
    w = jnp.asarray(weights, jnp.float32)
    out = []
    u_all = _uniforms(seed, n)
    for s in range(0, n, batch):
        u = u_all[s:s + batch]
        out.append(np.asarray(_categorical_jit(jnp.asarray(u), jnp.broadcast_to(w, (u.size, w.size)))))
    return np.concatenate(out)


@pytest.mark.parametrize(
    "weights",
    [
        [1.0],
        [1.0, 3.0],
        [0.2, 0.0, 5.0],
        [0.5, 3.0, 0.0, 1.0, 7.0, 0.01, 2.0],
        list(np.arange(1, 51, dtype=np.float64) % 7),              # K=50, zeros every 7th
        [1e-3, 1.0, 1e3, 0.0, 1e-2],                                 # dynamic range 1e6
    ],
    ids=["K1", "K2", "K3-zero-middle", "K7", "K50", "K5-range"],
)
def test_categorical_matches_distribution(weights) -> None:
    w = np.asarray(weights, np.float64)
    draws = _draw_same_weights(w, 200_000, seed=len(w))
    _check_distribution(draws, w / w.sum())


def test_categorical_k1000_distribution() -> None:
    rng = np.random.default_rng(7)
    w = rng.gamma(0.5, size=1000)
    w[rng.random(1000) < 0.3] = 0.0          # 30% zeros, scattered
    w[:5] = 0.0
    w[-5:] = 0.0
    draws = _draw_same_weights(w, 100_000, seed=11)
    _check_distribution(draws, w / w.sum())


def test_categorical_rows_are_independent_of_each_other() -> None:
    """Different weight rows in one call: each row's draws follow its own distribution."""
    rng = np.random.default_rng(3)
    k, reps = 6, 40_000
    table = rng.gamma(1.0, size=(3, k))
    table[0, 0] = 0.0
    table[1, -1] = 0.0
    table[2, 2:4] = 0.0
    w = np.repeat(table, reps, axis=0)
    z = np.asarray(_categorical_jit(jnp.asarray(_uniforms(4, w.shape[0])), jnp.asarray(w, jnp.float32)))
    for r in range(3):
        _check_distribution(z[r * reps:(r + 1) * reps], table[r] / table[r].sum(), FAMILY_ALPHA / 3)


def _zero_weight_patterns() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    rows = []
    for k in (1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 50, 1000):
        for where in ("end", "start", "middle", "single", "alternate", "random", "range"):
            w = rng.gamma(1.0, size=k).astype(np.float64) + 1e-3
            if where == "end":
                w[k // 2 + 1:] = 0.0
            elif where == "start":
                w[: k - 1 - k // 3] = 0.0
            elif where == "middle":
                w[k // 4 + 1: max(k // 4 + 1, 3 * k // 4)] = 0.0
            elif where == "single":
                w[:] = 0.0
                w[rng.integers(k)] = rng.gamma(1.0) + 1e-3
            elif where == "alternate":
                w[::2] = 0.0
                if not w.any():
                    w[0] = 1.0
            elif where == "random":
                w[rng.random(k) < 0.7] = 0.0
                if not w.any():
                    w[-1] = 2.0
            elif where == "range":                 # huge dynamic range, zeros in between
                w = 10.0 ** rng.uniform(-30, 30, size=k)
                w[rng.random(k) < 0.5] = 0.0
                if not w.any():
                    w[k // 2] = 1e-30
            rows.append(w)
    for k in (2, 3, 7, 50):                         # one tiny entry next to huge ones
        w = np.zeros(k)
        w[0], w[-1] = 1e30, 1e-30
        rows.append(w)
        rows.append(w[::-1].copy())
    return rows


def test_categorical_never_returns_zero_weight_index() -> None:
    """Adversarial uniforms (0, the largest float32 below 1, exact prefix boundaries and their
    float32 neighbours) on rows with zeros at the start / end / middle / everywhere but one."""
    top = np.float32(1) - np.float32(2.0 ** -24)
    for w in _zero_weight_patterns():
        k = w.size
        w32 = w.astype(np.float32)
        prefix = np.cumsum(w32.astype(np.float64)) / w32.astype(np.float64).sum()
        edges = np.clip(prefix, 0, top).astype(np.float32)
        us = np.concatenate([
            [0.0, top, 0.5, 2.0 ** -24],
            edges, np.nextafter(edges, np.float32(0)), np.nextafter(edges, np.float32(1)),
            _uniforms(k, 300),
        ]).astype(np.float32)
        us = np.clip(us, 0, top)
        z = np.asarray(_categorical_jit(jnp.asarray(us), jnp.asarray(np.broadcast_to(w32, (us.size, k)))))
        assert z.min() >= 0 and z.max() < k, (w, z)
        assert (w32[z] > 0).all(), (k, w32, us[w32[z] <= 0], z[w32[z] <= 0])


def test_categorical_fallback_under_vmap() -> None:
    """The rounding fallback is a lax.cond; under vmap it becomes a select. Rows where the
    plain pick lands on a zero weight (u at the top of [0, 1), trailing zeros) must still
    return a positive-weight index, batched or not."""
    top = np.float32(1) - np.float32(2.0 ** -24)
    w = np.zeros((4, 50), np.float32)
    w[:, :10] = np.float32(0.1)                    # total 1.0 in float32, 40 trailing zeros
    u = np.full((3, 4), top, np.float32)           # 3 batched calls of 4 rows each
    z = np.asarray(jax.vmap(categorical)(jnp.asarray(u), jnp.broadcast_to(jnp.asarray(w), (3, 4, 50))))
    assert z.shape == (3, 4)
    assert (z < 10).all(), z


def test_categorical_without_a_conditional_off_the_cpu(monkeypatch) -> None:
    """Off the CPU the rounding fallback is a select, not a lax.cond (a GPU conditional syncs
    with the host); the draws are the same, fallback rows included."""
    top = np.float32(1) - np.float32(2.0 ** -24)
    w = np.zeros((6, 50), np.float32)
    w[:, :10] = np.float32(0.1)                    # trailing zeros: u = top needs the fallback
    u = np.array([top, 0.0, 0.3, top, 0.99, 0.5], np.float32)
    on_cpu = np.asarray(jax.jit(categorical)(jnp.asarray(u), jnp.asarray(w)))
    assert " conditional(" in jax.jit(categorical).lower(u, w).compile().as_text()
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    select = jax.jit(lambda u, w: categorical(u, w))
    assert " conditional(" not in select.lower(u, w).compile().as_text()
    np.testing.assert_array_equal(np.asarray(select(jnp.asarray(u), jnp.asarray(w))), on_cpu)
    assert (on_cpu < 10).all()


def test_categorical_shapes_and_dtype() -> None:
    w = jnp.ones((2, 3, 5))
    z = categorical(jnp.zeros((2, 3)), w)
    assert z.shape == (2, 3) and z.dtype == jnp.int32
    assert categorical(jnp.zeros(()), jnp.ones(4)).shape == ()


def test_categorical_logits_very_negative() -> None:
    # only one finite-probability entry after shifting
    logits = jnp.array([[-1e4, 0.0, -1e4], [-1e4, -1e4, -1e4 + 200.0], [0.0, -1e4, -1e4]])
    u = jnp.asarray(_uniforms(1, 3))
    np.testing.assert_array_equal(np.asarray(categorical_logits(u, logits)), [1, 2, 0])
    np.testing.assert_array_equal(np.asarray(categorical_logits(jnp.zeros(3), logits)), [1, 2, 0])
    # all equally very negative: the max shift makes them uniform
    n = 60_000
    draws = np.asarray(jax.jit(categorical_logits)(
        jnp.asarray(_uniforms(2, n)), jnp.full((n, 4), -1e4, jnp.float32)))
    _check_distribution(draws, np.full(4, 0.25))
    # relative probabilities survive an offset of -1e4: p ∝ (1, 3), no underflow
    lg = jnp.broadcast_to(jnp.array([-1e4, -1e4 + math.log(3.0)], jnp.float32), (n, 2))
    draws = np.asarray(jax.jit(categorical_logits)(jnp.asarray(_uniforms(3, n)), lg))
    _check_distribution(draws, np.array([0.25, 0.75]))
    # -inf entries are impossible categories
    lg = jnp.broadcast_to(jnp.array([-jnp.inf, -1e4, -jnp.inf, -1e4 + 1.0], jnp.float32), (n, 4))
    draws = np.asarray(jax.jit(categorical_logits)(jnp.asarray(_uniforms(4, n)), lg))
    _check_distribution(draws, np.array([0.0, 1.0, 0.0, math.e]) / (1 + math.e))


# ------------------------------------------------------------------------------------------
# uniform_index


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 2**24 + 3, 2**30, 2**31 - 1])
def test_uniform_index_bounds(n: int) -> None:
    top = np.float32(1) - np.float32(2.0 ** -24)
    u = np.concatenate([[0.0, top, 0.5, np.nextafter(np.float32(0.5), np.float32(0))],
                        _uniforms(n % 1000, 10_000)]).astype(np.float32)
    i = np.asarray(uniform_index(jnp.asarray(u), jnp.int32(n)))
    assert i.dtype == np.int32
    assert i.min() >= 0 and i.max() <= n - 1
    assert i[0] == 0
    if n <= 2**24:                    # u * n is exact in float32: the top uniform hits n - 1
        assert i[1] == n - 1


def test_uniform_index_zero_and_per_row_sizes() -> None:
    assert int(uniform_index(jnp.float32(0.7), jnp.int32(0))) == 0
    n = jnp.array([1, 2, 5, 0, 9], jnp.int32)
    i = np.asarray(uniform_index(jnp.full(5, 0.99999994, jnp.float32), n))
    np.testing.assert_array_equal(i, [0, 1, 4, 0, 8])


def test_uniform_index_is_uniform() -> None:
    n = 7
    draws = np.asarray(uniform_index(jnp.asarray(_uniforms(5, 100_000)), n))
    _check_distribution(draws, np.full(n, 1 / n))


def test_uniform_integer_is_uniform_where_a_float32_product_is_not() -> None:
    """n = 2^24: a float32 uniform is m / 2^23, so floor(u n) = 2 m is never odd (half of the
    indices are never drawn: the control); uniform_integer's parities are uniform, and its
    values cover [0, n)."""
    n = 2**24
    key = jax.random.key(3)
    draws = np.asarray(uniform_integer(key, jnp.int32(n), (60_000,)))
    assert draws.dtype == np.int32 and draws.min() >= 0 and draws.max() < n
    _check_distribution(draws % 2, np.full(2, 1 / 2))
    _check_distribution(draws // (n // 8), np.full(8, 1 / 8))
    control = np.asarray(uniform_index(jax.random.uniform(key, (60_000,)), jnp.int32(n)))
    assert not np.any(control % 2 == 1)


def test_uniform_integer_per_element_sizes_and_zero() -> None:
    n = jnp.array([1, 2, 5, 0, 9], jnp.int32)
    draws = np.asarray(jax.vmap(lambda k: uniform_integer(k, n, (5,)))(
        jax.random.split(jax.random.key(0), 2000)))
    assert np.all(draws[:, [0, 3]] == 0)
    for col, size in ((1, 2), (2, 5), (4, 9)):
        assert set(np.unique(draws[:, col])) == set(range(size))


# ------------------------------------------------------------------------------------------
# chunked_map


def _row_fn(xs):
    a, b = xs
    return {"s": a * 2.0 + b.sum(-1), "m": jnp.max(b, -1).astype(jnp.int32)}


@pytest.mark.parametrize("n,chunk", [(10, 3), (12, 4), (5, 8), (5, 5), (1, 1), (1001, 64)])
def test_chunked_map_equals_unchunked(n: int, chunk: int) -> None:
    rng = np.random.default_rng(n)
    a = jnp.asarray(rng.normal(size=n), jnp.float32)
    b = jnp.asarray(rng.normal(size=(n, 3)) * 10, jnp.float32)
    full = _row_fn((a, b))
    got = jax.jit(lambda x: chunked_map(_row_fn, x, chunk))((a, b))
    assert got["s"].shape == (n,) and got["m"].shape == (n,)
    np.testing.assert_array_equal(np.asarray(got["s"]), np.asarray(full["s"]))
    np.testing.assert_array_equal(np.asarray(got["m"]), np.asarray(full["m"]))


# ------------------------------------------------------------------------------------------
# counts


def test_count_table_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    d, k, n = 7, 5, 500
    doc, z = rng.integers(0, d, n), rng.integers(0, k, n)
    w = rng.integers(0, 4, n)
    ref = np.zeros((d, k), np.int64)
    np.add.at(ref, (doc, z), 1)
    got = count_table((d, k), jnp.asarray(doc), jnp.asarray(z))
    assert got.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(got), ref)
    ref_w = np.zeros((d, k), np.int64)
    np.add.at(ref_w, (doc, z), w)
    np.testing.assert_array_equal(np.asarray(count_table((d, k), jnp.asarray(doc), jnp.asarray(z),
                                                         weights=jnp.asarray(w))), ref_w)
    np.testing.assert_array_equal(np.asarray(count_table((k,), jnp.asarray(z))), np.bincount(z, minlength=k))


def test_move_counts_cancel_noop_and_recount() -> None:
    rng = np.random.default_rng(2)
    d, k, n = 6, 4, 300
    doc = rng.integers(0, d, n)
    z = rng.integers(0, k, n)
    table = count_table((d, k), jnp.asarray(doc), jnp.asarray(z))
    totals = count_table((k,), jnp.asarray(z))
    idx = np.arange(n)
    # old == new cancels exactly
    same = move_counts(table, jnp.asarray(doc), jnp.asarray(z), jnp.asarray(z), jnp.ones(n, jnp.int32))
    np.testing.assert_array_equal(np.asarray(same), np.asarray(table))
    # weight 0 is a no-op whatever the columns
    new = rng.integers(0, k, n)
    noop = move_counts(table, jnp.asarray(doc), jnp.asarray(z), jnp.asarray(new), jnp.zeros(n, jnp.int32))
    np.testing.assert_array_equal(np.asarray(noop), np.asarray(table))
    # a random subset of tokens moves (several per row): equals a recount from the new z
    moving = rng.random(n) < 0.5
    z2 = np.where(moving, new, z)
    sel = idx[moving]
    moved = move_counts(table, jnp.asarray(doc[sel]), jnp.asarray(z[sel]), jnp.asarray(new[sel]),
                        jnp.ones(sel.size, jnp.int32))
    ref = np.zeros((d, k), np.int64)
    np.add.at(ref, (doc, z2), 1)
    np.testing.assert_array_equal(np.asarray(moved), ref)
    # the same with a validity weight (padding slots) and a 1-d table
    w = moving.astype(np.int32)
    moved_w = move_counts(table, jnp.asarray(doc), jnp.asarray(z), jnp.asarray(new), jnp.asarray(w))
    np.testing.assert_array_equal(np.asarray(moved_w), ref)
    tot = move_counts(totals, None, jnp.asarray(z), jnp.asarray(new), jnp.asarray(w))
    np.testing.assert_array_equal(np.asarray(tot), np.bincount(z2, minlength=k))
    assert moved.dtype == jnp.int32 and tot.dtype == jnp.int32


# ------------------------------------------------------------------------------------------
# polya


def _lrf_ref(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(n)))


def test_log_rising_factorial_vs_loop_and_scipy() -> None:
    xs = np.array([0.01, 0.1, 0.5, 1.0, 2.5, 10.0, 37.0, 100.0])
    ns = np.arange(0, 41)
    got = np.asarray(log_rising_factorial(jnp.asarray(xs)[:, None], jnp.asarray(ns)[None, :]))
    ref = np.array([[_lrf_ref(x, n) for n in ns] for x in xs])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    ref_scipy = special.gammaln(xs[:, None] + ns[None, :]) - special.gammaln(xs[:, None])
    np.testing.assert_allclose(ref, ref_scipy, rtol=1e-10, atol=1e-10)
    # n == 0 gives exactly 0, for every x (also where lgamma(x) is large)
    z = np.asarray(log_rising_factorial(jnp.asarray([1e-6, 0.01, 1.0, 1e4, 1e6]), jnp.zeros(5, jnp.int32)))
    assert (z == 0.0).all()
    assert got.dtype == np.float32


def test_log_rising_factorial_large_x_small_n() -> None:
    """A sampler needs |error| << 1 in the log ratio: 1e-3 means a 0.1% probability error."""
    xs = np.array([1e3, 1e4, 1e5, 1e6])
    ns = np.array([1, 2, 5])
    got = np.asarray(log_rising_factorial(jnp.asarray(xs)[:, None], jnp.asarray(ns)[None, :]))
    ref = np.array([[_lrf_ref(x, n) for n in ns] for x in xs])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-3)


def _dm_ref(counts: np.ndarray, a: np.ndarray) -> float:
    """Direct product formula: p(sequence) = prod_k prod_{j<c_k}(a_k + j) / prod_{j<n}(A + j)."""
    total = 0.0
    big_a = float(a.sum())
    for row in np.atleast_2d(counts):
        for ck, ak in zip(row, a):
            total += sum(math.log(ak + j) for j in range(int(ck)))
        total -= sum(math.log(big_a + j) for j in range(int(row.sum())))
    return total


@pytest.mark.parametrize("conc", [0.1, 0.5, 2.0, "vector"])
def test_dirichlet_multinomial_log_evidence_vs_product(conc) -> None:
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 6, size=(5, 4))
    counts[1] = 0                      # an empty row contributes exactly 0
    counts[2, :3] = 0
    a = np.array([0.3, 1.0, 0.05, 2.0]) if conc == "vector" else np.full(4, float(conc))
    c = jnp.asarray(a, jnp.float32) if conc == "vector" else float(conc)
    got = float(dirichlet_multinomial_log_evidence(jnp.asarray(counts, jnp.int32), c))
    np.testing.assert_allclose(got, _dm_ref(counts, a), rtol=1e-5)
    # one row == a 1-d count vector
    got1 = float(dirichlet_multinomial_log_evidence(jnp.asarray(counts[0]), c))
    np.testing.assert_allclose(got1, _dm_ref(counts[:1], a), rtol=1e-5)
    assert float(dirichlet_multinomial_log_evidence(jnp.zeros((3, 4), jnp.int32), c)) == 0.0


def test_dirichlet_multinomial_sums_to_one_over_sequences() -> None:
    """exp(evidence) over all K^n sequences of length n sums to 1 (a probability)."""
    k, n, a = 3, 4, 0.7
    total = 0.0
    for seq in np.ndindex(*(k,) * n):
        c = np.bincount(np.array(seq), minlength=k)
        total += math.exp(float(dirichlet_multinomial_log_evidence(jnp.asarray(c), a)))
    assert abs(total - 1.0) < 1e-5


# ------------------------------------------------------------------------------------------
# schedule


@pytest.mark.parametrize("n,b", [(1, 1), (1, 5), (7, 1), (7, 2), (7, 3), (7, 7), (7, 100),
                                 (64, 8), (65, 8), (1000, 64), (3, 4)])
def test_strided_blocks_partition(n: int, b: int) -> None:
    index, valid = strided_blocks(n, b)
    assert index.dtype == np.int32 and valid.dtype == bool
    assert index.shape == valid.shape and index.ndim == 2
    nb = index.shape[0]
    assert nb == min(n, b)
    assert index.shape[1] == -(-n // nb)
    real = index[valid]
    np.testing.assert_array_equal(np.sort(real), np.arange(n))      # every index exactly once
    assert (index[~valid] == n).all()                                # padding holds n
    assert valid.sum() == n
    # interleaved: block j holds j, j+B, j+2B, ...
    for j in range(nb):
        np.testing.assert_array_equal(index[j][valid[j]], np.arange(j, n, nb))


@pytest.mark.parametrize("n,b", [(1, 64), (7, 3), (1000, 64), (999427, 64), (4096, 16)])
def test_strided_layout_is_lane_aligned_and_invertible(n: int, b: int) -> None:
    width = strided_width(n, b)
    if n >= 16 * LANE_MULTIPLE * b:          # wide blocks: whole SIMD vectors, padding <= 1/16
        assert width % LANE_MULTIPLE == 0 and width * b >= n > (width - LANE_MULTIPLE) * b
    else:                                    # narrow ones (tiny corpora): no padding beyond B
        assert width == -(-n // b)
    x = np.arange(n, dtype=np.int32)
    blocked = to_strided(x, b, fill=-1)
    assert blocked.shape == (b, width)
    assert blocked[(n - 1) % b, (n - 1) // b] == n - 1 and (blocked == -1).sum() == b * width - n
    np.testing.assert_array_equal(from_strided(blocked, n), x)
    np.testing.assert_array_equal(np.asarray(from_strided(to_strided(jnp.asarray(x), b), n)), x)


@pytest.mark.parametrize("n,b,chunk", [(0, 4, 8), (1, 64, 8), (1001, 7, 1), (1001, 7, 50),
                                        (4096, 16, 1 << 20), (5000, 64, 300)])
def test_the_layout_built_a_piece_at_a_time_is_the_whole_arrays_layout(n, b, chunk) -> None:
    """strided_from_chunks / strided_segments: the same [B, C] as to_strided of the whole array
    (C-contiguous, padding filled), whatever the piece size; segments from offsets equal the
    repeated segment ids (each token's document) without building them."""
    from jaxtopics.ops import strided_from_chunks, strided_segments

    rng = np.random.default_rng(n + b)
    x = rng.integers(0, 100, size=(n, 2)).astype(np.int32)
    width = strided_width(max(n, 1), b) + 3
    whole = np.swapaxes(np.concatenate([x, np.full((b * width - n, 2), -1, np.int32)])
                        .reshape(width, b, 2), 0, 1)
    piecewise = strided_from_chunks(lambda lo, hi: x[lo:hi], n, b, np.int32, -1, width, (2,),
                                    chunk=chunk)
    assert piecewise.flags.c_contiguous
    np.testing.assert_array_equal(piecewise, whole)
    np.testing.assert_array_equal(to_strided(x, b, fill=-1, width=width), whole)
    lengths = rng.integers(0, 6, size=max(1, n // 3))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    np.testing.assert_array_equal(
        strided_segments(offsets, b, fill=-1),
        to_strided(np.repeat(np.arange(len(lengths), dtype=np.int32), lengths), b, fill=-1))


def test_exchange_packs_arrays_into_one_all_gather_per_dtype() -> None:
    """Inside shard_map, exchange == one tiled all_gather of each array, whatever the mix of
    dtypes and trailing shapes, with one collective per dtype."""
    from jax.sharding import Mesh, PartitionSpec as P

    from jaxtopics.distributed import _shard_map as shard_map

    mesh = Mesh(np.array(jax.devices()[:4]), ("shards",))
    rng = np.random.default_rng(0)
    arrays = (rng.integers(0, 9, (4 * 5,), dtype=np.int32),
              rng.integers(0, 9, (4 * 5, 3), dtype=np.int32),
              rng.random((4 * 5,)).astype(np.float32),
              rng.random((4 * 5,)) < 0.5,
              rng.integers(0, 9, (4 * 5,), dtype=np.int32))

    def gathered(fn):
        return shard_map(fn, mesh=mesh, in_specs=(P("shards"),) * len(arrays),
                         out_specs=(P(),) * len(arrays), check_vma=False)(*arrays)

    got = gathered(lambda *a: exchange("shards", *a))
    want = gathered(lambda *a: tuple(jax.lax.all_gather(x, "shards", tiled=True) for x in a))
    for g, w, a in zip(got, want, arrays):
        assert g.dtype == a.dtype and g.shape == a.shape
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        np.testing.assert_array_equal(np.asarray(g), a)       # every shard's part, shard order
    hlo = jax.jit(lambda *a: shard_map(lambda *x: exchange("shards", *x), mesh=mesh,
                                       in_specs=(P("shards"),) * len(arrays),
                                       out_specs=(P(),) * len(arrays), check_vma=False)(*a)
                  ).lower(*arrays).compile().as_text()
    gathers = [line for line in hlo.splitlines() if " all-gather(" in line]
    assert len(gathers) == 3, gathers                                      # int32, float32, bool
    assert exchange(None, *arrays) == arrays


def test_exchange_others_is_every_other_shards_part() -> None:
    """exchange_others on shard s == the other shards' parts, from shard s+1 on (cyclically),
    for arrays with trailing axes too."""
    from jax.sharding import Mesh, PartitionSpec as P

    from jaxtopics.distributed import _shard_map as shard_map

    mesh = Mesh(np.array(jax.devices()[:4]), ("shards",))
    rng = np.random.default_rng(1)
    arrays = (rng.integers(0, 99, (4 * 3,), dtype=np.int32),
              rng.integers(0, 99, (4 * 3, 2), dtype=np.int32))
    got = shard_map(lambda *a: tuple(x[None] for x in exchange_others("shards", *a)), mesh=mesh,
                    in_specs=(P("shards"),) * 2, out_specs=(P("shards"),) * 2,
                    check_vma=False)(*arrays)
    for g, a in zip(got, arrays):
        parts = a.reshape((4, 3) + a.shape[1:])
        for s in range(4):
            want = np.concatenate([parts[(s + j) % 4] for j in (1, 2, 3)])
            np.testing.assert_array_equal(np.asarray(g[s]), want)


@pytest.mark.parametrize("shards, rows", [(4, 10), (3, 9), (2, 1)])
def test_row_groups_rotate_once_round_and_join(shards: int, rows: int) -> None:
    """Shard p takes group p (rows p, p+G, ...; zero rows pad the last ones), holds group
    (p + s) mod G after s rotations and its own again after G; join_groups rebuilds the table
    on every shard. Each shard adds its index + 1 to the group it holds in each sub-epoch, so
    every row ends with 1 + 2 + ... + G added: each group passed every shard exactly once."""
    from jax.sharding import Mesh, PartitionSpec as P

    from jaxtopics.distributed import _shard_map as shard_map

    mesh = Mesh(np.array(jax.devices()[:shards]), ("shards",))
    table = np.arange(rows * 2, dtype=np.int32).reshape(rows, 2)
    per = -(-rows // shards)

    def local(t):
        me = jax.lax.axis_index("shards")
        mine = row_group(t, me, shards)
        held = []
        for s in range(shards):
            held.append(mine)
            mine = rotate("shards", mine + me + 1, shards)
        return jnp.stack(held)[None], join_groups("shards", mine, rows)[None]

    held, joined = shard_map(local, mesh=mesh, in_specs=P(), out_specs=(P("shards"),) * 2,
                             check_vma=False)(jnp.asarray(table))
    padded = np.concatenate([table, np.zeros((per * shards - rows, 2), np.int32)])
    for p in range(shards):
        for s in range(shards):     # before sub-epoch s: group (p + s) mod G, with the adds of
            q = (p + s) % shards    # the shards that held it in sub-epochs 0..s-1 (q - j mod G)
            added = sum((q - j) % shards + 1 for j in range(s))
            np.testing.assert_array_equal(np.asarray(held[p, s]), padded[q::shards] + added)
        np.testing.assert_array_equal(np.asarray(joined[p]),
                                      table + shards * (shards + 1) // 2)


@pytest.mark.parametrize("n,b", [(0, 3), (3, 0), (-1, 2)])
def test_strided_blocks_rejects_bad_sizes(n: int, b: int) -> None:
    with pytest.raises(ValueError):
        strided_blocks(n, b)


# ------------------------------------------------------------------------------------------
# mh


def test_propose_from_members_distribution() -> None:
    """Topic t ~ (n_gt + s) / (L_g + K s) per group, for contiguous and indexed member lists."""
    k, s = 5, 0.3
    rng = np.random.default_rng(9)
    # topics of 12 tokens; groups are slices of `members`
    topics = jnp.asarray(np.array([0, 0, 3, 1, 4, 4, 4, 2, 0, 1, 3, 3]), jnp.int32)
    groups = [(0, 4), (4, 3), (7, 5), (3, 0), (11, 1)]   # (start, length); (3, 0) is empty
    n = 60_000
    alpha = FAMILY_ALPHA / (2 * len(groups))
    perm = rng.permutation(12).astype(np.int32)
    for members in (None, jnp.asarray(perm)):
        for g, (start, length) in enumerate(groups):
            u = jnp.asarray(_uniforms(100 + g, n))
            got = np.asarray(jax.jit(propose_from_members, static_argnums=(5, 6))(
                u, jnp.full(n, start, jnp.int32), jnp.full(n, length, jnp.int32), members,
                topics, s, k))
            pos = np.arange(start, start + length)
            member_topics = np.asarray(topics)[pos if members is None else perm[pos]]
            probs = (np.bincount(member_topics, minlength=k) + s) / (length + k * s)
            _check_distribution(got, probs, alpha)
            assert got.dtype == np.int32


def test_propose_from_members_edges() -> None:
    """u=0 and u just below 1 stay in range; an empty group proposes uniformly in [0, K)."""
    topics = jnp.array([2, 2, 1], jnp.int32)
    top = np.float32(1) - np.float32(2.0 ** -24)
    for start, length in ((0, 3), (1, 2), (3, 0)):
        u = jnp.asarray(np.array([0.0, top, 1e-7, 0.5], np.float32))
        t = np.asarray(propose_from_members(u, jnp.full(4, start), jnp.full(4, length), None,
                                            topics, 0.01, 4))
        assert t.min() >= 0 and t.max() < 4
        if length:
            assert t[0] == int(topics[start])          # u=0 picks the first member
        else:
            assert t[0] == 0 and t[1] == 3             # uniform part spans all K


def test_mh_accept() -> None:
    u = jnp.array([0.0, 0.5, 0.99, 0.3])
    np.testing.assert_array_equal(np.asarray(mh_accept(u, jnp.array([0.0, 0.6, 5.0, 0.3]))),
                                  [False, True, True, False])


# ------------------------------------------------------------------------------------------
# log_dirichlet


@pytest.mark.parametrize("axis", [-1, 0])
def test_log_dirichlet_normalised_and_mean(axis: int) -> None:
    a = np.array([0.5, 1.0, 2.0, 0.01, 4.0])
    n = 40_000
    conc = np.broadcast_to(a, (n, a.size))
    if axis == 0:
        conc = conc.T
    lp = np.asarray(jax.jit(log_dirichlet, static_argnums=2)(jax.random.key(0), jnp.asarray(conc), axis))
    assert lp.shape == conc.shape and np.isfinite(lp).all()
    p = np.exp(lp.astype(np.float64))
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, atol=1e-5)
    mean = p.mean(axis=1 - (axis % 2))
    big_a = a.sum()
    var = a * (big_a - a) / (big_a**2 * (big_a + 1))
    z = stats.norm.isf(FAMILY_ALPHA / (2 * a.size))
    assert (np.abs(mean - a / big_a) < z * np.sqrt(var / n)).all(), (mean, a / big_a)


def test_log_gamma_matches_the_gamma_distribution() -> None:
    """Kolmogorov-Smirnov of P(a, exp(draw)) (uniform under Gamma(a, 1)) on 20,000 draws per
    concentration, below 1 (the boost), at 1, and up to 1e6 (float32 cancellation in the
    acceptance test would show there), all in one call."""
    conc = np.array([0.01, 0.3, 1.0, 1.7, 30.0, 1e6])
    n = 20_000
    draws = np.asarray(jax.jit(log_gamma)(jax.random.key(3), jnp.repeat(jnp.asarray(conc), n)),
                       np.float64).reshape(conc.size, n)
    assert np.isfinite(draws).all()
    for a, x in zip(conc, draws):
        # P(a, x) ~ x^a / Gamma(a + 1) for small x: no underflow of exp(x) at a = 0.01
        u = np.exp(a * x - special.gammaln(a + 1)) if a < 0.05 else special.gammainc(a, np.exp(x))
        assert stats.kstest(u, "uniform").pvalue > FAMILY_ALPHA / conc.size, a


def test_log_gamma_reproducible_and_nan_where_undefined() -> None:
    conc = jnp.array([2.0, 0.0, -1.0, jnp.nan, jnp.inf, 0.5])
    one, two = log_gamma(jax.random.key(5), conc), log_gamma(jax.random.key(5), conc)
    np.testing.assert_array_equal(np.asarray(one), np.asarray(two))
    assert np.isfinite(np.asarray(one)[[0, 5]]).all() and np.isnan(np.asarray(one)[1:5]).all()


def test_log_dirichlet_tiny_concentration_finite() -> None:
    conc = jnp.full((100, 20), 0.01)
    lp = np.asarray(log_dirichlet(jax.random.key(1), conc))
    assert np.isfinite(lp).all()
    np.testing.assert_allclose(special.logsumexp(lp.astype(np.float64), axis=1), 0.0, atol=1e-5)


def test_table_cells_reads_elementwise() -> None:
    from jaxtopics.ops import table_cells

    table = jnp.arange(20, dtype=jnp.int32).reshape(4, 5)
    rows = jnp.array([0, 3, 2, 3], jnp.int32)
    cols = jnp.array([4, 0, 2, 4], jnp.int32)
    np.testing.assert_array_equal(np.asarray(table_cells(table, rows, cols)), [4, 15, 12, 19])


def test_block_uniforms_are_uniform_independent_and_reproducible() -> None:
    """Uniform on [0, 1) (Kolmogorov-Smirnov), no lag-1 or pair correlation (the two halves of a
    hash pair), different per block index and per key, identical for the same (key, index)."""
    key = jax.random.key(7)
    u = np.asarray(block_uniforms(key, 3, (50_000,)), np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    se = 1 / math.sqrt(u.size / 2)                       # sd of a correlation of n/2 pairs
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 * se
    assert abs(np.corrcoef(u[:25_000], u[25_000:])[0, 1]) < 5 * se
    np.testing.assert_array_equal(u, np.asarray(block_uniforms(key, 3, (50_000,)), np.float64))
    assert not np.array_equal(u[:100], np.asarray(block_uniforms(key, 4, (100,))))
    assert not np.array_equal(u[:100], np.asarray(block_uniforms(jax.random.key(8), 3, (100,))))
    shaped = block_uniforms(key, 3, (2, 5, 10))
    assert shaped.shape == (2, 5, 10) and shaped.dtype == jnp.float32
    batched = jax.vmap(lambda k: block_uniforms(k, 1, (4,)))(jax.random.split(key, 3))
    assert batched.shape == (3, 4) and len({tuple(r) for r in np.asarray(batched)}) == 3
    rbg = block_uniforms(jax.random.key(1, impl="rbg"), 0, (1000,))
    assert rbg.shape == (1000,) and 0.4 < float(rbg.mean()) < 0.6
    # a chunk's uniforms made inside the chunk are the block's own
    at = jnp.array([[0, 49_999], [25_000, 7]])
    for k in (key, jax.random.key(1, impl="rbg")):
        whole = np.asarray(block_uniforms(k, 3, (50_000,)))
        np.testing.assert_array_equal(np.asarray(block_uniforms(k, 3, (50_000,), positions=at)),
                                      whole[np.asarray(at)])


@pytest.mark.parametrize("size", [1, 2, 7, 16, 1001])
def test_threefry_counter_bits_are_jax_threefry(size: int) -> None:
    """The written-out hash is bitwise JAX's Threefry-2x32 of the counters 0..size-1 (odd sizes
    padded as JAX pads them), for several keys, jitted and under vmap."""
    from jax.extend.random import threefry_2x32

    from jaxtopics.ops.sampling import threefry_counter_bits

    keys = jax.random.key_data(jax.random.split(jax.random.key(size), 4))
    keys = jnp.concatenate([keys, jnp.array([[0, 0], [2**32 - 1, 2**32 - 1]], jnp.uint32)])
    want = jax.vmap(lambda k: threefry_2x32(k, jnp.arange(size, dtype=jnp.uint32)))(keys)
    every = jnp.arange(size)
    got = jax.jit(jax.vmap(lambda k: threefry_counter_bits(k, size, every)))(keys)
    assert got.dtype == jnp.uint32 and got.shape == (6, size)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    some = jnp.array([[size - 1, 0], [size // 2, size // 3]])
    np.testing.assert_array_equal(np.asarray(threefry_counter_bits(keys[0], size, some)),
                                  np.asarray(want[0])[np.asarray(some)])


def test_block_uniforms_of_a_folded_block_key() -> None:
    """index=None takes `key` as the block's key: the numbers of block_uniforms(sweep key, b)."""
    key = jax.random.key(7)
    at = jnp.array([0, 999, 500])
    np.testing.assert_array_equal(
        np.asarray(block_uniforms(jax.random.fold_in(key, 3), None, (1000,), positions=at)),
        np.asarray(block_uniforms(key, 3, (1000,)))[np.asarray(at)])
