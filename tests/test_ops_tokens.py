"""Tests for the token-level ops primitives: ``repeat_ranks``, ``token_log_predictive``,
``move_rows``, ``collapsed_topic_draw`` (jaxtopics.ops)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxtopics.ops import (
    block_log_predictive,
    collapsed_topic_draw,
    grouped_counts,
    move_rows,
    repeat_ranks,
    token_log_predictive,
)


def _np_ranks(items, valid):
    """Reference: sorted valid items, then for each the number of earlier equal ones."""
    out_items, out_ranks = [], []
    for row, ok in zip(items, valid):
        s = sorted(int(x) for x, v in zip(row, ok) if v)
        seen: dict[int, int] = {}
        ranks = []
        for x in s:
            ranks.append(seen.get(x, 0))
            seen[x] = seen.get(x, 0) + 1
        pad = len(row) - len(s)
        out_items.append(s + [0] * pad)
        out_ranks.append(ranks + [None] * pad)
    return out_items, out_ranks


def test_repeat_ranks_matches_reference() -> None:
    rng = np.random.default_rng(0)
    items = rng.integers(0, 4, size=(50, 9))
    valid = np.arange(9)[None, :] < rng.integers(0, 10, size=(50, 1))
    valid[3] = rng.random(9) < 0.5                       # padding need not be a suffix on input
    s, r, v = (np.asarray(x) for x in repeat_ranks(jnp.asarray(items), jnp.asarray(valid), 4))
    ref_items, ref_ranks = _np_ranks(items, valid)
    np.testing.assert_array_equal(v, np.arange(9)[None, :] < valid.sum(1, keepdims=True))
    for i in range(50):
        n = int(valid[i].sum())
        assert s[i, :n].tolist() == ref_items[i][:n] and (s[i, n:] == 0).all()
        assert r[i, :n].tolist() == ref_ranks[i][:n]


def _random_block(rng, length, k, num_items):
    items = rng.integers(0, num_items, size=length)
    rows = rng.integers(0, 30, size=(num_items, k))
    totals = rows.sum(0) + rng.integers(0, 50, size=k)
    return items, rows, totals


@pytest.mark.parametrize("length", [1, 7, 40])
def test_token_log_predictive_equals_distinct_item_form(length: int) -> None:
    """Sum of per-token logs == lgamma form of block_log_predictive (same quantity)."""
    rng = np.random.default_rng(length)
    k, num_items, a, b = 6, 5, 0.3, 0.3 * 6
    items, rows, totals = _random_block(rng, length, k, num_items)
    width = length + 3                                    # padding slots
    padded = np.concatenate([items, np.zeros(3, np.int64)])
    valid = np.arange(width) < length
    s, ranks, sv = repeat_ranks(jnp.asarray(padded)[None], jnp.asarray(valid)[None], num_items)
    got = token_log_predictive(jnp.asarray(rows)[s], ranks, jnp.asarray(totals)[None], sv, a, b)[0]
    distinct, mult = grouped_counts(items, np.array([0, length]))
    want = block_log_predictive(rows[distinct[0]], mult[0], totals, length, a, b)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-4)
    # and against float64 rising factorials
    ref = [sum(math.lgamma(rows[i, kk] + a + c) - math.lgamma(rows[i, kk] + a)
               for i, c in zip(*np.unique(items, return_counts=True)))
           - (math.lgamma(totals[kk] + b + length) - math.lgamma(totals[kk] + b)) for kk in range(k)]
    np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5, atol=2e-4)


def test_token_log_predictive_long_block_does_not_underflow() -> None:
    """A 10,000-token block: finite, and equal to the float64 lgamma form to float32 accuracy."""
    rng = np.random.default_rng(1)
    length, k, num_items, a = 10_000, 3, 40, 0.1
    items, rows, totals = _random_block(rng, length, k, num_items)
    s, ranks, sv = repeat_ranks(jnp.asarray(items)[None], jnp.ones((1, length), bool), num_items)
    got = np.asarray(token_log_predictive(jnp.asarray(rows)[s], ranks, jnp.asarray(totals)[None], sv,
                                          a, k * a))[0]
    assert np.isfinite(got).all() and (got < -1e4).all()
    u, c = np.unique(items, return_counts=True)
    ref = np.array([sum(math.lgamma(rows[i, kk] + a + n) - math.lgamma(rows[i, kk] + a)
                        for i, n in zip(u, c))
                    - (math.lgamma(totals[kk] + k * a + length) - math.lgamma(totals[kk] + k * a))
                    for kk in range(k)])
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_move_rows_matches_numpy_and_cancels() -> None:
    rng = np.random.default_rng(2)
    table = rng.integers(5, 20, size=(6, 4)).astype(np.int32)
    old = np.array([0, 2, 3, 3, 6])                       # 6: out of range, dropped
    new = np.array([1, 2, 0, 5, 6])
    amount = rng.integers(0, 5, size=(5, 4)).astype(np.int32)
    got = np.asarray(move_rows(jnp.asarray(table), jnp.asarray(old), jnp.asarray(new), jnp.asarray(amount)))
    want = table.copy()
    for o, n_, a in zip(old, new, amount):
        if o < 6 and n_ < 6:
            want[o] -= a
            want[n_] += a
    np.testing.assert_array_equal(got, want)
    one_d = move_rows(jnp.arange(4), jnp.array([1, 2]), jnp.array([3, 2]), jnp.array([1, 5]))
    np.testing.assert_array_equal(np.asarray(one_d), [0, 0, 2, 4])


def test_collapsed_topic_draw_distribution() -> None:
    """Draws from (n_gk + a - [k=old])(n_kw + b - [k=old]) / (n_k + V b - [k=old]) (chi-square)."""
    k, v, a, b, n = 5, 7, 0.3, 0.2, 200_000
    group = np.array([3, 0, 2, 1, 4])
    word = np.array([1, 2, 0, 3, 1])
    topic = np.array([10, 12, 9, 14, 11])
    old = 3
    own = np.arange(k) == old
    w = (group + a - own) * (word + b - own) / (topic + v * b - own)
    u = jax.random.uniform(jax.random.key(0), (n,))
    rep = lambda x: jnp.broadcast_to(jnp.asarray(x), (n, k))
    draws = np.asarray(collapsed_topic_draw(u, rep(group), rep(word), jnp.asarray(topic),
                                            jnp.full((n,), old), a, b, v))
    counts = np.bincount(draws, minlength=k)
    assert stats.chisquare(counts, w / w.sum() * n).pvalue > 1e-3
