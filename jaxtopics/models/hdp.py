"""Hierarchical Dirichlet process topic model: the Chinese restaurant franchise (CRF) kernels.

HDP's Params (all kernels) and its CRF kernels ``"crf"``, ``"crf_sequential"``; the default
kernels ``"parallel"`` and ``"sequential"`` (direct assignment, sec. 5.3) are in ``hdp_direct``
(`kernel_module` picks the module of a Params). The collapsed CRF Gibbs sampler of Teh, Jordan, Beal & Blei (2006, "Hierarchical Dirichlet
processes", JASA; sec. 5.1), for a symmetric Dirichlet(beta) base measure over the words.
Document j is a restaurant whose tables t each serve one dish (topic) k_jt; token i of word w
sits at a table t_i. With n_jt tokens at table t, m_k tables serving dish k (m tables in all),
n_kw / n_k the words / tokens of topic k and V words, the equations the code cites:

    (F) word predictive of topic k (a new topic: the prior predictive, 1/V):
          f_k(w) = (n_kw + beta) / (n_k + V beta),   f_new(w) = 1/V
    (T) table step, the token left out of every count ("-i"); a new table and its dish are
        drawn together (one categorical over T + K + 1 choices):
          p(t_i = t)            ∝ n_jt^-i f_{k_jt}^-i(w)
          p(t_i = new, k = k)   ∝ alpha m_k^-i f_k^-i(w) / (m^-i + gamma)
          p(t_i = new, k = new) ∝ alpha gamma (1/V) / (m^-i + gamma)
    (D) dish step of a whole table, its tokens one block (Polya ratios, in log space):
          p(k_jt = k)   ∝ m_k^-jt  prod_w (n_kw^-jt + beta)^(c_jtw) / (n_k^-jt + V beta)^(n_jt)
          p(k_jt = new) ∝ gamma    prod_w beta^(c_jtw) / (V beta)^(n_jt)
        (x^(n) the rising factorial, c_jtw the table's tokens of word w).

``log_joint`` is the collapsed log p(w, t, k) of the CRF: the seating CRP of every document,
the dish CRP of the tables and the Dirichlet-multinomial evidence of the words (F).

Kernels (``Params.sampler``):

- ``"crf_sequential"``: exact collapsed Gibbs (Teh et al.'s CRF sampler): the table step of every token
  in corpus order, then the dish step of every table, one table at a time.
- ``"crf"``: the same two steps blocked. Tokens are dealt into ``num_blocks``
  interleaved blocks (as LDA's kernel); the tokens of a block draw at once from the table step
  against the counts at the block's start (each leaves itself out), counts are refreshed exactly
  between blocks; tables opened in a block get distinct free slots, each token that opens a new
  dish its own new topic (a sequential pass would sometimes have seated the second one with the
  first). The dish step visits the tables slot by slot (table slot r of every document, split in
  ``dish_groups`` groups of documents): the tables of a group draw at once against the counts at
  the group's start. With ``num_blocks >= N`` and ``dish_groups >= D`` every block is one token
  and one table: the kernel is then the exact sequential sampler (tested by enumeration).

Both kernels end each sweep with ``split_merge_steps`` split-merge moves of whole topics
(`_split_merge`, equations SM1-SM9 there): exact Metropolis-Hastings moves (Jain & Neal 2004)
on the tokens' topics with the seating summed out given the global topic weights pi (drawn
from their conditional Dir(m_1..m_K, gamma), Teh et al. 2006, sec. 5.2), with Jain & Neal
launch states built by sequential allocation (Dahl 2003), followed by an exact re-seating of
the changed topics. Table and dish steps alone mix the number of topics very slowly (a merged
pair of topics shares tables, which no move of whole tables can separate); these moves fix
that. With ``resample_concentrations`` alpha and gamma are drawn from their conditionals too
(the auxiliary-variable schemes of Escobar & West 1995 and Teh et al. 2006, appendix A, in
``ops.concentration``; Gamma(prior_shape, prior_rate) priors).

Sharded sweeps (``jaxtopics.distributed``, ``fit(..., devices=P)``; the ``parallel`` kernel):
documents are split over P devices; t, z, table_count and table_topic are per shard
(``SHARDING.fields``), word_topic, topic, topic_tables, alpha and gamma global and equal on every
shard. A sweep is the one-device parallel sweep whose table block b (dish batch (r, g)) is the
union of the shards' blocks b (batches (r, g)): each shard draws its tokens (tables) against
the counts at the block's start, the word-topic / topic moves are exchanged (``ops.exchange``)
and the m_k changes summed; each token (table) that opens a new dish gets a distinct free topic,
ranked over all shards (shard order) against the same free list. The split-merge moves and the
concentration draws are the same global moves with every sum over tokens or documents summed
over the shards and the global draws keyed alike on every shard (`_split_merge`,
`_resample_concentrations`); each shard re-seats its own documents. Overflow is the whole
sweep's. One device (``axis_name=None``) is exactly the kernel above; a shard's padding tokens
(`_real`) sit at no table and count nowhere.

Capacity: topics and table slots per document are the static shapes of the state's arrays
(``word_topic`` [V, K], ``table_count`` [D, T]), with active masks (m_k > 0, n_jt > 0). A sweep that
needs a slot it does not have reports ``overflow``; the driver (``fit.run_sweeps``) discards it,
calls `grow` (double and re-pad, outside jit) and redoes it with the same key.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.scipy.special import gammaln

from .. import sampled_concentrations
from ..corpus import Corpus
from ..devices import to_device
from ..errors import CorpusError, ParameterError
from ..validate import MAX_BLOCKS, array_spec, check_int, count_problem, latent_problem, same_length
from ..ops import (categorical, categorical_logits, concentration_groups,
                   concentration_one_group, count_table, dirichlet_multinomial_log_evidence,
                   exchange, log_rising_factorial, move_counts, pad_array, pad_blocks,
                   shard_prefix, shard_sum, shared_key, strided_blocks)
from ..ops.counts import count_invariants, table_total
from .base import Sharding
from .hdp_fold_in import fold_in_with_prior
from .hdp_split_merge import _nth_free, _real, _split_merge

__all__ = [
    "Params", "State", "Data", "SweepInfo", "SAMPLERS",
    "check_params", "check_state", "prepare", "init", "state_from_seating", "sweep", "grow", "log_joint",
    "estimate", "fold_in", "assignments", "rebuild", "active_topics",
    "check_shard_params", "shard_sizes", "pad_shard", "recount_shard", "traced_priors",
    "kernel_module", "migrate_params",
]

#: every HDP kernel: direct assignment (``hdp_direct``), then the CRF's (this module)
SAMPLERS = ("parallel", "sequential", "crf", "crf_sequential")
SHARDED_SAMPLERS = ("crf",)
#: parameters added after model files were written, with the value older files ran with
PARAMS_ADDED_LATER = {"split_merge_every": 0}      # this module's kernel that runs sharded (``distributed``)
_F32 = jnp.float32

# sharding hooks (``jaxtopics.distributed``; module docstring, "Sharded sweeps")
SHARDING = Sharding(
    fields={"t": "tokens", "z": "tokens", "table_count": "docs", "table_topic": "docs"},
    replicated=("alpha", "gamma"),      # global, but settings: never summed over shards
)


class Params(NamedTuple):
    """HDP hyper-parameters and kernel settings (hashable: a static argument under jit).

    alpha: document-level DP concentration (alpha_0). gamma: corpus-level DP concentration.
    beta: symmetric topic-word Dirichlet. sampler: "parallel" | "sequential" (direct
    assignment, ``hdp_direct``) | "crf" | "crf_sequential" (this module's CRF kernels).
    initial_topics: topics of the random initial state (tokens drawn uniformly among them, one
    table per document and topic). resample_concentrations: draw alpha and gamma every sweep
    (Gamma(prior_shape, prior_rate) priors); alpha and gamma are then the starting values.
    split_merge_steps: split-merge attempts per sweep (0 = none); split_merge_every: E, the
    attempts run in a sweep with probability 1/E (0 = automatic: 1 for the CRF kernels,
    ``hdp_direct.SPLIT_MERGE_EVERY`` for direct assignment).
    num_blocks: token blocks of a parallel sweep; dish_groups: document groups of the parallel
    dish step. topic_capacity, table_capacity: initial capacities (0 = automatic); grown as
    needed. chunk_size: tokens per chunk of the parallel dish step.
    """

    alpha: float = 1.0
    gamma: float = 1.0
    beta: float = 0.05
    sampler: str = "parallel"
    initial_topics: int = 1
    resample_concentrations: bool = False
    split_merge_steps: int = 10
    num_blocks: int = 64
    dish_groups: int = 1
    topic_capacity: int = 0
    table_capacity: int = 0
    prior_shape: float = 1.0
    prior_rate: float = 1.0
    chunk_size: int = 4096
    split_merge_every: int = 0


class Data(NamedTuple):
    """Device layout of a corpus. Token arrays have one dummy slot at index N.

    word, doc: [N+1] int32 per token (corpus order). doc_len: [D] tokens per document.
    word_freq: [V] corpus frequency of each word of the vocabulary (its shape gives V).
    doc_word: [N] id of the token's (document, word) pair (0 .. pairs-1).
    blocks, valid: [B, C] token positions of each table-step block of the parallel kernel
    (N = padding) and their mask.
    """

    word: Array
    doc: Array
    doc_len: Array
    word_freq: Array
    doc_word: Array
    blocks: Array
    valid: Array


class State(NamedTuple):
    """Chain state (a pytree; capacities K = topics, T = table slots per document are shapes).

    t: [N+1] int32 table slot of each token in its document (slot N: dummy 0).
    z: [N+1] int32 topic of each token (= table_topic[doc, t]; slot N: dummy 0).
    table_count: [D, T] int32 n_jt (0 = free slot). table_topic: [D, T] int32 dish k_jt (0 where
    the slot is free). word_topic: [V, K] int32 n_kw. topic: [K] int32 n_k. topic_tables: [K]
    int32 m_k (0 = free topic). alpha, gamma: float32 scalars, the current concentrations.
    """

    t: Array
    z: Array
    table_count: Array
    table_topic: Array
    word_topic: Array
    topic: Array
    topic_tables: Array
    alpha: Array
    gamma: Array


class SweepInfo(NamedTuple):
    """Per-sweep diagnostics. changed: tokens whose topic changed (int32). overflow: the sweep
    needed a topic or table slot the state lacks (the driver grows and redoes it).
    accepted: split-merge moves accepted. num_topics: active topics after the sweep."""

    changed: Array
    overflow: Array
    accepted: Array
    num_topics: Array


# --------------------------------------------------------------------------------------------
# parameters, layout, state


def _check_positive(name: str, v) -> None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {v!r}")
    if not np.isfinite(v) or v <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {v!r}")
    if v < 1e-30 or v > 1e30:
        raise ParameterError(f"{name} must lie in [1e-30, 1e30] (float32), got {v!r}")


def check_params(params: Params) -> Params:
    """Validate hyper-parameters; raises ParameterError naming the bad field."""
    for name in ("alpha", "gamma", "beta"):
        _check_positive(name, getattr(params, name))
    if params.sampler not in SAMPLERS:
        raise ParameterError(f"sampler must be one of {SAMPLERS}, got {params.sampler!r}")
    sampled_concentrations.check(params)     # resample_concentrations, prior_shape, prior_rate
    for name, low in (("initial_topics", 1), ("split_merge_steps", 0), ("split_merge_every", 0),
                      ("dish_groups", 1), ("topic_capacity", 0), ("table_capacity", 0),
                      ("chunk_size", 1)):
        check_int(getattr(params, name), name, low=low)       # int32: they reach jit
    check_int(params.num_blocks, "num_blocks", low=1, high=MAX_BLOCKS)
    if params.initial_topics > 2**20:
        raise ParameterError(f"initial_topics must be an integer <= {2**20}, "
                             f"got {params.initial_topics}")
    return params


def prepare(corpus: Corpus, params: Params) -> Data:
    """Lay the corpus out for sweeps: per-token arrays and the table-step blocks."""
    n = corpus.num_tokens
    if n == 0:
        raise CorpusError("HDP needs a corpus with at least one token")
    blocks, valid = strided_blocks(n, params.num_blocks)
    return Data(
        word=to_device(np.append(corpus.word_ids, 0).astype(np.int32)),
        doc=to_device(np.append(corpus.doc_index, 0).astype(np.int32)),
        doc_len=to_device(corpus.doc_lengths.astype(np.int32)),
        word_freq=to_device(np.bincount(corpus.word_ids, minlength=corpus.num_words).astype(np.int32)),
        doc_word=to_device(np.unique(corpus.doc_index.astype(np.int64) * corpus.num_words
                                       + corpus.word_ids, return_inverse=True)[1].astype(np.int32)),
        blocks=to_device(blocks), valid=to_device(valid),
    )


def _capacities(params: Params) -> tuple[int, int]:
    """Initial (topics, table slots) of `init`: the requested ones, at least what the initial
    state needs (0 = automatic: twice the initial topics, at least 16 topics / 8 tables)."""
    k0 = params.initial_topics
    k = params.topic_capacity or max(16, 2 * k0)
    t = params.table_capacity or max(8, k0)
    return max(k, k0), max(t, min(k0, 2**20))


def _recount(t: Array, table_topic: Array, data: Data, num_words: int, num_topics: int,
             alpha, gamma) -> State:
    """Count tables for the seating `t` [N] and dishes `table_topic` [D, T] (free slots -> 0).
    A shard's padding tokens (`_real`) get t = z = 0 and are counted nowhere."""
    n = data.word.shape[0] - 1
    d_cap, t_cap = table_topic.shape
    real = _real(data)
    t = jnp.where(real, jnp.asarray(t, jnp.int32)[:n], 0)
    doc, word = data.doc[:n], data.word[:n]
    table_count = count_table((d_cap, t_cap), doc, t, weights=real)
    active = table_count > 0
    table_topic = jnp.where(active, jnp.asarray(table_topic, jnp.int32), 0)
    z = jnp.where(real, table_topic[doc, t], 0)
    return State(
        t=jnp.append(t, 0).astype(jnp.int32), z=jnp.append(z, 0).astype(jnp.int32),
        table_count=table_count, table_topic=table_topic,
        word_topic=count_table((num_words, num_topics), word, z, weights=real),
        topic=count_table((num_topics,), z, weights=real),
        topic_tables=count_table((num_topics,), table_topic.reshape(-1),
                                 weights=active.reshape(-1)),
        alpha=jnp.asarray(alpha, _F32), gamma=jnp.asarray(gamma, _F32))


def state_from_seating(t: Array, table_topic: Array, data: Data, num_topics: int, *,
                       alpha: float, gamma: float) -> State:
    """The state of a given seating: table slot `t` [N] of every token (corpus order) and dish
    `table_topic` [D, T] of every table slot (dishes < `num_topics`, the topic capacity); every
    count table is recounted."""
    return _recount(t, table_topic, data, data.word_freq.shape[0], num_topics, alpha, gamma)


def init(key: Array, data: Data, params: Params) -> State:
    """Random initial state: each token's topic uniform among ``initial_topics``, one table per
    document and topic (the tokens of a document that share a topic share its table)."""
    n = data.word.shape[0] - 1
    d = data.doc_len.shape[0]
    v = data.word_freq.shape[0]
    k0 = params.initial_topics
    k_cap, t_cap = _capacities(params)
    z = jax.random.randint(key, (n,), 0, k0)
    doc = data.doc[:n]
    present = count_table((d, k0), doc, z) > 0
    slot_of = jnp.cumsum(present, axis=1, dtype=jnp.int32) - 1          # [D, K0]
    t = slot_of[doc, z]
    rows = jnp.where(present, jnp.arange(d)[:, None], d)                # absent: dropped
    table_topic = jnp.zeros((d, t_cap), jnp.int32).at[rows, slot_of].set(
        jnp.broadcast_to(jnp.arange(k0, dtype=jnp.int32), (d, k0)), mode="drop")
    return _recount(t, table_topic, data, v, k_cap, params.alpha, params.gamma)


def grow(state: State, data: Data, params: Params) -> State:
    """Double the topic capacity, the table capacity, or both, and re-pad (host side).

    The sweep that overflowed is discarded, so which capacity ran out is not known here: every
    capacity at least half in use is doubled (a sweep rarely opens more than that at once), and
    both when neither is (a redo that overflows again grows again).
    """
    t_cap = state.table_count.shape[-1]
    k_cap = state.word_topic.shape[-1]
    tables_used = int(jnp.max(jnp.sum(state.table_count > 0, axis=-1)))
    topics_used = int(jnp.max(jnp.sum(state.topic_tables > 0, axis=-1)))
    grow_t = 2 * tables_used >= t_cap
    grow_k = 2 * topics_used >= k_cap
    if not (grow_t or grow_k):
        grow_t = grow_k = True

    def pad(a, extra):
        return jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, extra)])

    if grow_t:
        state = state._replace(table_count=pad(state.table_count, t_cap),
                               table_topic=pad(state.table_topic, t_cap))
    if grow_k:
        state = state._replace(word_topic=pad(state.word_topic, k_cap),
                               topic=pad(state.topic, k_cap),
                               topic_tables=pad(state.topic_tables, k_cap))
    return state


# --------------------------------------------------------------------------------------------
# table step (T)


def _seat_weights(cnt: Array, dish: Array, s: Array, word_rows: Array, st: State, beta: float,
                  exclude_self: bool) -> tuple[Array, Array, Array]:
    """(T) for tokens with table rows `cnt`, `dish` [C, T] of their documents, own table
    `s` [C] and word-topic rows `word_rows` [C, K]: each token leaves itself out (its table,
    topic and word counts; its table's m_k if it sat alone) and weighs T + K + 1 choices: an
    existing table of its document, a new table with an existing dish, a new table with a new
    dish. Returns (weights [C, T+K+1], current topic ks [C], tokens at the own table c0 [C]).
    `exclude_self=False` leaves the "-1" out: a deliberately wrong kernel, for negative tests.
    """
    t_cap = cnt.shape[1]
    v, k_cap = st.word_topic.shape
    ks = jnp.take_along_axis(dish, s[:, None], 1)[:, 0]
    c0 = jnp.take_along_axis(cnt, s[:, None], 1)[:, 0]
    x = jnp.int32(1 if exclude_self else 0)
    own_t = (jnp.arange(t_cap)[None, :] == s[:, None]).astype(jnp.int32) * x
    own_k = (jnp.arange(k_cap)[None, :] == ks[:, None]).astype(jnp.int32) * x
    alone = (c0 == 1).astype(jnp.int32) * x
    m = st.topic_tables
    m_x = m[None, :] - own_k * alone[:, None]
    m_tot = jnp.sum(m) - alone
    f = ((word_rows - own_k).astype(_F32) + beta) / (
        (st.topic[None, :] - own_k).astype(_F32) + v * beta)      # (F), [C, K]
    w_tab = (cnt - own_t).astype(_F32) * jnp.take_along_axis(f, dish, 1)
    scale = st.alpha / (m_tot.astype(_F32) + st.gamma)
    # each row divided by max(its largest table weight, scale) (the draw is scale-free): a
    # token alone in its document with alpha ~ 1e-30 would otherwise see every weight round to 0
    norm = jnp.maximum(jnp.max(w_tab, axis=1), scale)
    w_dish = (scale / norm)[:, None] * m_x.astype(_F32) * f
    w_new = (scale / norm) * st.gamma / v
    return jnp.concatenate([w_tab / norm[:, None], w_dish, w_new[:, None]], axis=1), ks, c0


def _seat_block(st: State, pos: Array, valid: Array, u: Array, data: Data, beta: float,
                exclude_self: bool = True, axis_name: str | None = None) -> tuple[State, Array]:
    """Table step for a block of tokens, all drawn from `_seat_weights` against the counts at
    the block's start. New tables take the free slots (at the block's start) of their document
    in token order, new dishes the free topics; running out of either is reported as overflow.

    Sharded (`axis_name`): the block is the union of the shards' blocks. New dishes are ranked
    over all shards (shard order, then token order) against the same free topics; the
    word-topic / topic moves are exchanged (``ops.exchange``) and the m_k changes summed.
    """
    d_cap, t_cap = st.table_count.shape
    k_cap = st.word_topic.shape[1]
    doc, word, s = data.doc[pos], data.word[pos], st.t[pos]
    cnt, dish = st.table_count[doc], st.table_topic[doc]          # [C, T]
    weights, ks, c0 = _seat_weights(cnt, dish, s, st.word_topic[word], st, beta, exclude_self)
    choice = categorical(u, weights)
    m = st.topic_tables

    is_tab = choice < t_cap
    opener = valid & ~is_tab
    new_dish = valid & (choice == t_cap + k_cap)
    # new table slots: the r-th opener of a document (in block order) takes its r-th free slot
    # (blocks keep corpus order, so a document's tokens are contiguous in a block)
    dkey = jnp.where(valid, doc, d_cap)
    seg = jnp.searchsorted(dkey, dkey, side="left")
    before = jnp.cumsum(opener, dtype=jnp.int32) - opener
    slot = _nth_free(jnp.cumsum(cnt == 0, axis=1, dtype=jnp.int32), before - before[seg])
    # new topics: the r-th new dish of the block (over all shards) takes the r-th free topic
    before_k = shard_prefix(jnp.sum(new_dish, dtype=jnp.int32)[None], axis_name)[0][0]
    rank_k = jnp.cumsum(new_dish, dtype=jnp.int32) - new_dish + before_k
    kslot = _nth_free(jnp.cumsum(m == 0, dtype=jnp.int32)[None, :], rank_k)
    overflow = jnp.any(opener & (slot >= t_cap)) | jnp.any(new_dish & (kslot >= k_cap))

    tab = jnp.minimum(choice, t_cap - 1)
    new_s = jnp.where(is_tab, tab, jnp.minimum(slot, t_cap - 1))
    new_k = jnp.where(is_tab, jnp.take_along_axis(dish, tab[:, None], 1)[:, 0],
                      jnp.where(new_dish, jnp.minimum(kslot, k_cap - 1),
                                jnp.minimum(choice - t_cap, k_cap - 1)))
    weight = valid.astype(jnp.int32)
    table_count = move_counts(st.table_count, doc, s, new_s, weight)
    table_topic = st.table_topic.at[jnp.where(opener, doc, d_cap), new_s].set(new_k, mode="drop")
    # a table emptied in this block lost all its c0 tokens here: each adds 1/c0 to its dish's
    # decrement (rounded: exact for any number of emptied tables)
    gone = valid & (table_count[doc, s] == 0)
    dec = jnp.zeros(k_cap, _F32).at[ks].add(jnp.where(gone, 1.0 / jnp.maximum(c0, 1), 0.0))
    delta_m = (jnp.zeros(k_cap, jnp.int32).at[new_k].add(opener.astype(jnp.int32))
               - jnp.round(dec).astype(jnp.int32))
    t, z = st.t.at[pos].set(jnp.where(valid, new_s, 0)), st.z.at[pos].set(jnp.where(valid, new_k, 0))
    word, ks, new_k, weight = exchange(axis_name, word, ks, new_k, weight)
    return State(
        t=t, z=z, table_count=table_count, table_topic=table_topic,
        word_topic=move_counts(st.word_topic, word, ks, new_k, weight),
        topic=move_counts(st.topic, None, ks, new_k, weight),
        topic_tables=m + shard_sum(delta_m, axis_name), alpha=st.alpha, gamma=st.gamma), overflow


def _table_steps(key: Array, st: State, data: Data, params: Params,
                 exclude_self: bool = True, axis_name: str | None = None) -> tuple[State, Array]:
    """The table step of every token, block by block (the parallel kernel; sharded: block b of
    every shard at once, `_seat_block`)."""
    u = jax.random.uniform(key, data.blocks.shape)

    def block(carry, xs):
        st, overflow = carry
        pos, valid, ub = xs
        st, o = _seat_block(st, pos, valid, ub, data, params.beta, exclude_self, axis_name)
        return (st, overflow | o), None

    (st, overflow), _ = jax.lax.scan(block, (st, jnp.bool_(False)), (data.blocks, data.valid, u))
    return st, overflow


def _table_steps_sequential(key: Array, st: State, data: Data, params: Params,
                            exclude_self: bool = True) -> tuple[State, Array]:
    """The exact table step of every token in corpus order (`_seat_weights`, one token at a
    time). A document's table rows are loop state while its tokens move and are written back
    once (XLA would copy the whole [D, T] tables at every token otherwise)."""
    n = data.word.shape[0] - 1
    d_cap, t_cap = st.table_count.shape
    k_cap = st.word_topic.shape[1]
    u = jax.random.uniform(key, (n,))
    doc_start = jnp.cumsum(data.doc_len) - data.doc_len

    def token(i, c):
        row, dish, t, z, word_topic, topic, m, overflow = c
        w, s = data.word[i], t[i]
        view = st._replace(word_topic=word_topic, topic=topic, topic_tables=m)
        weights, ks, c0 = _seat_weights(row[None], dish[None], s[None], word_topic[w][None],
                                        view, params.beta, exclude_self)
        choice = categorical(u[i][None], weights)[0]
        is_tab = choice < t_cap
        new_dish = choice == t_cap + k_cap
        free_t, free_k = row == 0, m == 0
        overflow = overflow | (~is_tab & ~jnp.any(free_t)) | (new_dish & ~jnp.any(free_k))
        tab = jnp.minimum(choice, t_cap - 1)
        new_s = jnp.where(is_tab, tab, jnp.argmax(free_t))
        new_k = jnp.where(is_tab, dish[tab],
                          jnp.where(new_dish, jnp.argmax(free_k), jnp.minimum(choice - t_cap, k_cap - 1)))
        row = row.at[s].add(-1).at[new_s].add(1)
        dish = dish.at[new_s].set(jnp.where(is_tab, dish[new_s], new_k))
        gone = (c0[0] == 1) & (new_s != s)                    # its old table emptied
        m = m.at[jnp.stack([new_k, ks[0]])].add(
            jnp.stack([(~is_tab).astype(jnp.int32), -gone.astype(jnp.int32)]))
        one = jnp.ones((1,), jnp.int32)
        return (row, dish, t.at[i].set(new_s), z.at[i].set(new_k),
                move_counts(word_topic, w[None], ks, new_k[None], one),
                move_counts(topic, None, ks, new_k[None], one), m, overflow)

    def document(d, carry):
        st, overflow = carry
        c = (st.table_count[d], st.table_topic[d], st.t, st.z, st.word_topic, st.topic,
             st.topic_tables, overflow)
        row, dish, t, z, word_topic, topic, m, overflow = jax.lax.fori_loop(
            doc_start[d], doc_start[d] + data.doc_len[d], token, c)
        return st._replace(table_count=st.table_count.at[d].set(row),
                           table_topic=st.table_topic.at[d].set(dish), t=t, z=z,
                           word_topic=word_topic, topic=topic, topic_tables=m), overflow

    return jax.lax.fori_loop(0, d_cap, document, (st, jnp.bool_(False)))


# --------------------------------------------------------------------------------------------
# seating index: tokens sorted by (table slot, document, word)


class _Seating(NamedTuple):
    """Tokens sorted by (table slot, document, word): the tokens of a table are contiguous, the
    tables of slot r of consecutive documents too (a shard's padding tokens last, in no table).
    word, doc, slot: [N] in that order;
    word_rank: [N] rank of the token among the tokens of its word at its table (0, 1, ...);
    run: [N] how many tokens of its word its table has (c_jtw);
    table_rank: [N] its rank among the tokens of its table; start: [T*D + 1] first sorted
    position of table (d, r) at index r*D + d, then the number of seated tokens.

    The Polya predictive of a table's block of tokens, prod_w (x_w)^(c_w) / (y)^(n) (rising
    factorials), is then the product over its tokens of (x_w + word_rank) / (y + table_rank):
    one log per token and topic, exact, where lgamma differences cost ~30x more on XLA:CPU.
    """

    word: Array
    doc: Array
    slot: Array
    word_rank: Array
    run: Array
    table_rank: Array
    start: Array


def _seating(st: State, data: Data) -> _Seating:
    n = data.word.shape[0] - 1
    d_cap, t_cap = st.table_count.shape
    v = st.word_topic.shape[0]
    t, doc, word = st.t[:n], data.doc[:n], data.word[:n]
    real = _real(data)                       # a shard's padding tokens sort last, in no table
    if t_cap * d_cap * v < 2**31:
        perm = jnp.argsort(jnp.where(real, (t * d_cap + doc) * v + word, 2**31 - 1), stable=True)
    else:
        perm = jnp.lexsort((word, doc, jnp.where(real, t, t_cap)))
    ts, ds, ws = t[perm], doc[perm], word[perm]
    q = jnp.arange(n, dtype=jnp.int32)
    new_table = (q == 0) | (ts != jnp.roll(ts, 1)) | (ds != jnp.roll(ds, 1))
    head = new_table | (ws != jnp.roll(ws, 1))
    word_rank = q - jax.lax.cummax(jnp.where(head, q, 0))
    run_id = jnp.cumsum(head, dtype=jnp.int32) - 1
    run = jax.ops.segment_sum(jnp.ones(n, jnp.int32), run_id, num_segments=n)[run_id]
    table_rank = q - jax.lax.cummax(jnp.where(new_table, q, 0))
    flat = st.table_count.T.reshape(-1)
    start = jnp.append(jnp.cumsum(flat, dtype=jnp.int32) - flat, jnp.sum(flat, dtype=jnp.int32))
    return _Seating(ws, ds, ts, word_rank, run, table_rank, start.astype(jnp.int32))


# --------------------------------------------------------------------------------------------
# dish step (D)


def _dish_batch(st: State, seat: _Seating, slot: Array, d_lo: Array, lo: Array, hi: Array,
                u: Array, beta: float, chunk: int, bt: int, exclude_self: bool = True,
                axis_name: str | None = None) -> tuple[State, Array]:
    """Dish step of the tables at slot `slot` of documents d_lo .. d_lo+bt-1 (their tokens are
    the sorted positions lo..hi-1), all drawn against the counts at the batch's start.

    Each table leaves itself out (m_k^-jt, n_kw^-jt, n_k^-jt) and draws an existing dish or a new
    one from the Polya predictive of its whole block of tokens, in log space, accumulated token
    by token (see `_Seating`). `exclude_self=False`: the table stays in its own dish's counts (a
    deliberately wrong kernel, for negative tests).

    Sharded (`axis_name`): the batch is the union of the shards' batches. New dishes are ranked
    over all shards against the same free topics; the word-topic moves of the tables' tokens
    are exchanged chunk by chunk (every shard loops over the largest chunk count), the topic
    and m_k moves table by table.
    """
    d_cap = st.table_count.shape[0]
    v, k_cap = st.word_topic.shape
    vb = v * beta
    n = seat.word.shape[0]
    docs = d_lo + jnp.arange(bt)
    dc = jnp.minimum(docs, d_cap - 1)
    n_t = jnp.where(docs < d_cap, st.table_count[dc, slot], 0)
    live = n_t > 0
    cur = st.table_topic[dc, slot]
    ar_k = jnp.arange(k_cap)
    num_chunks = (hi - lo + chunk - 1) // chunk

    def tokens(c):
        q = lo + c * chunk + jnp.arange(chunk)
        ok = q < hi
        qc = jnp.minimum(q, n - 1)
        b = jnp.clip(seat.doc[qc] - d_lo, 0, bt - 1)
        return ok, qc, b

    def predictive(c, carry):
        acc, acc_new = carry
        ok, q, b = tokens(c)
        rw, rt = seat.word_rank[q].astype(_F32), seat.table_rank[q].astype(_F32)
        own = (ar_k[None, :] == cur[b][:, None]) & exclude_self
        x = (st.word_topic[seat.word[q]] - jnp.where(own, seat.run[q][:, None], 0)).astype(_F32)
        y = (st.topic[None, :] - jnp.where(own, n_t[b][:, None], 0)).astype(_F32)
        term = jnp.log(x + (beta + rw[:, None])) - jnp.log(y + (vb + rt[:, None]))
        new = jnp.log(beta + rw) - jnp.log(vb + rt)
        return (acc.at[b].add(jnp.where(ok[:, None], term, 0.0)),
                acc_new.at[b].add(jnp.where(ok, new, 0.0)))

    acc, acc_new = jax.lax.fori_loop(0, num_chunks, predictive,
                                     (jnp.zeros((bt, k_cap), _F32), jnp.zeros((bt,), _F32)))
    m_x = st.topic_tables[None, :] - ((ar_k[None, :] == cur[:, None]) & exclude_self)
    logits = jnp.where(m_x > 0, jnp.log(jnp.maximum(m_x, 1).astype(_F32)) + acc, -jnp.inf)
    logit_new = jnp.log(st.gamma) + acc_new
    choice = categorical_logits(u, jnp.concatenate([logits, logit_new[:, None]], axis=1))
    is_new = live & (choice == k_cap)
    before, _, top = shard_prefix(jnp.stack([jnp.sum(is_new, dtype=jnp.int32), num_chunks]),
                                   axis_name)
    rank = jnp.cumsum(is_new, dtype=jnp.int32) - is_new + before[0]
    kslot = _nth_free(jnp.cumsum(st.topic_tables == 0, dtype=jnp.int32)[None, :], rank)
    overflow = jnp.any(is_new & (kslot >= k_cap))
    new = jnp.where(live, jnp.minimum(jnp.where(is_new, kslot, choice), k_cap - 1), cur)

    def move(c, word_topic):
        ok, q, b = tokens(c)
        w, old, nw, wt = exchange(axis_name, seat.word[q], cur[b], new[b], ok.astype(jnp.int32))
        return move_counts(word_topic, w, old, nw, wt)

    word_topic = jax.lax.fori_loop(0, top[1], move, st.word_topic)
    wgt = live.astype(jnp.int32)
    cur_x, new_x, n_x, wgt_x = exchange(axis_name, cur, new, n_t, wgt)
    return st._replace(
        word_topic=word_topic,
        topic=move_counts(st.topic, None, cur_x, new_x, n_x),
        topic_tables=move_counts(st.topic_tables, None, cur_x, new_x, wgt_x),
        table_topic=st.table_topic.at[jnp.where(live, docs, d_cap), slot].set(new, mode="drop"),
    ), overflow


def _dish_steps_sequential(key: Array, st: State, seat: _Seating, params: Params,
                           exclude_self: bool = True) -> tuple[State, Array]:
    """Exact dish step: every active table in turn (slot-major order), one table per draw."""
    d_cap, t_cap = st.table_count.shape
    active = (st.table_count.T > 0).reshape(-1)
    order = jnp.argsort(~active, stable=True).astype(jnp.int32)
    u = jax.random.uniform(key, (t_cap * d_cap,))

    def body(i, carry):
        st, overflow = carry
        f = order[i]
        r, d = f // d_cap, f % d_cap
        lo = seat.start[f]
        st, o = _dish_batch(st, seat, r, d, lo, lo + st.table_count[d, r], u[i][None],
                            params.beta, min(8, seat.word.shape[0]), 1, exclude_self)
        return st, overflow | o

    return jax.lax.fori_loop(0, jnp.sum(active, dtype=jnp.int32), body, (st, jnp.bool_(False)))


def _dish_steps_parallel(key: Array, st: State, seat: _Seating, params: Params,
                         exclude_self: bool = True, axis_name: str | None = None
                         ) -> tuple[State, Array]:
    """Blocked dish step: slot by slot, the tables of slot r of a group of documents at once
    (sharded: of the group's documents on every shard; a batch runs where any shard has a table
    in it, so that all shards take the same branches around the collectives)."""
    d_cap, t_cap = st.table_count.shape
    bt = -(-d_cap // min(params.dish_groups, d_cap))
    groups = -(-d_cap // bt)
    u = jax.random.uniform(key, (t_cap * groups, bt))
    chunk = min(params.chunk_size, max(seat.word.shape[0], 1))
    i_all = jnp.arange(t_cap * groups)
    lo_all = seat.start[(i_all // groups) * d_cap + (i_all % groups) * bt]
    hi_all = seat.start[(i_all // groups) * d_cap + jnp.minimum((i_all % groups) * bt + bt, d_cap)]
    busy = shard_sum((hi_all > lo_all).astype(jnp.int32), axis_name) > 0

    def body(i, carry):
        st, overflow = carry
        r, g = i // groups, i % groups
        d_lo = g * bt
        st, o = jax.lax.cond(
            busy[i],
            lambda s: _dish_batch(s, seat, r, d_lo, lo_all[i], hi_all[i], u[i], params.beta,
                                  chunk, bt, exclude_self, axis_name),
            lambda s: (s, jnp.bool_(False)), st)
        return st, overflow | o

    return jax.lax.fori_loop(0, t_cap * groups, body, (st, jnp.bool_(False)))


# --------------------------------------------------------------------------------------------
# concentrations (Escobar & West 1995 for gamma; Teh et al. 2006, appendix A, for alpha)


def _resample_concentrations(key: Array, st: State, data: Data, params: Params,
                             axis_name: str | None = None, shared: Array | None = None) -> State:
    """One auxiliary-variable Gibbs update of alpha and gamma given the table counts
    (``ops.concentration``; Gamma(prior_shape, prior_rate) priors):

    alpha: the seatings of the documents are DP(alpha) partitions of n_j tokens into m tables
    in all (TG, groups = documents): w_j ~ Beta(alpha + 1, n_j), s_j ~ Bernoulli(n_j / (n_j +
    alpha)), alpha ~ Gamma(a + m - sum s_j, b - sum log w_j).
    gamma: the dishes are one DP(gamma) partition of the m tables into K topics (EW):
    eta ~ Beta(gamma + 1, m), gamma ~ pi Gamma(a + K, b - log eta) + (1 - pi) Gamma(a + K - 1,
    b - log eta), pi / (1 - pi) = (a + K - 1) / (m (b - log eta)).
    Sharded: w_j, s_j per shard (its `key`), their sums over all shards; the draws of alpha and
    gamma from `shared` (the same key on every shard), so alpha and gamma stay equal.
    """
    a, b = params.prior_shape, params.prior_rate
    k_alpha, _ = jax.random.split(key)
    s_alpha, s_gamma = jax.random.split(key if shared is None else shared)
    m = jnp.sum(st.topic_tables)
    k = jnp.sum(st.topic_tables > 0)
    alpha = concentration_groups(k_alpha, st.alpha, data.doc_len, m, a, b,
                                 axis_name=axis_name, shared=s_alpha)
    return st._replace(alpha=alpha, gamma=concentration_one_group(s_gamma, st.gamma, k, m, a, b))


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """The concentrations the chain samples, recorded along the trace: {"alpha", "gamma"}
    with ``resample_concentrations``, else {} (they stay at the Params' values)."""
    return sampled_concentrations.traced(state, params, ("alpha", "gamma"))


# --------------------------------------------------------------------------------------------
# sweep


def _finish(st: State, data: Data) -> State:
    """Free table slots get dish 0 and every token's topic is read from its table (the dummy
    slot and a shard's padding tokens: 0)."""
    table_topic = jnp.where(st.table_count > 0, st.table_topic, 0)
    z = jnp.where(_real(data, dummy=True), table_topic[data.doc, st.t], 0)
    return st._replace(table_topic=table_topic, z=z)


def _sweep(key: Array, state: State, data: Data, params: Params, exclude_self: bool = True,
           axis_name: str | None = None) -> tuple[State, SweepInfo]:
    k_tab, k_dish, k_sm, k_conc = jax.random.split(key, 4)
    _, _, g_sm, g_conc = jax.random.split(shared_key(key, axis_name), 4)
    if params.sampler == "crf_sequential":
        st, of_tab = _table_steps_sequential(k_tab, state, data, params, exclude_self)
    else:
        st, of_tab = _table_steps(k_tab, state, data, params, exclude_self, axis_name)
    seat = _seating(st, data)
    if params.sampler == "crf_sequential":
        st, of_dish = _dish_steps_sequential(k_dish, st, seat, params, exclude_self)
    else:
        st, of_dish = _dish_steps_parallel(k_dish, st, seat, params, exclude_self, axis_name)
    st = _finish(st, data)                      # the dish step moved whole tables: refresh z
    accepted, of_sm = jnp.int32(0), jnp.bool_(False)
    if params.split_merge_steps and data.word.shape[0] - 1 >= 2:     # a split needs two tokens
        def moves(s):
            s, acc, of = _split_merge(k_sm, s, data, params, params.split_merge_steps, axis_name,
                                      g_sm)
            return _finish(s, data), acc, of
        if params.split_merge_every > 1:        # in a sweep with probability 1/E
            run = jax.random.uniform(jax.random.fold_in(g_sm, 1)) * params.split_merge_every < 1
            st, accepted, of_sm = jax.lax.cond(run, moves, lambda s: (s, accepted, of_sm), st)
        else:
            st, accepted, of_sm = moves(st)
    if params.resample_concentrations:
        st = _resample_concentrations(k_conc, st, data, params, axis_name, g_conc)
    changed = jnp.sum(st.z != state.z, dtype=jnp.int32)
    overflow = of_tab | of_dish | of_sm
    changed = shard_sum(changed, axis_name)     # the whole sweep's, equal on every shard
    overflow = shard_sum(overflow.astype(jnp.int32), axis_name) > 0
    return st, SweepInfo(changed=changed, overflow=overflow, accepted=accepted,
                         num_topics=jnp.sum(st.topic_tables > 0, dtype=jnp.int32))


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler`` (table steps, dish steps, split-merge moves,
    concentrations); pure and jit/vmap-able (params static). If ``info.overflow``, the returned
    state is garbage: discard it, `grow` the input state and redo the sweep with the same key.

    `axis_name`: inside ``shard_map`` over documents (``jaxtopics.distributed``), the mapped
    axis: the ``parallel`` kernel sharded (module docstring, "Sharded sweeps"); the info is the
    whole sweep's, equal on every shard."""
    if axis_name is not None:
        check_shard_params(params)
    return _sweep(key, state, data, params, axis_name=axis_name)


# --------------------------------------------------------------------------------------------
# sharding hooks (``jaxtopics.distributed``)


def check_shard_params(params: Params) -> None:
    """Sharded sweeps run the blocked CRF kernel ("crf"; "crf_sequential" visits tables one at
    a time over the whole corpus)."""
    if params.sampler != "crf":
        raise ParameterError(f"sharded CRF sweeps (devices > 1) run the 'crf' kernel, got "
                             f"sampler={params.sampler!r}")


def shard_sizes(data: Data, num_shards: int) -> dict[str, int]:
    """The sizes of a shard's layout: tokens, documents and the table-step blocks' [B, C]."""
    b, c = data.blocks.shape
    return {"tokens": data.word.shape[0] - 1, "docs": data.doc_len.shape[0], "blocks": b,
            "block_width": c}


def pad_shard(data: Data, sizes: dict[str, int]) -> Data:
    """A shard's Data padded to ``sizes``: padding tokens (n..n_max-1: word 0, document 0,
    `_real` masks them out) and documents (empty) are in no block; the dummy token slot moves
    to n_max. word_freq stays the shard's own counts (only its shape, V, is read)."""
    n = data.word.shape[0] - 1
    n_max, d_max = sizes["tokens"], sizes["docs"]
    blocks, valid = pad_blocks(data.blocks, data.valid, n, n_max, sizes["blocks"],
                               sizes["block_width"])
    return Data(word=pad_array(data.word, (n_max + 1,), rows=n),
                doc=pad_array(data.doc, (n_max + 1,), rows=n),
                doc_len=pad_array(data.doc_len, (d_max,)), word_freq=np.asarray(data.word_freq),
                doc_word=pad_array(data.doc_word, (n_max,)), blocks=blocks, valid=valid)


def recount_shard(state: State, data: Data, params: Params, sizes: dict) -> State:
    """A shard's tables recounted from its seating (`rebuild`; padding tokens, which follow the
    ``sizes["tokens"]`` real ones, counted nowhere); word_topic, topic and topic_tables are this
    shard's part of the global tables, alpha and gamma the chain's (``SHARDING.replicated``)."""
    return rebuild(state, data, params)


# --------------------------------------------------------------------------------------------
# read-outs


def invariants(state: State, data: Data | None, params: Params) -> dict[str, Array]:
    """What the driver checks after every jitted chunk (``models.base.Invariants``): the count
    tables are non-negative, word_topic sums over its rows to topic, topic and table_count sum
    to the N tokens (when `data` is given; None: a sharded state's global view: to each other),
    and topic_tables to the occupied tables."""
    tokens = state.topic.sum()
    tables = table_total((state.table_count > 0).astype(jnp.int32))
    return count_invariants(
        {"table_count": state.table_count, "word_topic": state.word_topic, "topic": state.topic,
         "topic_tables": state.topic_tables},
        {"word_topic: sums over words to topic": (state.word_topic.sum(0), state.topic),
         "topic: sums to the tokens": (tokens, None if data is None else data.word.shape[0] - 1),
         "table_count: sums to the tokens": (table_total(state.table_count), tokens),
         "topic_tables: sums to the occupied tables": (state.topic_tables.sum(), tables)})


def log_joint(state: State, data: Data, params: Params) -> Array:
    """Collapsed log p(w, t, k) of the CRF (at the state's alpha, gamma):

    sum_j [T_j log alpha + sum_t log (n_jt - 1)! - log alpha^(n_j)]          (seating CRPs)
    + K log gamma + sum_k log (m_k - 1)! - log gamma^(m)                      (dish CRP)
    + sum_k [sum_w log beta^(n_kw) - log (V beta)^(n_k)]                      (F) evidence
    """
    cnt = state.table_count
    act = cnt > 0
    n_j = jnp.sum(cnt, axis=-1)
    alpha, gamma = state.alpha, state.gamma
    seating = (jnp.sum(act) * jnp.log(alpha) + jnp.sum(jnp.where(act, gammaln(cnt.astype(_F32)), 0.0))
               - jnp.sum(log_rising_factorial(jnp.broadcast_to(alpha, n_j.shape), n_j)))
    m = state.topic_tables
    used = m > 0
    dishes = (jnp.sum(used) * jnp.log(gamma) + jnp.sum(jnp.where(used, gammaln(m.astype(_F32)), 0.0))
              - log_rising_factorial(gamma, jnp.sum(m)))
    words = dirichlet_multinomial_log_evidence(state.word_topic, params.beta, axis=0)
    return seating + dishes + words


def active_topics(state: State) -> np.ndarray:
    """Slots of the active topics, largest first (ties by slot): row k of ``estimate``'s phi is
    topic slot ``active_topics(state)[k]``."""
    m = np.asarray(state.topic_tables)
    sizes = np.asarray(state.topic)
    slots = np.flatnonzero(m > 0)
    return slots[np.argsort(-sizes[slots], kind="stable")]


def estimate(state: State, params: Params) -> dict[str, Array]:
    """Point estimates over the active topics only (largest first), rows summing to 1:

    phi_kw = (n_kw + beta) / (n_k + V beta)                                  (F)
    theta_dk ∝ n_dk + alpha m_k / (m + gamma)                                (the counts with the CRF's
      prior mass of topic k, alpha m_k / (m + gamma), in place of a flat alpha_0; the mass of
      new topics, alpha gamma / (m + gamma), is left out and theta renormalised)
    plus num_active_topics, topic_sizes (tokens per topic), topic_tables (m_k) and the current
    concentrations alpha, gamma (also as sampled_alpha, sampled_gamma).
    """
    slots = active_topics(state)
    word_topic = np.asarray(state.word_topic)[:, slots].T.astype(np.float64)     # [K, V]
    v = word_topic.shape[1]
    sizes = np.asarray(state.topic)[slots]
    m = np.asarray(state.topic_tables).astype(np.float64)
    alpha, gamma = float(state.alpha), float(state.gamma)
    cnt = np.asarray(state.table_count)
    dish = np.asarray(state.table_topic)
    k_cap = m.shape[0]
    ndk = np.zeros((cnt.shape[0], k_cap))
    np.add.at(ndk, (np.repeat(np.arange(cnt.shape[0]), cnt.shape[1]), dish.reshape(-1)),
              cnt.reshape(-1))
    theta = ndk[:, slots] + alpha * m[slots] / (m.sum() + gamma)
    theta /= theta.sum(1, keepdims=True)
    phi = (word_topic + params.beta) / (sizes[:, None] + v * params.beta)
    return {"theta": theta.astype(np.float32), "phi": phi.astype(np.float32),
            "num_active_topics": np.int32(len(slots)), "topic_sizes": sizes.astype(np.int32),
            "topic_tables": m[slots].astype(np.int32),
            "alpha": np.float32(alpha), "gamma": np.float32(gamma),     # the current ones
            "sampled_alpha": np.float32(alpha), "sampled_gamma": np.float32(gamma)}  # older names


def held_out_prior(state: State, params: Params):
    """Left-to-right pieces (``jaxtopics.evaluation``): the CRF predictive of a new document
    with the fitted table counts held fixed, a_k = alpha m_k / (m + gamma) over the active
    topics (``estimate``'s order) plus one new-topic component of mass alpha gamma / (m + gamma)
    whose word predictive is the base measure's, 1/V; log phi as in ``estimate``."""
    from ..evaluation import HeldOutPrior

    slots = active_topics(state)
    m = np.asarray(state.topic_tables).astype(np.float64)
    alpha, gamma = float(state.alpha), float(state.gamma)
    word_topic = np.asarray(state.word_topic)[:, slots].T.astype(np.float64)      # [K, V]
    v = word_topic.shape[1]
    sizes = np.asarray(state.topic)[slots].astype(np.float64)
    log_phi = np.log(word_topic + params.beta) - np.log(sizes[:, None] + v * params.beta)
    log_phi = np.concatenate([log_phi, np.full((1, v), -np.log(v))])
    prior = np.append(alpha * m[slots], alpha * gamma) / (m.sum() + gamma)
    return HeldOutPrior(jnp.asarray(log_phi, jnp.float32), jnp.asarray(prior[None, :], jnp.float32),
                        jnp.zeros((1,), jnp.float32))


def assignments(state: State) -> Array:
    """Topic of every token [N] int32 (aligned with ``corpus.word_ids``), numbered as the rows of
    ``estimate``'s phi (active topics, largest first)."""
    slots = active_topics(state)
    rank = np.zeros(state.topic_tables.shape[-1], np.int32)
    rank[slots] = np.arange(len(slots), dtype=np.int32)
    return rank[np.asarray(state.z)[:-1]]


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int) -> State:
    """The shape and dtype of every State array (checked when a model file is read); the topic
    slots K and the table slots T are capacities, grown by ``grow``."""
    k, t = same_length(0), same_length(1)
    tokens, tables, scalar = array_spec(num_tokens + 1), array_spec(num_docs, t), array_spec(dtype=_F32)
    return State(t=tokens, z=tokens, table_count=tables, table_topic=tables,
                 word_topic=array_spec(num_words, k), topic=array_spec(k),
                 topic_tables=array_spec(k), alpha=scalar, gamma=scalar)


def check_state(state: State, params: Params) -> str | None:
    """What is out of range in a state read from a file (host arrays), or None: table slots t
    in [0, T) and topics z in [0, K) with their dummy slots 0, dishes in [0, K), counts
    non-negative (``resume`` recounts the tables from the seating), the concentrations alpha
    and gamma finite and > 0, the Params' values unless sampled (``resample_concentrations``)."""
    t_cap, k_cap = np.shape(state.table_count)[1], np.shape(state.word_topic)[1]
    problem = sampled_concentrations.state_problem(state, params, ("alpha", "gamma"))
    if problem:
        return problem
    return (latent_problem("t", state.t, t_cap, dummy_slot=True)
            or latent_problem("z", state.z, k_cap, dummy_slot=True)
            or latent_problem("table_topic", state.table_topic, k_cap)
            or count_problem(table_count=state.table_count, word_topic=state.word_topic,
                             topic=state.topic, topic_tables=state.topic_tables))


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with every count recounted from the seating t and the dishes (after loading)."""
    v, k = state.word_topic.shape
    return _recount(state.t, state.table_topic, data, v, k, state.alpha, state.gamma)


def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50) -> Array:
    """theta [D_new, K_active] for unseen documents, the topics held at the fitted phi: Gibbs
    with p(z_i = k) ∝ (n_dk^-i + alpha pi_k) phi_kw, pi_k = m_k / (m + gamma) (the CRF's prior
    mass of the active topics), theta averaged over the second half (``hdp_fold_in``)."""
    est = estimate(state, params)
    m = np.asarray(state.topic_tables)
    prior = float(state.alpha) * est["topic_tables"] / (m.sum() + float(state.gamma))
    return fold_in_with_prior(key, est["phi"], prior, new_data, params, num_sweeps)


def kernel_module(params: Params):
    """The module of ``params.sampler``'s kernel: ``hdp_direct`` ("parallel", "sequential") or
    this one ("crf", "crf_sequential"); both take these Params."""
    from . import hdp_direct
    return sys.modules[__name__] if params.sampler.startswith("crf") else hdp_direct


def migrate_params(params: dict, state_fields: set[str]) -> dict:
    """A model file's params as today's Params read them: files written before the direct-
    assignment kernels (a CRF state: it has table_count) name the CRF kernels "parallel" and
    "sequential", today "crf" and "crf_sequential"."""
    if "table_count" in state_fields and params.get("sampler") in ("parallel", "sequential"):
        params = {**params, "sampler": {"parallel": "crf", "sequential": "crf_sequential"}[
            params["sampler"]]}
    return params
