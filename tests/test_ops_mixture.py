"""The ops added for document-level samplers: block_log_predictive's product form for small
multiplicities, and move_counts with a removal weight that differs from the added one."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from jaxtopics.ops import block_log_predictive, move_counts
from jaxtopics.ops.polya import PRODUCT_MAX_COUNT


def _reference(rows, counts, totals, length, s, ts) -> tuple[np.ndarray, np.ndarray]:
    """float64 sum of logs of every factor (the seed's products, "+ j - 1" corrected), and the
    sum of the factors' |log| (the scale of float32 rounding in any way of adding them up)."""
    rows, counts = np.asarray(rows, np.float64), np.asarray(counts)
    out = np.zeros(rows.shape[:-2] + rows.shape[-1:])
    mag = np.zeros_like(out)
    for idx in np.ndindex(*rows.shape[:-2]):
        for k in range(rows.shape[-1]):
            num = [math.log(rows[idx][m, k] + s + j) for m in range(rows.shape[-2])
                   for j in range(int(counts[idx][m]))]
            den = [math.log(float(totals[idx][k]) + ts + i) for i in range(int(length[idx]))]
            out[idx][k] = sum(num) - sum(den)
            mag[idx][k] = sum(map(abs, num)) + sum(map(abs, den))
    return out, mag


@pytest.mark.parametrize("max_count", [1, 3, 4, 5, 9, PRODUCT_MAX_COUNT])
@pytest.mark.parametrize("scale", [1, 1000, 2**28])      # counts up to 2^30 (int32)
def test_product_form_matches_lgamma_form_and_float64(max_count: int, scale: int) -> None:
    rng = np.random.default_rng(max_count)
    rows = rng.integers(0, 5, (6, 7, 11)) * scale                   # [docs, items, groups]
    counts = rng.integers(0, max_count + 1, (6, 7))
    counts[0] = 0                                                    # an empty block
    counts[1, :] = max_count                                         # the largest multiplicity
    length = counts.sum(1)
    totals = rows.max(1) + rng.integers(0, 50, (6, 11))           # stays below 2^31
    args = (jnp.asarray(rows, jnp.int32), jnp.asarray(counts, jnp.int32),
            jnp.asarray(totals, jnp.int32), jnp.asarray(length, jnp.int32), 0.1, 11 * 0.1)
    fast = np.asarray(block_log_predictive(*args, max_count=max_count), np.float64)
    slow = np.asarray(block_log_predictive(*args), np.float64)
    ref, mag = _reference(rows, counts, totals, length, 0.1, 1.1)
    assert np.isfinite(fast).all()
    assert np.max(np.abs(fast - ref) / (mag + 1.0)) < 1e-6          # float32 rounding: ~8 eps
    assert np.max(np.abs(slow - ref) / (mag + 1.0)) < 1e-5          # lgamma differences
    np.testing.assert_array_equal(fast[0], slow[0])                 # empty block: exactly -den


def test_product_form_beyond_limit_uses_lgamma() -> None:
    counts = jnp.asarray([[PRODUCT_MAX_COUNT + 3]])
    rows = jnp.asarray([[[2, 0]]])
    got = block_log_predictive(rows, counts, jnp.asarray([[2, 0]]), counts.sum(1), 0.5, 1.0,
                               max_count=PRODUCT_MAX_COUNT + 3)
    want, _ = _reference(np.asarray(rows), np.asarray(counts), np.asarray([[2, 0]]),
                         np.asarray(counts.sum(1)), 0.5, 1.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_move_counts_with_removal_weight() -> None:
    table = jnp.asarray([[3, 0, 1], [0, 2, 0]], jnp.int32)
    rows = jnp.asarray([0, 1, 1])
    old = jnp.asarray([0, 1, 0])
    new = jnp.asarray([2, 2, 1])
    weight = jnp.asarray([2, 1, 4])
    removed = jnp.asarray([2, 1, 0])                # the third item joins column 1 from nowhere
    got = np.asarray(move_counts(table, rows, old, new, weight, removed))
    np.testing.assert_array_equal(got, [[1, 0, 3], [0, 5, 1]])
    totals = np.asarray(move_counts(table.sum(0), None, old, new, weight, removed))
    np.testing.assert_array_equal(totals, got.sum(0))
    same = np.asarray(move_counts(table, rows, old, new, weight))    # default: removed = weight
    np.testing.assert_array_equal(same, np.asarray(move_counts(table, rows, old, new, weight, weight)))
