"""Hierarchical Dirichlet process topic model: posterior sampling by direct assignment.

The direct-assignment sampler of Teh, Jordan, Beal & Blei (2006, "Hierarchical Dirichlet
processes", JASA; sec. 5.3), HDP's default kernels (``Params.sampler`` "parallel" and
"sequential"; the Chinese restaurant franchise kernels "crf" and "crf_sequential" are in
``jaxtopics.models.hdp``, which also holds the shared ``Params``). The global topic weights are
instantiated: beta_1 .. beta_K of the used topics and beta_u, the mass of the topics not yet used
(sum 1). Documents' tables are not kept; the state is the tokens' topics z, their count tables
n_dk, n_kw, n_k, the weights, and the table counts m_k of the last table draw. With eta the
symmetric topic-word Dirichlet (``Params.beta``), V words and "-i" the token left out:

    (Z) token step, exact Gibbs given beta (LDA's eq. 1 with the asymmetric prior alpha beta_k):
          p(z_i = k)   ∝ (n_dk^-i + alpha beta_k) (n_kw^-i + eta) / (n_k^-i + V eta)
          p(z_i = new) ∝ alpha beta_u / V
        a new topic takes a free slot and b ~ Beta(1, gamma) of beta_u: beta_new = b beta_u,
        beta_u <- (1 - b) beta_u (``ops.dp``, SB). A topic emptied in the step keeps its weight
        until (B) (exact: the weights are those of the whole G_0, revealed lazily).
    (M) table counts m_dk ~ Antoniak(n_dk, alpha beta_k): m_dk = sum_{r<n_dk} Bernoulli(alpha
        beta_k / (alpha beta_k + r)) (``ops.dp``, AN); each token is one Bernoulli, r its rank
        among the tokens of its (document, topic), drawn in the token step once its topic is
        final (r = the tokens of (d, k) in earlier blocks, ``ranks``, plus the earlier ones in
        its own block); m_k = sum_d m_dk.
    (C) with ``resample_concentrations``: alpha | m, n_j and gamma | m, K (Teh et al. 2006,
        appendix A; Escobar & West 1995; ``ops.concentration``), beta integrated out.
    (B) (beta_1 .. beta_K, beta_u) ~ Dirichlet(m_1 .. m_K, gamma); topics with m_k = 0 (empty)
        get weight 0 and are free again.

``log_joint`` is log p(w, z, beta | alpha, gamma), the density of the state that every move
targets (the split-merge moves' SM2 in ``hdp_split_merge``: the tables summed out given beta):

    sum_j [sum_k log (alpha beta_k)^(n_jk) - log alpha^(n_j)]          (documents, given beta)
    + sum_k [sum_w log eta^(n_kw) - log (V eta)^(n_k)]                  (words)
    + K log gamma + (gamma - 1) log beta_u - sum_k log beta_k           (weights of K used topics)

(x^(n) the rising factorial). It is not the CRF's log p(w, t, k): the two samplers' traces are
different quantities.

Kernels (``Params.sampler``):

- ``"parallel"`` (default): tokens are dealt into ``num_blocks`` interleaved blocks (LDA's
  blocked draw, ``ops.collapsed_topic_draw`` with the prior vector alpha beta and the new-topic
  mass on the first free slot); a block's tokens draw (Z) at once against the counts and
  weights at the block's start, each leaving itself out; the tokens of a block that open a new
  topic each get their own free slot (in block order) and their own stick-breaking share, as a
  sequential pass would when each opener opens a topic of its own. With one token per block it
  is the exact sequential sampler.
- ``"sequential"``: exact, token by token in corpus order (the same step, blocks of one token).

Both draw (Z) over the first W slots only: W the narrowest of a few widths (16, 24, 32, 48,
64, ..., K: `_draw_widths`) holding every used slot and the new-topic slot at the block's
start. The slots past W are free (no tokens, weight 0), so (Z) gives them probability exactly 0:
the same draw, at the cost of the topics in use (new topics take the first free slots, so used
slots stay near the front) instead of the capacity.

Each sweep runs, in order: with probability 1 / E (E = ``split_merge_every``; 0: automatic,
`SPLIT_MERGE_EVERY`) the ``split_merge_steps`` exact split-merge moves of whole topics
(``hdp_split_merge.split_merge_moves``, Jain & Neal 2004: on z given pi = beta, the weights
they move kept; each attempt's proposal runs on the pair's tokens alone, gathered into arrays of
N / ``COMPACT_SHARE`` tokens when they fit, and at most ``LAUNCH_ROUNDS`` launch rounds), then
(Z) with (M), then (C), then (B). Each part leaves p(z, beta | w) invariant.

Sharded sweeps (``fit(..., devices=P)``; the ``parallel`` kernel): documents are split over the
devices, z and doc_topic per shard; word_topic and topic global (each block's moves exchanged,
``ops.exchange``); the weights, m_k and the concentrations replicated: the openers of a block are
ranked over all shards (shard order) and every shard applies all of their slots and shares;
m_k is summed over the shards (psum) and beta drawn from a key equal on every shard.

Capacity: K topic slots (``word_topic`` [V, K]); a sweep that finds no free slot at a block's
start, or a block that opens more topics than it has free slots, reports ``overflow``; the
driver grows K (``grow``) and redoes the sweep with the same key.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .. import sampled_concentrations
from ..errors import ParameterError
from ..ops import (chunked_map, collapsed_topic_draw, concentration_groups, concentration_one_group,
                   count_table, crp_opens, dirichlet_multinomial_log_evidence, dirichlet_weights,
                   exchange, log_rising_factorial, move_counts, shard_sum, shared_key,
                   stick_log_keep)
from ..ops.counts import count_invariants, table_total
from ..validate import array_spec, count_problem, latent_problem, same_length
from .base import Sharding
from .hdp import Data, Params, SweepInfo, check_params, pad_shard, prepare, shard_sizes
from .hdp_fold_in import fold_in_with_prior
from .hdp_split_merge import _nth_free, _real, split_merge_moves

__all__ = [
    "Params", "State", "Data", "SweepInfo", "SAMPLERS", "SPLIT_MERGE_EVERY",
    "check_params", "check_state", "state_shapes", "prepare", "init", "sweep", "grow",
    "log_joint", "estimate", "fold_in", "assignments", "rebuild", "active_topics",
    "held_out_prior", "invariants", "traced_priors",
    "check_shard_params", "shard_sizes", "pad_shard", "recount_shard",
]

#: the model these kernels sample, as messages name it (the CRF kernels are ``hdp.py``'s)
MODEL_NAME = "hdp"
#: this module's kernels (``hdp.SAMPLERS`` lists every HDP kernel)
SAMPLERS = ("parallel", "sequential")
#: ``Params.split_merge_every = 0``: the moves run in a sweep with probability 1 / this
SPLIT_MERGE_EVERY = 8
_F32 = jnp.float32
#: vectorised rounds of a split-merge launch state (``hdp_split_merge.split_merge_moves``)
LAUNCH_ROUNDS = 4
#: a split-merge proposal runs on its pair's tokens alone when they are at most N / this
COMPACT_SHARE = 4
_TINY = 1e-30            # floor of a weight inside a log (an underflowed weight of a used topic)

SHARDING = Sharding(
    fields={"z": "tokens", "doc_topic": "docs"},
    # global, equal on every shard, never summed: drawn from keys equal on every shard
    replicated=("alpha", "gamma", "topic_weight", "new_weight", "topic_tables"),
)


class State(NamedTuple):
    """Chain state (a pytree; K, the topic slots, is a capacity).

    z: [N+1] int32 topic of each token (slot N: dummy 0). doc_topic: [D, K] int32 n_dk.
    word_topic: [V, K] int32 n_kw. topic: [K] int32 n_k. topic_tables: [K] int32 m_k of the
    last table draw (M). topic_weight: [K] float32 beta_k (0: a free slot). new_weight:
    float32 beta_u, the unused mass. alpha, gamma: float32 scalars, the concentrations.
    """

    z: Array
    doc_topic: Array
    word_topic: Array
    topic: Array
    topic_tables: Array
    topic_weight: Array
    new_weight: Array
    alpha: Array
    gamma: Array


# --------------------------------------------------------------------------------------------
# state


def _capacity(params: Params) -> int:
    """Initial topic slots: the requested ones (0 = automatic: twice the initial topics, at
    least 64: each growth recompiles the sweep), and at least one free slot."""
    k0 = params.initial_topics
    return max(params.topic_capacity or max(64, 2 * k0), k0 + 1)


def _counts(z: Array, data: Data, num_docs: int, num_words: int, num_topics: int):
    """(z [N+1] with padding tokens and the dummy slot 0, doc_topic, word_topic, topic)."""
    n = data.word.shape[0] - 1
    real = _real(data)
    z = jnp.where(real, jnp.asarray(z, jnp.int32)[:n], 0)
    doc, word = data.doc[:n], data.word[:n]
    return (jnp.append(z, 0).astype(jnp.int32),
            count_table((num_docs, num_topics), doc, z, weights=real),
            count_table((num_words, num_topics), word, z, weights=real),
            count_table((num_topics,), z, weights=real))


@partial(jax.jit, static_argnums=(2,))
def init(key: Array, data: Data, params: Params) -> State:
    """Random initial state: each token's topic uniform among ``initial_topics``; m_k = the
    documents using topic k (one table per document and topic), beta drawn from (B) given it.
    One compiled program (kept by the compilation cache; op by op, it was ~90 small programs
    compiled anew in every process, 2 s of a cached fit's 9 s on 2 CPU cores)."""
    d, v = data.doc_len.shape[0], data.word_freq.shape[0]
    k_cap = _capacity(params)
    n = data.word.shape[0] - 1
    z = jax.random.randint(key, (n,), 0, params.initial_topics)
    z, doc_topic, word_topic, topic = _counts(z, data, d, v, k_cap)
    m = jnp.sum(doc_topic > 0, axis=0, dtype=jnp.int32)
    weight, new_weight = dirichlet_weights(jax.random.fold_in(key, 1), m, params.gamma)
    return State(z, doc_topic, word_topic, topic, m, weight, new_weight,
                 jnp.asarray(params.alpha, _F32), jnp.asarray(params.gamma, _F32))


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with its count tables recounted from z (the weights, m_k and the
    concentrations are latent variables, kept)."""
    d, k = state.doc_topic.shape
    z, doc_topic, word_topic, topic = _counts(state.z, data, d, state.word_topic.shape[0], k)
    return state._replace(z=z, doc_topic=doc_topic, word_topic=word_topic, topic=topic)


def grow(state: State, data: Data, params: Params) -> State:
    """Double the topic capacity and re-pad (host side); new slots are free."""
    k = state.topic.shape[-1]

    def pad(a):
        return jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, k)])

    return state._replace(doc_topic=pad(state.doc_topic), word_topic=pad(state.word_topic),
                          topic=pad(state.topic), topic_tables=pad(state.topic_tables),
                          topic_weight=pad(state.topic_weight))


# --------------------------------------------------------------------------------------------
# token step (Z) with the table draw (M)


def _draw_chunk(params: Params, k: int, width: int) -> int:
    """Tokens per chunk of a block's draw: at most ``chunk_size``, and on XLA:CPU few enough
    that the [chunk, K] weights stay in a core's L2 cache (as LDA's ``_draw_chunk``); the
    block split into equal chunks (a block of 4,674 tokens: two of 2,337, not 4,096 and a
    tail padded to 4,096)."""
    chunk = params.chunk_size
    if jax.default_backend() == "cpu":
        chunk = min(chunk, max(64, 2 ** 18 // k))
    chunk = max(1, min(chunk, width))
    return -(-width // -(-width // chunk))


def _draw_widths(k_cap: int) -> tuple[int, ...]:
    """The widths a block's draw may run over (`_draw_slots`): 16, 24, 32, 48, 64, 96, ...
    below the capacity, and the capacity (a few compiled variants of the draw, not one per
    topic count)."""
    widths, w = [], 16
    while w < k_cap:
        widths += [w] + ([w * 3 // 2] if w * 3 // 2 < k_cap else [])
        w *= 2
    return tuple(widths) + (k_cap,)


def _draw_slots(used: Array, slot_new: Array) -> Array:
    """Index into `_draw_widths` of the narrowest width holding every used slot (`used`: a
    token, or a weight > 0) and the new-topic slot: the slots past it are free, with prior
    weight 0 and no tokens, so (Z) gives them probability exactly 0 and the draw over the
    first `width` slots is the draw over all K. New topics take the first free slots, so the
    used ones stay near the front."""
    k_cap = used.shape[0]
    need = jnp.maximum(jnp.max(jnp.where(used, jnp.arange(k_cap), -1)), slot_new) + 1
    return jnp.searchsorted(jnp.asarray(_draw_widths(k_cap)), need).astype(jnp.int32)


def _rank_in_block(doc: Array, new: Array, valid: Array, max_run: Array) -> Array:
    """[C] the number of earlier tokens of the block with the token's document and topic. A
    document's tokens are contiguous in a block (blocks keep corpus order), at most `max_run`
    of them: compared at shifts 1 .. max_run-1 (none when documents are shorter than the
    block count)."""
    c = doc.shape[0]
    if c == 1:
        return jnp.zeros((1,), jnp.int32)
    at = jnp.arange(c)

    def body(s, acc):
        same = (jnp.roll(doc, s) == doc) & (jnp.roll(new, s) == new) & jnp.roll(valid, s)
        return acc + (same & (at >= s)).astype(jnp.int32)

    return jax.lax.fori_loop(1, jnp.minimum(max_run, c), body, jnp.zeros((c,), jnp.int32))


def _open_topics(key: Array, opener: Array, new: Array, free: Array, st: State,
                 axis_name: str | None):
    """(Z)'s new topics of a block: the r-th opener (over all shards, shard order then block
    order) takes the r-th free slot and b_r ~ Beta(1, gamma) of what the earlier openers left
    of beta_u (SB). Returns (new [C], topic_weight, new_weight, overflow)."""
    k_cap = free.shape[0]
    keep = jnp.where(opener, stick_log_keep(jax.random.uniform(key, opener.shape), st.gamma), 0.0)
    all_open, all_keep = exchange(axis_name, opener.astype(jnp.int32), keep)
    rank = jnp.cumsum(all_open, dtype=jnp.int32) - all_open
    kept_before = jnp.cumsum(all_keep) - all_keep
    slot = _nth_free(jnp.cumsum(free, dtype=jnp.int32)[None, :], rank[:, None])[:, 0]
    overflow = jnp.any((all_open > 0) & (slot >= k_cap))
    slot = jnp.minimum(slot, k_cap - 1)
    share = st.new_weight * jnp.exp(kept_before) * -jnp.expm1(all_keep)
    weight = st.topic_weight.at[jnp.where(all_open > 0, slot, k_cap)].set(share, mode="drop")
    new_weight = st.new_weight * jnp.exp(jnp.sum(all_keep))
    start = 0 if axis_name is None else jax.lax.axis_index(axis_name) * opener.shape[0]
    mine = jax.lax.dynamic_slice_in_dim(slot, start, opener.shape[0])
    return jnp.where(opener, mine, new), weight, new_weight, overflow


def _token_block(carry: tuple, xs: tuple, key: Array, data: Data, params: Params,
                 max_run: Array, axis_name: str | None, control: str | None) -> tuple:
    """(Z) and (M) for one block of tokens `pos` [C] (mask `valid`), all drawn against the
    counts and weights at the block's start. carry = (state, ranks [D, K]: tokens of each
    (document, topic) already ranked this sweep, opened [K]: table openers per topic (this
    shard's), overflow)."""
    st, ranks, opened, overflow = carry
    pos, valid, b = xs
    k_cap = st.topic.shape[0]
    v = st.word_topic.shape[0]
    doc, word, old = data.doc[pos], data.word[pos], st.z[pos]
    free = (st.topic == 0) & (st.topic_weight == 0)
    has_free = jnp.any(free)
    slot_new = jnp.argmax(free)
    alpha = jnp.float32(1.0) if control == "no_alpha" else st.alpha
    prior = alpha * st.topic_weight
    prior = prior.at[slot_new].set(jnp.where(has_free, alpha * st.new_weight, prior[slot_new]))
    k_draw, k_open, k_tab = jax.random.split(jax.random.fold_in(key, b), 3)
    u = jax.random.uniform(k_draw, pos.shape)

    def draw_over(width):          # (Z) over the first `width` slots (`_draw_slots`)
        def draw(c):
            uc, dc, wc, oc = c
            return collapsed_topic_draw(uc, st.doc_topic[dc, :width], st.word_topic[wc, :width],
                                        st.topic[:width], oc, prior[:width], params.beta, v)
        return lambda: chunked_map(draw, (u, doc, word, old),
                                   _draw_chunk(params, width, pos.shape[0]))

    branch = _draw_slots(~free, jnp.where(has_free, slot_new, -1))
    new = jax.lax.switch(branch, [draw_over(w) for w in _draw_widths(k_cap)])
    new = jnp.where(valid, new, 0)
    opener = valid & has_free & (new == slot_new)
    any_open = shard_sum(jnp.sum(opener, dtype=jnp.int32), axis_name) > 0
    new, weight, new_weight, of_open = jax.lax.cond(
        any_open, lambda: _open_topics(k_open, opener, new, free, st, axis_name),
        lambda: (new, st.topic_weight, st.new_weight, jnp.bool_(False)))
    # (M): each token one Bernoulli of its (document, topic)'s table count, at its rank
    rank = ranks[doc, new] + _rank_in_block(doc, new, valid, max_run)
    if control == "rank_plus_one":
        rank = rank + 1
    opens = valid & crp_opens(jax.random.uniform(k_tab, pos.shape), rank,
                              st.alpha * weight[new])
    w = valid.astype(jnp.int32)
    st = st._replace(
        z=st.z.at[pos].set(jnp.where(valid, new, st.z[pos])),
        doc_topic=move_counts(st.doc_topic, doc, old, new, w),
        topic_weight=weight, new_weight=new_weight)
    word_x, old_x, new_x, w_x = exchange(axis_name, word, old, new, w)
    st = st._replace(word_topic=move_counts(st.word_topic, word_x, old_x, new_x, w_x),
                     topic=move_counts(st.topic, None, old_x, new_x, w_x))
    return (st, ranks.at[doc, new].add(w), opened.at[new].add(opens.astype(jnp.int32)),
            overflow | ~has_free | of_open), None


def _token_steps(key: Array, st: State, data: Data, params: Params, axis_name: str | None,
                 control: str | None) -> tuple[State, Array, Array]:
    """(Z) and (M) over every token: the parallel kernel's blocks (``data.blocks``), or one
    token per block in corpus order (sequential). Returns (state, m_k of this shard's tokens,
    overflow)."""
    if params.sampler == "sequential":
        n = data.word.shape[0] - 1
        blocks, valid = jnp.arange(n, dtype=jnp.int32)[:, None], _real(data)[:, None]
    else:
        blocks, valid = data.blocks, data.valid
    k_cap = st.topic.shape[0]
    max_run = -(-jnp.max(data.doc_len) // blocks.shape[0])
    carry = (st, jnp.zeros(st.doc_topic.shape, jnp.int32), jnp.zeros(k_cap, jnp.int32),
             jnp.bool_(False))
    xs = (blocks, valid, jnp.arange(blocks.shape[0]))
    (st, _, opened, overflow), _ = jax.lax.scan(
        lambda c, x: _token_block(c, x, key, data, params, max_run, axis_name, control), carry, xs)
    return st, opened, overflow


# --------------------------------------------------------------------------------------------
# sweep


def split_merge_every(params: Params) -> int:
    """E of ``Params.split_merge_every`` (0: `SPLIT_MERGE_EVERY`)."""
    return params.split_merge_every or SPLIT_MERGE_EVERY


def _split_merge(k_local: Array, k_att: Array, st: State, data: Data, params: Params,
                 axis_name: str | None) -> tuple[State, Array, Array]:
    """The split-merge moves with pi = beta (their weights move with them); doc_topic
    recounted from the new z."""
    n = data.word.shape[0] - 1
    d, k_cap = st.doc_topic.shape
    log_pi = jnp.where(st.topic_weight > 0, jnp.log(st.topic_weight), -jnp.inf)
    z, word_topic, topic, log_pi, _, accepted, overflow = split_merge_moves(
        k_att, k_local, st.z[:n], st.word_topic, st.topic, log_pi, (st.alpha, st.gamma), data,
        params, params.split_merge_steps, d, axis_name, launch_rounds=LAUNCH_ROUNDS,
        compact=max(1, n // COMPACT_SHARE))
    real = _real(data)
    return st._replace(
        z=jnp.append(z, 0), word_topic=word_topic, topic=topic,
        topic_weight=jnp.where(jnp.isfinite(log_pi), jnp.exp(log_pi), 0.0).astype(_F32),
        doc_topic=count_table((d, k_cap), data.doc[:n], z, weights=real)), accepted, overflow


def _sweep(key: Array, state: State, data: Data, params: Params, axis_name: str | None = None,
           control: str | None = None) -> tuple[State, SweepInfo]:
    """`sweep`; `control` (tests only) makes a deliberately wrong kernel: "no_alpha" (the prior
    beta_k without its alpha), "rank_plus_one" (Antoniak's ranks off by one)."""
    k_sm, k_tok, k_conc, _ = jax.random.split(key, 4)
    g_sm, g_run, g_conc, g_beta = jax.random.split(shared_key(key, axis_name), 4)
    n = data.word.shape[0] - 1
    st, accepted, of_sm = state, jnp.int32(0), jnp.bool_(False)
    if params.split_merge_steps and n >= 2:            # a split needs two tokens
        run = jax.random.uniform(g_run) * split_merge_every(params) < 1.0
        st, accepted, of_sm = jax.lax.cond(
            run, lambda s: _split_merge(k_sm, g_sm, s, data, params, axis_name),
            lambda s: (s, jnp.int32(0), jnp.bool_(False)), st)
    st, opened, of_tok = _token_steps(k_tok, st, data, params, axis_name, control)
    m = shard_sum(opened, axis_name)
    alpha, gamma = st.alpha, st.gamma
    if params.resample_concentrations:                 # (C): alpha | m, n_j; gamma | m, K
        s_alpha, s_gamma = jax.random.split(g_conc)
        total = jnp.sum(m)
        alpha = concentration_groups(k_conc, alpha, data.doc_len, total, params.prior_shape,
                                     params.prior_rate, axis_name=axis_name, shared=s_alpha)
        gamma = concentration_one_group(s_gamma, gamma, jnp.sum(m > 0), total,
                                        params.prior_shape, params.prior_rate)
    weight, new_weight = dirichlet_weights(g_beta, m, gamma)        # (B)
    st = st._replace(topic_tables=m, topic_weight=weight, new_weight=new_weight, alpha=alpha,
                     gamma=gamma)
    changed = shard_sum(jnp.sum(st.z != state.z, dtype=jnp.int32), axis_name)
    overflow = shard_sum((of_sm | of_tok).astype(jnp.int32), axis_name) > 0
    return st, SweepInfo(changed=changed, overflow=overflow, accepted=accepted,
                         num_topics=jnp.sum(st.topic > 0, dtype=jnp.int32))


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler`` (split-merge moves, (Z) with (M), (C), (B));
    pure and jit/vmap-able (params static). If ``info.overflow``, the returned state is
    garbage: discard it, `grow` the input state and redo the sweep with the same key.
    `axis_name`: inside ``shard_map`` over documents, the sharded ``parallel`` kernel."""
    if axis_name is not None:
        check_shard_params(params)
    return _sweep(key, state, data, params, axis_name)


def check_shard_params(params: Params) -> None:
    """Sharded sweeps run the ``parallel`` kernel (the sequential one visits every token of the
    corpus in order)."""
    if params.sampler != "parallel":
        raise ParameterError(f"sharded sweeps (devices > 1) run the 'parallel' kernel, got "
                             f"sampler={params.sampler!r}")


def recount_shard(state: State, data: Data, params: Params, sizes: dict) -> State:
    """A shard's tables recounted from its z (`rebuild`): doc_topic its documents', word_topic
    and topic its part of the global ones; the replicated fields kept."""
    return rebuild(state, data, params)


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """{"alpha", "gamma"} along the trace with ``resample_concentrations``, else {}."""
    return sampled_concentrations.traced(state, params, ("alpha", "gamma"))


# --------------------------------------------------------------------------------------------
# read-outs


def log_joint(state: State, data: Data, params: Params) -> Array:
    """log p(w, z, beta | alpha, gamma) (module docstring): the documents' terms given beta, the
    words' evidence and the weights' density over the K used topics."""
    used = state.topic > 0
    alpha, gamma = state.alpha, state.gamma
    c = jnp.where(used, jnp.maximum(alpha * state.topic_weight, _TINY), 1.0)
    n_j = jnp.sum(state.doc_topic, axis=-1)
    docs = (jnp.sum(log_rising_factorial(jnp.broadcast_to(c, state.doc_topic.shape),
                                         state.doc_topic))
            - jnp.sum(log_rising_factorial(jnp.broadcast_to(alpha, n_j.shape), n_j)))
    words = dirichlet_multinomial_log_evidence(state.word_topic, params.beta, axis=0)
    weights = (jnp.sum(used) * jnp.log(gamma)
               + (gamma - 1.0) * jnp.log(jnp.maximum(state.new_weight, _TINY))
               - jnp.sum(jnp.where(used, jnp.log(jnp.maximum(state.topic_weight, _TINY)), 0.0)))
    return docs + words + weights


def invariants(state: State, data: Data | None, params: Params) -> dict[str, Array]:
    """What the driver checks after every chunk: the count tables non-negative, word_topic and
    doc_topic summing to topic, topic to the N tokens (`data` given), each used topic between 1
    table and its tokens, the weights finite and >= 0."""
    m, n_k = state.topic_tables, state.topic
    weights_ok = (jnp.all(jnp.isfinite(state.topic_weight) & (state.topic_weight >= 0))
                  & jnp.isfinite(state.new_weight) & (state.new_weight >= 0))
    checks = count_invariants(
        {"doc_topic": state.doc_topic, "word_topic": state.word_topic, "topic": state.topic,
         "topic_tables": m},
        {"word_topic: sums over words to topic": (state.word_topic.sum(0), n_k),
         "doc_topic: sums over documents to topic": (state.doc_topic.sum(0), n_k),
         "topic: sums to the tokens": (table_total(n_k), None if data is None
                                       else jnp.sum(data.doc_len)),
         "topic_tables: between 1 and the topic's tokens": (
             (m <= n_k) & ((m > 0) == (n_k > 0)), True)})
    checks["topic_weight: finite and >= 0"] = weights_ok
    return checks


def active_topics(state: State) -> np.ndarray:
    """Slots of the used topics, largest first (ties by slot): row k of ``estimate``'s phi."""
    sizes = np.asarray(state.topic)
    slots = np.flatnonzero(sizes > 0)
    return slots[np.argsort(-sizes[slots], kind="stable")]


def estimate(state: State, params: Params) -> dict[str, Array]:
    """Point estimates over the used topics (largest first), rows summing to 1:

    phi_kw = (n_kw + eta) / (n_k + V eta); theta_dk ∝ n_dk + alpha beta_k (the new-topic mass
    alpha beta_u left out, theta renormalised); plus num_active_topics, topic_sizes,
    topic_tables (m_k), alpha, gamma (also as sampled_alpha, sampled_gamma)."""
    slots = active_topics(state)
    word_topic = np.asarray(state.word_topic)[:, slots].T.astype(np.float64)
    v = word_topic.shape[1]
    sizes = np.asarray(state.topic)[slots]
    alpha, gamma = float(state.alpha), float(state.gamma)
    weight = np.asarray(state.topic_weight, np.float64)[slots]
    theta = np.asarray(state.doc_topic)[:, slots].astype(np.float64) + alpha * weight
    theta /= np.maximum(theta.sum(1, keepdims=True), 1e-300)
    phi = (word_topic + params.beta) / (sizes[:, None] + v * params.beta)
    return {"theta": theta.astype(np.float32), "phi": phi.astype(np.float32),
            "num_active_topics": np.int32(len(slots)), "topic_sizes": sizes.astype(np.int32),
            "topic_tables": np.asarray(state.topic_tables)[slots].astype(np.int32),
            "alpha": np.float32(alpha), "gamma": np.float32(gamma),
            "sampled_alpha": np.float32(alpha), "sampled_gamma": np.float32(gamma)}


def held_out_prior(state: State, params: Params):
    """Left-to-right pieces (``jaxtopics.evaluation``): a new document's prior alpha beta_k over
    the used topics (``estimate``'s order) plus the new-topic component alpha beta_u, whose word
    predictive is 1/V; log phi as in ``estimate``."""
    from ..evaluation import HeldOutPrior

    slots = active_topics(state)
    alpha = float(state.alpha)
    word_topic = np.asarray(state.word_topic)[:, slots].T.astype(np.float64)
    v = word_topic.shape[1]
    sizes = np.asarray(state.topic)[slots].astype(np.float64)
    log_phi = np.log(word_topic + params.beta) - np.log(sizes[:, None] + v * params.beta)
    log_phi = np.concatenate([log_phi, np.full((1, v), -np.log(v))])
    weight = np.asarray(state.topic_weight, np.float64)[slots]
    rest = max(1.0 - weight.sum(), float(state.new_weight), 1e-30)
    prior = alpha * np.append(weight, rest)
    return HeldOutPrior(jnp.asarray(log_phi, _F32), jnp.asarray(prior[None, :], _F32),
                        jnp.zeros((1,), _F32))


def assignments(state: State) -> Array:
    """Topic of every token [N] int32, numbered as the rows of ``estimate``'s phi."""
    slots = active_topics(state)
    rank = np.zeros(state.topic.shape[-1], np.int32)
    rank[slots] = np.arange(len(slots), dtype=np.int32)
    return rank[np.asarray(state.z)[:-1]]


def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50) -> Array:
    """theta [D_new, K_active] for unseen documents, the topics held at the fitted phi: Gibbs
    with p(z_i = k) ∝ (n_dk^-i + alpha beta_k) phi_kw over the used topics; theta averaged over
    the second half of the sweeps (``hdp``'s fold-in with this prior)."""
    est = estimate(state, params)
    prior = float(state.alpha) * np.asarray(state.topic_weight)[active_topics(state)]
    return fold_in_with_prior(key, est["phi"], prior, new_data, params, num_sweeps)


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int) -> State:
    """The shape and dtype of every State array; K (the topic slots) is a capacity."""
    k = same_length(0)
    scalar = array_spec(dtype=_F32)
    return State(z=array_spec(num_tokens + 1), doc_topic=array_spec(num_docs, k),
                 word_topic=array_spec(num_words, k), topic=array_spec(k),
                 topic_tables=array_spec(k), topic_weight=array_spec(k, dtype=_F32),
                 new_weight=scalar, alpha=scalar, gamma=scalar)


def check_state(state: State, params: Params) -> str | None:
    """What is out of range in a state read from a file (host arrays), or None: z in [0, K)
    with its dummy slot 0, counts non-negative, weights finite, >= 0 and summing to 1 (float32
    rounding aside), the concentrations finite and > 0 (the Params' unless sampled)."""
    k_cap = np.shape(state.word_topic)[1]
    problem = sampled_concentrations.state_problem(state, params, ("alpha", "gamma"))
    if problem:
        return problem
    w = np.append(np.asarray(state.topic_weight, np.float64), np.float64(state.new_weight))
    if not np.all(np.isfinite(w) & (w >= 0)) or abs(w.sum() - 1.0) > 1e-3:
        return "topic_weight and new_weight must be finite, >= 0 and sum to 1"
    return (latent_problem("z", state.z, k_cap, dummy_slot=True)
            or count_problem(doc_topic=state.doc_topic, word_topic=state.word_topic,
                             topic=state.topic, topic_tables=state.topic_tables))
