"""Unseen documents under a fitted DP-MRM (``jaxtopics.models.dpmrm``): fold-in of the corrected
theta (the ``dpmrm`` module docstring) by document steps against the fitted counts held fixed,
and the held-out log-likelihood (the paper's perplexity) from it, per document and in total.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..errors import LabelWarning, ParameterError, warn_caller
from ..ops import chunked_map, strided_blocks
from .dpmrm import (Data, Params, State, _Doc, _doc_inputs, _label_weight, _Local, _params_in_use,
                    _sizes, _table_cap, _update_docs, _View)
from .dpmrm_views import gather_views
from .dpmrm_readouts import _active_order, _distributions

__all__ = ["fold_in", "held_out_log_likelihood", "held_out_doc_log_likelihood"]


def _check_new_data(state: State, new_data: Data, num_sweeps: int) -> None:
    if not isinstance(num_sweeps, (int, np.integer)) or isinstance(num_sweeps, bool) or num_sweeps < 1:
        raise ParameterError(f"num_sweeps must be an integer >= 1, got {num_sweeps!r}")
    if new_data.word_freq.shape[0] > state.word_topic.shape[0]:
        raise ParameterError("held-out documents use word ids outside the fitted vocabulary")
    fitted = state.label_tables.shape[0]
    if new_data.label_docs.shape[0] > fitted:
        raise ParameterError(f"held-out documents have {new_data.label_docs.shape[0]} labels, the "
                             f"fitted model {fitted}: build them with label_names= the training "
                             "corpus's label_names")


def _fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int) -> Array:
    """``_fold_in_theta`` with the held-out documents in groups vmapped together (the documents
    are independent given the fitted counts): ~2^20 view cells per group. Parameters that do not
    enter the fold-in are normalised so that every kernel setting shares one compilation; alpha
    and gamma are those in use (the chain's current draws when it samples them)."""
    params = _params_in_use(state, params)
    d = new_data.doc_start.shape[0] - 1
    width = state.topic.shape[0] + _table_cap(new_data)
    per_group = max(1, min(d, (1 << 20) // (new_data.doc_words.shape[1] * width)))
    blocks, valid = strided_blocks(d, -(-d // per_group))
    params = Params(alpha=params.alpha, beta=params.beta, gamma=params.gamma, eta=params.eta,
                    chunk_size=params.chunk_size)
    return _fold_in_theta(key, state, new_data, params, int(num_sweeps), jnp.asarray(blocks),
                          jnp.asarray(valid))


@partial(jax.jit, static_argnums=(3, 4))
def _fold_in_theta(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int,
                   blocks: Array, valid: Array) -> Array:
    """theta [D_new, C + R] of unseen documents, averaged over the second half of `num_sweeps`
    document steps against the fitted counts held fixed: columns :C are the fitted topic slots,
    C + r the new-topic mass of the document's label r (the corrected theta of the module
    docstring, with m_kl, m_k of the fitted state)."""
    _, d, _, _, r = _sizes(new_data)
    v = state.word_topic.shape[0]                  # the fitted vocabulary (>= the new corpus's)
    g = params.gamma
    c_glob = state.topic.shape[0]
    t_cap = _table_cap(new_data)                  # every document gets all the tables it can use
    n = new_data.word.shape[0]
    ml_fit = state.label_tables.astype(jnp.float32)
    share = jnp.where(state.topic_tables > 0,
                      state.topic_tables / (ml_fit[state.topic_label] + g), 0.0)        # [C]

    def one_block(xs):
        idx, ok = xs
        idx = jnp.where(ok, idx, d)
        docs = _doc_inputs(new_data, idx)
        b = idx.shape[0]
        # start: every token at one of the document's label tables, each on a new topic of its label
        per_doc = jnp.sum(docs.mask, axis=1)
        u0 = jax.random.uniform(jax.random.fold_in(key, 0), (n,))[jnp.minimum(docs.pos, n - 1)]
        tab = jnp.where(docs.inside,
                        jnp.minimum((u0 * per_doc[:, None]).astype(jnp.int32), per_doc[:, None] - 1), 0)
        base = gather_views(state, docs, t_cap)
        dish = jnp.zeros((b, t_cap), jnp.int32).at[:, :r].set(c_glob + jnp.arange(r))
        tl = base.tl.at[:, c_glob:c_glob + r].set(docs.labels)
        loc, view = jax.vmap(_own_counts)(docs, tab, dish, base._replace(tl=tl))

        def one_sweep(carry, t):
            loc, view, acc = carry
            kt = jax.random.fold_in(key, t + 1)
            u_tok = jax.random.uniform(jax.random.fold_in(kt, 0), (n,))[jnp.minimum(docs.pos, n - 1)]
            u_tab = jax.random.uniform(jax.random.fold_in(kt, 1), (d + 1, t_cap))[idx]
            loc, view, _ = _update_docs(docs, loc, view, u_tok, u_tab, params, v, c_glob)
            theta = jax.vmap(_doc_theta, in_axes=(0, 0, 0, None, None, None, None))(
                docs, loc, view, share, state.label_tables, params, c_glob)
            keep = (t >= num_sweeps // 2).astype(jnp.float32)
            return (loc, view, acc + keep * theta), None

        acc = jnp.zeros((b, c_glob + r), jnp.float32)
        (_, _, acc), _ = jax.lax.scan(one_sweep, (loc, view, acc), jnp.arange(num_sweeps))
        return acc / (num_sweeps - num_sweeps // 2)

    thetas = jax.lax.map(one_block, (blocks, valid))                        # [B, Cb, C + R]
    out = jnp.zeros((d + 1, c_glob + r), jnp.float32)
    return out.at[jnp.where(valid, blocks, d)].set(thetas)[:d]


def _own_counts(doc: _Doc, tab: Array, dish: Array, base: _View) -> tuple[_Local, _View]:
    """A document's local state and view from its tokens' tables and its tables' topics, on top
    of `base` (the counts of everything else)."""
    inside = doc.inside.astype(jnp.int32)
    t_cap = dish.shape[0]
    size = jnp.zeros((t_cap,), jnp.int32).at[tab].add(inside)
    active = (size > 0).astype(jnp.int32)
    tok_topic = dish[tab]
    label = base.tl[dish]
    mjr = jnp.sum(active[:, None] * ((label[:, None] == doc.labels[None, :]) & doc.mask[None, :]),
                  axis=0, dtype=jnp.int32)
    view = _View(base.wt.at[doc.slot, tok_topic].add(inside), base.nt.at[tok_topic].add(inside),
                 base.mt.at[dish].add(active), base.tl, base.ml.at[label].add(active))
    return _Local(tab, size, dish, mjr), view


def _doc_theta(doc: _Doc, loc: _Local, view: _View, share: Array, ml_fit: Array,
               params: Params, c_glob: int) -> Array:
    """[C + R] corrected theta of one held-out document: the fitted topic slots (m_kl, m_k of
    the fitted state through `share` = m_kl / (m_k + gamma) and `ml_fit` = m_k), then the
    new-topic mass of each of its label slots (its tokens on topics it opened itself included)."""
    a, g, e = params.alpha, params.gamma, params.eta
    cv = view.nt.shape[0]
    n_dc = jnp.zeros((cv,), jnp.float32).at[loc.dish].add(loc.size.astype(jnp.float32))
    prior = jnp.where(doc.mask, loc.mjr + e, 0.0) / (jnp.sum(loc.mjr) + jnp.sum(doc.mask) * e)
    pi = _label_weight(doc, view.tl[:c_glob], prior, 0.0)                                  # [C]
    owned = ((doc.labels[:, None] == view.tl[None, :]) & doc.mask[:, None]
             & (jnp.arange(cv) >= c_glob)[None, :])
    n_new = jnp.sum(jnp.where(owned, n_dc[None, :], 0.0), axis=1)                          # [R]
    denom = jnp.sum(loc.size) + a
    fitted = (n_dc[:c_glob] + a * pi * share) / denom
    new = (n_new + a * prior * g / (ml_fit[doc.labels].astype(jnp.float32) + g)) / denom
    return jnp.concatenate([fitted, jnp.where(doc.mask, new, 0.0)])


def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50
            ) -> np.ndarray:
    """p(topic | unseen document) [D_new, K] over the fitted active topics (``estimate``'s order):
    document steps against the fitted counts held fixed (new topics may open inside a
    document), the corrected theta (module docstring) averaged over the second half of the
    sweeps, each row renormalised over the active topics (uniform where the document's labels
    own none)."""
    _check_new_data(state, new_data, num_sweeps)
    theta = np.asarray(_fold_in(key, state, new_data, params, num_sweeps), np.float64)
    active = theta[:, _active_order(state)]
    orphans = np.flatnonzero(active.sum(1) <= 0)
    if orphans.size:
        warn_caller(f"document {int(orphans[0])} ({orphans.size} in all) has no label that owns "
                      "a fitted topic: its theta row is uniform over the topics", LabelWarning)
    return _distributions(active).astype(np.float32)


def held_out_log_likelihood(key: Array, state: State, new_data: Data, params: Params,
                            num_sweeps: int = 50) -> float:
    """log p(x_test) = sum_ji log(sum_c theta_jc psi_c,x_ji + sum_k theta_jk,new / V) (the
    paper's perplexity, section 4.3, with the corrected theta and the new-topic terms, psi_new =
    1/V), psi the fitted phi, theta from ``fold_in``'s document steps; evaluated in log space
    (logsumexp), so a long document does not underflow. Perplexity = exp(-this / N_test)."""
    return float(np.sum(held_out_doc_log_likelihood(key, state, new_data, params, num_sweeps)))



def held_out_doc_log_likelihood(key: Array, state: State, new_data: Data, params: Params,
                                num_sweeps: int = 50) -> np.ndarray:
    """``held_out_log_likelihood`` per document [D_new] (the same terms, summed by document)."""
    _check_new_data(state, new_data, num_sweeps)
    theta = _fold_in(key, state, new_data, params, num_sweeps)
    params = Params(beta=params.beta, chunk_size=params.chunk_size)      # all it depends on
    d = new_data.doc_start.shape[0] - 1
    return np.asarray(_log_likelihood(theta, state, new_data, params), np.float64)[:d]


@partial(jax.jit, static_argnums=(3,))
def _log_likelihood(theta: Array, state: State, new_data: Data, params: Params) -> Array:
    c_glob = state.topic.shape[0]
    v = state.word_topic.shape[0]
    b = params.beta
    log_theta = jnp.log(theta[:, :c_glob])                                            # [D, C]
    log_new = jnp.log(jnp.sum(theta[:, c_glob:], axis=1)) - jnp.log(jnp.float32(v))  # [D]
    log_total = jnp.log(state.topic.astype(jnp.float32) + v * b)

    def per_token(xs):
        word, doc = xs
        log_phi = jnp.log(state.word_topic[word].astype(jnp.float32) + b) - log_total[None, :]
        terms = jnp.concatenate([log_theta[doc] + log_phi, log_new[doc][:, None]], axis=1)
        return jax.scipy.special.logsumexp(terms, axis=1)

    per = chunked_map(per_token, (new_data.word, new_data.doc), params.chunk_size)
    return jax.ops.segment_sum(per, new_data.doc, num_segments=theta.shape[0] + 1)
