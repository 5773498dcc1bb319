"""HDP's fold-in of unseen documents (``FittedModel.transform``), shared by the CRF and the
direct-assignment kernels: the topics held at the fitted phi, the new documents' topics drawn
by blocked Gibbs with p(z_i = k) ∝ (n_dk^-i + a_k) phi_kw for a prior vector a over the active
topics (each kernel's prior mass of a topic for a new document), theta averaged over the second
half of the sweeps."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..errors import ParameterError
from ..ops import categorical, chunked_map, count_table, move_counts, strided_blocks

__all__ = ["fold_in_with_prior"]

_F32 = jnp.float32


def fold_in_with_prior(key: Array, phi: np.ndarray, prior: np.ndarray, new_data, params,
                       num_sweeps: int) -> Array:
    """theta [D_new, K] for the documents of `new_data` (an ``hdp.Data``) given `phi` [K, V]
    and the prior vector `prior` [K]; blocks of ``params.num_blocks``."""
    if num_sweeps < 1:
        raise ParameterError(f"fold_in: num_sweeps must be >= 1, got {num_sweeps}")
    phi = jnp.asarray(phi)
    if new_data.word.shape[0] > 1 and int(jnp.max(new_data.word)) >= phi.shape[1]:
        raise ParameterError("fold_in: new documents use word ids outside the fitted vocabulary")
    n = new_data.word.shape[0] - 1
    blocks, valid = strided_blocks(max(n, 1), params.num_blocks)
    return _fold_in(key, phi.T, jnp.asarray(prior, _F32), new_data.doc, new_data.word,
                    jnp.asarray(blocks), jnp.asarray(valid), num_sweeps, n,
                    new_data.doc_len.shape[0], phi.shape[0])


def _fold_in_impl(key, phi_vk, prior, doc, word, blocks, valid, num_sweeps, n, d, k):
    z0 = jnp.append(jax.random.randint(jax.random.fold_in(key, 0), (n,), 0, k), 0)
    ndk = count_table((d, k), doc[:n], z0[:n])

    def one_sweep(carry, t):
        z, ndk, acc = carry
        skey = jax.random.fold_in(key, t + 1)

        def block(inner, xs):
            z, ndk = inner
            pos, ok, b = xs
            dd, w, old = doc[pos], word[pos], z[pos]
            u = jax.random.uniform(jax.random.fold_in(skey, b), pos.shape)

            def draw(c):
                uc, dc, wc, oc = c
                own = jax.nn.one_hot(oc, k, dtype=jnp.int32)
                return categorical(uc, ((ndk[dc] - own).astype(_F32) + prior[None, :]) * phi_vk[wc])

            new = chunked_map(draw, (u, dd, w, old), 8192)
            z = z.at[pos].set(jnp.where(ok, new, 0))
            return (z, move_counts(ndk, dd, old, new, ok.astype(jnp.int32))), None

        (z, ndk), _ = jax.lax.scan(block, (z, ndk), (blocks, valid, jnp.arange(blocks.shape[0])))
        keep = (t >= num_sweeps // 2).astype(_F32)
        theta = ndk + prior[None, :]
        theta = theta / theta.sum(1, keepdims=True)
        return (z, ndk, acc + keep * theta), None

    (_, _, acc), _ = jax.lax.scan(one_sweep, (z0, ndk, jnp.zeros((d, k), _F32)),
                                  jnp.arange(num_sweeps))
    return acc / (num_sweeps - num_sweeps // 2)


_fold_in = jax.jit(_fold_in_impl, static_argnums=(7, 8, 9, 10))

