"""Categorical sampling from unnormalised weights, without a [N, K] array and without cumsum.

XLA:CPU lowers ``cumsum`` over the last axis to a windowed reduction 40-60x slower than a row
sum, and row reductions and reshape-reductions over short minor axes are slow there too. So
inverse-CDF sampling is two-level and made only of contiguous slices, small matmuls and one
gather. The K topics are dealt into G ~ sqrt(K) *strided* groups (group g = topics g, g+G,
g+2G, ...), so the group masses are the sum of S = ceil(K/G) contiguous column slices of width G
(O(K) adds that fuse into one loop); a [G, G] x [G, rows] triangular matmul gives their prefix
sums, and a [S, S] x [S, rows] one the prefix sums inside the chosen group (the small steps work
transposed, rows on the minor axis, so that they vectorise over the rows). Per row this costs
O(K + G^2 + S^2) = O(3K), against O(K G) for a [K, G] group-indicator matmul (measured on
XLA:CPU: same speed at K=50, 1.6x faster whole sweeps at K=500).
Matmuls run at HIGHEST precision so a GPU does not drop to TF32 in the prefix sums.
"""

from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp
from jax import Array

__all__ = ["block_uniforms", "categorical", "categorical_logits", "chunked_map",
           "gather_materialised", "log_dirichlet", "log_gamma", "materialised",
           "threefry_counter_bits", "uniform_index", "uniform_integer"]

_HIGHEST = jax.lax.Precision.HIGHEST


def _pick(prefix: Array, target: Array, weights: Array, last: Array | int | None = None) -> Array:
    """Index i along axis 0 with prefix[i-1] <= target < prefix[i]; never an entry of zero weight.

    `last` [rows] (default n-1): the last index that can hold weight (entries past it are
    padding of weight 0); a target rounded past the end picks it.

    `prefix`, `weights` [n, rows] (rows on the minor axis, so every step is a vector op along the
    rows), `target` [rows]. Rounding can put `target` past the last prefix or onto a zero-weight
    entry (matmul prefix sums are not guaranteed monotone in the last bit); then fall back to the
    heaviest entry, an event of probability ~1e-7 that cannot select an impossible category. The
    fallback's argmax runs only when some row needs it (``lax.cond``; an argmax for every row
    cost 10 % of a K=50 sweep) on the CPU; elsewhere it always runs, as a select (XLA's GPU
    conditional copies its predicate to the host: one synchronisation per chunk). The result is
    the same either way.
    """
    n = prefix.shape[0]
    i = jnp.minimum(jnp.sum(prefix <= target[None, :], axis=0, dtype=jnp.int32),
                    n - 1 if last is None else last)
    ok = jnp.take_along_axis(weights, i[None, :], 0)[0] > 0

    def fallback():
        return jnp.where(ok, i, jnp.argmax(weights, axis=0).astype(jnp.int32))
    if jax.default_backend() != "cpu":
        return fallback()
    return jax.lax.cond(jnp.all(ok), lambda: i, fallback)


def categorical(u: Array, weights: Array) -> Array:
    """Draw i ~ weights[..., i] / sum(weights[...]) by inverse CDF, one uniform u per row.

    `weights` [..., K] is non-negative with a positive sum per row; `u` [...] lies in [0, 1).
    Returns int32 [...]. Exact up to float32 rounding of the prefix sums.

    The group and inner steps work on [G, rows] and [S, rows] (transposed): their reductions run
    along the major axis, vectorised over the rows, where a reduction over a minor axis of ~sqrt(K)
    entries is a short scalar loop per row on XLA:CPU (1.2x faster draws at K=50).
    """
    *batch, k = weights.shape
    w = weights.reshape(-1, k).astype(jnp.float32)
    u = u.reshape(-1)
    g = math.isqrt(k - 1) + 1 if k > 1 else 1          # groups (the width of each slice)
    s = -(-k // g)                                       # slices = members per group
    group_weight = None
    for j in range(s):                                   # group g holds topics g + j G
        part = w[:, j * g:(j + 1) * g]
        if part.shape[1] < g:
            part = jnp.pad(part, ((0, 0), (0, g - part.shape[1])))
        group_weight = part if group_weight is None else group_weight + part
    group_weight = group_weight.T                                                       # [G, rows]
    group_prefix = jnp.matmul(_lower_ones(g), group_weight, precision=_HIGHEST)
    target = u * group_prefix[-1]
    gi = _pick(group_prefix, target, group_weight)
    before = jnp.take_along_axis(group_prefix - group_weight, gi[None, :], 0)[0]
    cols = gi[:, None] + g * jnp.arange(s)[None, :]                                    # [rows, S]
    inner = jnp.where(cols < k, jnp.take_along_axis(w, jnp.minimum(cols, k - 1), 1), 0.0).T
    inner_prefix = jnp.matmul(_lower_ones(s), inner, precision=_HIGHEST)                # [S, rows]
    # group gi's members past topic K-1 are padding: a target rounded past the group's own sum
    # (its prefix comes from another matmul than the group sums: ~1 token in 20,000) takes the
    # last real member, not the argmax fallback (4 % of a K=50 sweep when it ran)
    last = jnp.where(gi < k - g * (s - 1), s - 1, s - 2)
    ii = _pick(inner_prefix, target - before, inner, last)
    return (gi + g * ii).astype(jnp.int32).reshape(batch)


def _lower_ones(n: int) -> Array:
    """[n, n] float32 with ones on and below the diagonal: it @ x = inclusive prefix sums of x
    along axis 0."""
    return jnp.tril(jnp.ones((n, n), jnp.float32))


def categorical_logits(u: Array, logits: Array) -> Array:
    """`categorical` from unnormalised log-weights (max-shifted, so no overflow/underflow)."""
    shifted = logits - jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True))
    return categorical(u, jnp.exp(shifted))


def block_uniforms(key: Array, index: Array | None, shape: tuple[int, ...],
                   positions: Array | None = None) -> Array:
    """float32 uniforms in [0, 1) of `shape` for block `index` of a sweep keyed `key`; with
    `positions` (int, any shape) only those flat entries of the block's uniforms. `index=None`:
    `key` is the block's key already, ``fold_in(sweep key, index)`` (folded once per block by a
    caller that asks for the block's uniforms chunk by chunk).

    Made per block inside the sweep's loop, so no [N] array of uniforms, and none of the PRNG's
    [N]-sized temporaries (16 bytes per token for ``jax.random.uniform`` of a whole sweep), ever
    exists. The bits are the Threefry-2x32 hash of the counters 0..n-1 under the key
    ``fold_in(key, index)``, two counters to a hash (JAX's classic, non-partitionable stream:
    bitwise ``jax.extend.random.threefry_2x32(key, arange(n))``); ``jax.random.uniform`` of one
    block costs one hash per number. `positions` lets a chunked loop make each chunk's uniforms
    inside the chunk, fused into their one consumer (the same numbers; ``threefry_counter_bits``).
    Keys of another PRNG implementation fall back to ``jax.random.uniform``.
    """
    if index is not None:
        key = jax.random.fold_in(key, index)
    size = math.prod(shape)
    raw = jax.random.key_data(key)
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) and raw.shape != (2,):
        u = jax.random.uniform(key, shape)
        return u if positions is None else u.reshape(-1)[positions]
    if positions is None:
        # JAX's own hash materialises the block's bits once: its consumers (the MH kernel
        # reads each uniform in several places) must not each recompute an elementwise hash
        from jax.extend.random import threefry_2x32
        bits = threefry_2x32(raw, jnp.arange(size, dtype=jnp.uint32)).reshape(shape)
    else:
        bits = threefry_counter_bits(raw, size, positions)
    one_to_two = jax.lax.bitcast_convert_type((bits >> 9) | jnp.uint32(0x3F800000), jnp.float32)
    return one_to_two - 1.0


#: Threefry-2x32's rotation constants, rounds 1-4 and 5-8 (Salmon et al. 2011, Table 4)
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry_counter_bits(key_pair: Array, size: int, positions: Array) -> Array:
    """uint32, shaped like `positions`: entries `positions` of the Threefry-2x32 hash (20 rounds,
    Salmon et al. 2011) of the counters 0..size-1 under the uint32 [2] `key_pair`, paired as JAX
    pairs them (counter i with i + ceil(size/2), a zero counter padding an odd size): entry p of
    ``jax.extend.random.threefry_2x32(key_pair, arange(size))``.

    Elementwise and written out round by round, so XLA:CPU fuses the hash into the loop of its
    consumer. JAX's CPU lowering runs the 5 key injections as a rolled ``while`` loop that
    writes the state to memory at every step (~11 % of a K=50 LDA sweep); computing each
    entry's pair costs two hashes per pair instead of one and is still ~3x faster there. Give
    it a consumer that reads each entry once: XLA may recompute a fused producer per use.
    """
    half = -(-size // 2)
    p = positions.astype(jnp.uint32)
    first = p < half                      # entry p is the first word of pair p, else of p - half
    c0 = jnp.where(first, p, p - half)
    c1 = jnp.where(c0 + half < size, c0 + half, jnp.uint32(0))
    k0, k1 = key_pair[0], key_pair[1]
    keys = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0, x1 = c0 + keys[0], c1 + keys[1]
    for i in range(5):                                 # 5 x (4 rounds + key injection)
        for r in _THREEFRY_ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << jnp.uint32(r)) | (x1 >> jnp.uint32(32 - r)))
        x0 = x0 + keys[(i + 1) % 3]
        x1 = x1 + keys[(i + 2) % 3] + jnp.uint32(i + 1)
    return jnp.where(first, x0, x1)


def uniform_index(u: Array, n: Array) -> Array:
    """floor(u * n) clamped to [0, n-1] for u in [0, 1) (int32); rounding-safe.

    A float32 uniform holds 23 random bits, so the indices' probabilities differ by up to
    n / 2^23 relative (3.5 % at n = 300k; past n = 2^23 some indices are never drawn): for
    small n only (a document's tokens, K topics); :func:`uniform_integer` for counts of
    tokens."""
    n = jnp.asarray(n)
    return jnp.clip(jnp.floor(u * n).astype(jnp.int32), 0, jnp.maximum(n.astype(jnp.int32) - 1, 0))


def uniform_integer(key: Array, n: Array, shape: tuple[int, ...] = ()) -> Array:
    """int32 uniform on {0, ..., n-1} (0 where n < 1), `n` broadcast to `shape`: JAX's
    ``randint``, from two 32-bit draws per value (probabilities equal to ~n / 2^64), where
    :func:`uniform_index`'s float32 product is not uniform for large n."""
    n = jnp.asarray(n, jnp.int32)
    return jax.random.randint(key, shape, 0, jnp.maximum(n, 1), dtype=jnp.int32)


def materialised(x: Array) -> Array:
    """x [M], the same values, computed once: an identity scatter, which XLA does not fuse
    into its consumers (:func:`gather_materialised`)."""
    m = x.shape[0]
    return jnp.zeros_like(x).at[jnp.arange(m)].set(x, unique_indices=True, indices_are_sorted=True)


def gather_materialised(x: Array, idx: Array) -> Array:
    """x[idx] with x [M] materialised first: XLA:CPU otherwise fuses x's producer (logs, a
    comparison of logs) into the gather and recomputes it for every index in scalar code
    (~15x slower on 300k tokens in HDP's split-merge moves). The values are the same."""
    return materialised(x)[idx]


def chunked_map(fn: Callable, xs, chunk: int):
    """``fn`` over the leading axis of the pytree `xs` in chunks of `chunk` rows (``lax.map``).

    Bounds the working set of per-row [K] computations to [chunk, K] (no [N, K] array). ``fn``
    maps a chunk to a pytree with the same leading size; the tail chunk is zero-padded and cut.
    """
    n = jax.tree_util.tree_leaves(xs)[0].shape[0]
    if n <= chunk:
        return fn(xs)
    m = -(-n // chunk)
    pad = m * chunk - n

    def split(a):
        a = jnp.pad(a, [(0, pad)] + [(0, 0)] * (a.ndim - 1))
        return a.reshape((m, chunk) + a.shape[1:])

    out = jax.lax.map(fn, jax.tree_util.tree_map(split, xs))
    return jax.tree_util.tree_map(lambda a: a.reshape((m * chunk,) + a.shape[2:])[:n], out)


def log_gamma(key: Array, concentration: Array) -> Array:
    """log of Gamma(concentration, 1) variates, elementwise (float32; NaN where the
    concentration is not a finite number > 0).

    Marsaglia & Tsang (2000): for a >= 1, d = a - 1/3, c = 1 / sqrt(9 d), x ~ N(0, 1),
    y = c x, v = (1 + y)^3; accept d v when y > -1 and log U < x^2 / 2 + d (1 - v + log v)
    (acceptance >= 0.95 for every a >= 1), with 1 - v + log v = 3 (log1p(y) - y) - 3 y^2 - y^3
    (the naive form loses up to ~1e-2 of the log acceptance to float32 cancellation at a ~ 1e5).
    For a < 1, G(a) = G(a + 1) U^(1/a), kept in log space so that tiny concentrations do not
    underflow. All elements propose at once and the loop runs until every one has accepted
    (a few rounds), round r's normals and uniforms drawn from ``fold_in(key, r)``. Exact, like
    ``jax.random.loggamma``, whose per-element rejection loops cost ~1.1 s of XLA:CPU
    compilation per call site, against ~0.2 s here.
    """
    a = jnp.asarray(concentration, jnp.float32)
    bad = ~(jnp.isfinite(a) & (a > 0))
    boost = a < 1.0
    d = jnp.where(bad, 1.0, jnp.where(boost, a + 1.0, a)) - 1.0 / 3.0
    c = jax.lax.rsqrt(9.0 * d)
    k_boost, k_loop = jax.random.split(key)

    def propose(carry):
        r, done, value = carry
        k_x, k_u = jax.random.split(jax.random.fold_in(k_loop, r))
        x = jax.random.normal(k_x, a.shape)
        log_u = jnp.log1p(-jax.random.uniform(k_u, a.shape))
        y = c * x
        log1p_y = jnp.log1p(jnp.maximum(y, -1.0 + 1e-7))   # y <= -1 is refused below
        excess = 3.0 * (log1p_y - y) - 3.0 * y * y - y * y * y
        ok = (y > -1.0) & (log_u < 0.5 * x * x + d * excess) & ~done
        return r + 1, done | ok, jnp.where(ok, jnp.log(d) + 3.0 * log1p_y, value)

    start = (jnp.int32(0), bad, jnp.full(a.shape, jnp.nan, jnp.float32))
    _, _, value = jax.lax.while_loop(lambda s_: ~jnp.all(s_[1]), propose, start)
    log_u = jnp.log1p(-jax.random.uniform(k_boost, a.shape))
    return jnp.where(boost & ~bad, value + log_u / jnp.where(boost, a, 1.0), value)


def log_dirichlet(key: Array, concentration: Array, axis: int = -1) -> Array:
    """log of a Dirichlet(concentration) draw along `axis`, via log-gamma variates.

    Stays finite for tiny concentrations (alpha=0.01), where gamma variates underflow to 0.
    """
    g = log_gamma(key, concentration.astype(jnp.float32))
    return g - jax.scipy.special.logsumexp(g, axis=axis, keepdims=True)
