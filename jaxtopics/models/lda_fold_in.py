"""LDA's fold-in of unseen documents: topics held fixed at the fitted phi, the new documents'
topics drawn by blocked Gibbs and theta averaged over the second half of the sweeps
(``FittedModel.transform``)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import Array

from ..errors import ParameterError
from ..ops import categorical, chunked_map, count_table, move_counts, to_strided
from ..validate import check_positive_int
from .lda import Data, Params, State, _priors, _sizes, _token_arrays, _valid, estimate

__all__ = ["fold_in"]


def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50) -> Array:
    """theta [D_new, K] for unseen documents, topics held fixed at the fitted phi.

    Blocked Gibbs on the new documents' topics with p(z_i = k) ∝ (n_dk^-i + alpha) phi_kw; theta
    is averaged over the second half of the sweeps (the first half is burn-in).
    """
    num_sweeps = check_positive_int(num_sweeps, "fold_in: num_sweeps")
    valid = _valid(new_data)
    largest = int(jnp.max(jnp.where(valid, new_data.word, 0))) if _sizes(new_data)[0] > 0 else -1
    if largest >= state.word_topic.shape[0]:
        raise ParameterError("fold_in: new documents use word ids outside the fitted vocabulary")
    return _fold_in_sweeps(key, state, new_data, params, num_sweeps)


@partial(jax.jit, static_argnums=(3, 4))
def _fold_in_sweeps(key: Array, state: State, new_data: Data, params: Params,
                    num_sweeps: int) -> Array:
    """`fold_in`'s sweeps, one compiled program per shape (a transform in a loop compiles once)."""
    n, d, v = _sizes(new_data)
    k = params.num_topics
    valid = _valid(new_data)
    alpha, _ = _priors(state, params)
    alpha_total = k * alpha if jnp.ndim(alpha) == 0 else alpha.sum()
    phi_vk = estimate(state, params)["phi"].T                               # [V, K]
    z0 = jax.random.randint(jax.random.fold_in(key, 0), (n,), 0, k)
    doc, _, counted = _token_arrays(new_data)
    ndk = count_table((d, k), doc, z0, weights=counted)
    # each token is in one block, so its topic when its block comes is its topic at the sweep's
    # start: z is carried in block layout and each sweep's new topics replace it at once
    z0 = jnp.where(valid, to_strided(z0, valid.shape[0], width=valid.shape[1]), 0)

    def one_sweep(carry, t):
        z, ndk, acc = carry
        skey = jax.random.fold_in(key, t + 1)

        def block(ndk, xs):
            valid, doc, word, old, b = xs
            u = jax.random.uniform(jax.random.fold_in(skey, b), doc.shape)

            def draw(c):
                uc, dc, wc, oc = c
                own = jax.nn.one_hot(oc, k, dtype=jnp.int32)
                return categorical(uc, ((ndk[dc] - own) + alpha) * phi_vk[wc])

            new = chunked_map(draw, (u, doc, word, old), params.chunk_size)
            new = jnp.where(valid, new, 0)
            return move_counts(ndk, doc, old, new, valid.astype(jnp.int32)), new

        ndk, z = jax.lax.scan(block, ndk, (valid, new_data.doc, new_data.word, z,
                                           jnp.arange(valid.shape[0])))
        keep = (t >= num_sweeps // 2).astype(jnp.float32)
        theta = (ndk + alpha) / (ndk.sum(1, keepdims=True) + alpha_total)
        return (z, ndk, acc + keep * theta), None

    (_, _, acc), _ = jax.lax.scan(one_sweep, (z0, ndk, jnp.zeros((d, k), jnp.float32)),
                                  jnp.arange(num_sweeps))
    return acc / (num_sweeps - num_sweeps // 2)
