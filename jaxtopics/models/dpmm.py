"""Dirichlet process multinomial mixture (DPMM) by collapsed Gibbs sampling: GSDPMM (Yin & Wang
2016), the K -> infinity limit of DMM (``jaxtopics.models.dmm``).

The cluster of document m has the full conditional (Yin & Wang 2016; equation numbers (31)-(33)
here are those of the TopicModel4J paper, Qiang et al. 2020, which restates it). Note: an existing cluster's
weight is n_k,-m (the finite model's alpha / K vanishes as K -> infinity), a new cluster's is
alpha, and the rising factorial's factors are (n_k,-m^w + beta + j - 1), not the "+ j + 1" some
derivations print; the denominator M - 1 + alpha cancels:

    p(z_m = k | z_-m, d) ∝ n_k,-m * P(m | k)        for an existing cluster k   (31)
    p(z_m = new | z_-m, d) ∝ alpha * P(m | empty)                                 (32)

with P(m | k) = prod_{w in m} prod_{j=1}^{N_m^w} (n_k,-m^w + beta + j - 1) /
prod_{i=1}^{N_m} (n_k,-m + V beta + i - 1), the same Polya predictive as DMM's (24), in log
space (``ops.block_log_predictive``). The prior on partitions is the Chinese restaurant process.

Capacity: the state holds a static number of cluster slots (the shape of its count arrays;
``Params.capacity`` is only the starting size); a slot is active when it holds a document. A
document that opens a new cluster takes the lowest free slot. A sweep that needs a new cluster
when no slot is free reports ``SweepInfo.overflow``; the driver (``jaxtopics.fit``) then
discards that sweep, calls ``grow`` (doubles the slots, at most D are ever needed) and redoes it
with the same key — never a silent cap, never a lost cluster.

Kernels (``Params.sampler``):

- ``"sequential"``: exact collapsed Gibbs, one document at a time in corpus order.
- ``"parallel"`` (default): blocked sweep over ``num_blocks`` blocks of documents (as DMM's).
  What it approximates: every document of a block first draws from (31)/(32) against the counts
  at the block's start (itself excluded); documents that chose an existing cluster move there at
  once. The documents that chose "new" are then settled one after another, in block order: each
  draws again among the clusters opened earlier in this pass and a brand-new one, by (31)/(32)
  with the current counts, so similar documents of one block can found one cluster together
  instead of one each. With one document per block this is exact Gibbs (the second draw has a
  single option); with many, the draws are stale by at most one block, like DMM's and LDA's
  parallel sweeps.

Start (``Params.init``, default "incremental", GSDPMM's): no document has a cluster; in the
first sweep each document is seated in turn against the current counts, among all clusters and
a new one (exact, in both kernels: a document without a cluster never takes a stale draw). The
first sweep therefore costs as much as a sequential one; it decides much of the final
clustering (measured on planted corpora: stale seating merges similar clusters, and later
single-document moves rarely split them again, in either kernel).

Concentration (``Params.resample_concentrations``): alpha may be drawn after every sweep from
its conditional given the partition, under a Gamma(a, b) prior (a = ``prior_shape``, b =
``prior_rate``). The D documents in C occupied clusters are one CRP(alpha) partition, whose
likelihood in alpha is alpha^C Gamma(alpha) / Gamma(alpha + D) (Antoniak 1974), so the update
is Escobar & West's (1995, eq. 13-14; ``ops.concentration_one_group``):

    eta ~ Beta(alpha + 1, D)
    alpha ~ pi Gamma(a + C, b - log eta) + (1 - pi) Gamma(a + C - 1, b - log eta),
    pi / (1 - pi) = (a + C - 1) / (D (b - log eta))                                  (33)

alpha is then chain state (``State.alpha``; ``Params.alpha`` is its start) and every read-out
uses the current value; sharded, C and D are global counts and the draw uses a key shared by
the shards, so alpha is equal on every shard. Without resampling the kernels read the Params'
alpha, and the chain is bitwise the one before the option existed.

Read-outs cover the active clusters only, relabelled 0..C-1 by decreasing size (ties: slot
order), for every document.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .. import sampled_concentrations
from ..corpus import Corpus
from ..errors import ParameterError
from ..ops import (
    block_log_predictive,
    categorical_logits,
    chunked_map,
    concentration_one_group,
    dirichlet_multinomial_log_evidence,
    exchange,
    log_rising_factorial,
    shard_sum,
    shared_key,
)
from ..validate import MAX_BLOCKS, array_spec, check_int, same_length
from . import dmm
from .base import Sharding
from .dmm import (
    Data,
    blocked_sweep,
    check_table,
    doc_log_predictive,
    empty_log_predictive,
    move_documents,
    prepare_layout,
    state_from_assignments,
)
#: ``jaxtopics.distributed`` can shard this model's ``parallel`` kernel over devices (the hooks
#: are DMM's: the same layout; the state adds alpha)
from .dmm import check_shard_params, pad_shard, shard_sizes, state_tokens  # noqa: F401

__all__ = [
    "Params", "State", "Data", "SweepInfo", "SAMPLERS",
    "check_params", "prepare", "init", "sweep", "log_joint", "estimate", "fold_in",
    "assignments", "rebuild", "grow", "active_clusters", "check_state", "traced_priors",
]

#: DMM's per-shard fields; alpha (sampled with ``resample_concentrations``) is global and equal
#: on every shard, never summed
SHARDING = Sharding(fields=dmm.SHARDING.fields, replicated=("alpha",))
#: parameters added after model files were written, with the values those chains ran with
PARAMS_ADDED_LATER = dict(sampled_concentrations.PARAMS_ADDED_LATER)
#: State fields added after model files were written: alpha, the Params' value they ran with
STATE_ADDED_LATER = sampled_concentrations.state_added_later(("alpha",))

SAMPLERS = ("parallel", "sequential")
INITS = ("incremental", "one", "random")


#: ``SweepInfo.changed`` counts documents (the trace divides it by the number of documents)
CHANGED_UNIT = "documents"


class Params(NamedTuple):
    """DPMM hyper-parameters and kernel settings (hashable: a static argument under jit).

    alpha: concentration of the Dirichlet process (the weight of a new cluster, eq. 32;
    Yin & Wang use 0.1 x the number of documents). beta: symmetric Dirichlet on each cluster's
    words. sampler: "parallel" | "sequential". num_blocks: blocks of documents per parallel sweep.
    capacity: cluster slots of the initial state (grown by doubling when full).
    init: "incremental" (GSDPMM's: no document has a cluster yet, so the first sweep adds
    them one by one to an empty restaurant), "one" (every document in one cluster) or
    "random" (uniform over ``init_clusters`` clusters, which must fit in ``capacity``).
    chunk_size: (document x distinct word) slots per chunk of a [documents, words, slots] array.
    resample_concentrations: draw alpha after every sweep (33), Gamma(prior_shape, prior_rate)
    prior; ``alpha`` is then the starting value.
    """

    alpha: float = 1.0
    beta: float = 0.02
    sampler: str = "parallel"
    num_blocks: int = 64
    capacity: int = 64
    init: str = "incremental"
    init_clusters: int = 1
    chunk_size: int = 8192
    resample_concentrations: bool = False
    prior_shape: float = 1.0
    prior_rate: float = 1.0


class State(NamedTuple):
    """Chain state: DMM's (``dmm.State``: z [D+1], cluster_docs, word_cluster, cluster_tokens,
    doc_items, doc_counts) and alpha, a float32 scalar: the concentration in use (the Params'
    value unless sampled)."""

    z: Array
    cluster_docs: Array
    word_cluster: Array
    cluster_tokens: Array
    doc_items: Array
    doc_counts: Array
    alpha: Array


class SweepInfo(NamedTuple):
    """Per-sweep diagnostics: changed = documents whose cluster changed (int32); overflow =
    the sweep needed a new cluster with every slot taken (bool; the driver grows and redoes it);
    num_active = clusters holding a document after the sweep (int32)."""

    changed: Array
    overflow: Array
    num_active: Array


def check_params(params: Params) -> Params:
    """Validate hyper-parameters; raises ParameterError naming the bad field."""
    for name in ("alpha", "beta"):
        dmm._concentration(params, name)
    if params.sampler not in SAMPLERS:
        raise ParameterError(f"sampler must be one of {SAMPLERS}, got {params.sampler!r}")
    if params.init not in INITS:
        raise ParameterError(f"init must be one of {INITS}, got {params.init!r}")
    check_int(params.num_blocks, "num_blocks", low=1, high=MAX_BLOCKS)
    for name in ("capacity", "init_clusters", "chunk_size"):
        dmm._positive_int(params, name)
    if params.capacity > dmm.MAX_TABLE_CELLS:
        raise ParameterError(f"capacity must be an integer <= {dmm.MAX_TABLE_CELLS}, "
                             f"got {params.capacity}")
    if params.init_clusters > params.capacity:
        raise ParameterError(f"init_clusters={params.init_clusters} does not fit in "
                             f"capacity={params.capacity}")
    sampled_concentrations.check(params)
    return params


def _with_alpha(state: dmm.Clusters, alpha) -> State:
    """DMM's state (``dmm.state_from_assignments``) with the concentration `alpha`."""
    return State(*state, alpha=jnp.asarray(alpha, jnp.float32))


def _alpha(state: State, params: Params):
    """alpha in use: the State's when sampled, else the Params' Python float."""
    return sampled_concentrations.in_use(state, params, "alpha")


def prepare(corpus: Corpus, params: Params) -> Data:
    """Lay the corpus out for document-level sweeps (the layout of ``jaxtopics.models.dmm``)."""
    check_params(params)              # the functional core validates too
    check_table(corpus.num_words, params.capacity, "capacity")
    return prepare_layout(corpus, params.num_blocks)


def init(key: Array, data: Data, params: Params) -> State:
    """No document assigned ("incremental": z = -1, empty tables; the first sweep seats them in
    turn, as GSDPMM's initialisation), all in slot 0 ("one"), or uniform over
    ``init_clusters`` slots ("random")."""
    d = data.items.shape[0] - 1
    if params.init == "incremental":
        z = jnp.full((d,), -1, jnp.int32)
    else:
        k0 = 1 if params.init == "one" else params.init_clusters
        z = jax.random.randint(key, (d,), 0, k0)
    return _with_alpha(state_from_assignments(z, data, params, params.capacity),
                       sampled_concentrations.initial(params, "alpha"))


# --------------------------------------------------------------------------------------------
# kernel


def _settle(st: State, docs, items, counts, length, old, valid, u, data: Data, params: Params,
            axis_name: str | None = None):
    """One block: stale draws from (31)/(32), moves to existing clusters, then the documents
    that chose "new" or had no cluster yet settled one after another (module docstring).

    Sharded (`axis_name`): the moves to existing clusters are exchanged (``ops.exchange``); the
    documents to settle of every shard are gathered, and every shard runs the same sequential
    pass over all of them (shard order, then block order) on its copy of the global tables, so
    the copies agree and slots are opened once; each shard writes z of its own documents only."""
    a, b = _alpha(st, params), params.beta
    cap = st.cluster_docs.shape[0]
    v = st.word_cluster.shape[0]
    cmax = data.count_range.shape[0]
    log_alpha = jnp.log(jnp.float32(a))
    slots = jnp.arange(cap)

    def draw(ch):
        uc, it, cn, ln, ol = ch
        others = st.cluster_docs[None, :] - (slots[None, :] == ol[:, None]).astype(jnp.int32)
        existing = jnp.where(others > 0,
                             jnp.log(jnp.maximum(others, 1).astype(jnp.float32))
                             + doc_log_predictive(st, it, cn, ln, ol, b, cmax), -jnp.inf)
        new = log_alpha + empty_log_predictive(cn, ln, b, v, cmax)
        return categorical_logits(uc, jnp.concatenate([existing, new[:, None]], axis=1))

    choice = chunked_map(draw, (u[0], items, counts, length, old), dmm.chunk_docs(params, data))
    # documents without a cluster yet (the "incremental" start) are all seated in the pass below
    later = valid & ((choice == cap) | (old < 0))
    st = move_documents(st, docs, items, counts, length, old, jnp.where(later, old, choice),
                        valid & ~later, axis_name)
    moved = jnp.sum(valid & ~later & (choice != old), dtype=jnp.int32)
    own = None
    moved = shard_sum(moved, axis_name)
    if axis_name is not None:
        mine = jnp.full(docs.shape, jax.lax.axis_index(axis_name))
        docs, items, counts, length, old, later, u1, mine = exchange(
            axis_name, docs, items, counts, length, old, later, u[1], mine)
        own = mine == jax.lax.axis_index(axis_name)
    else:
        u1 = u[1]

    # In block order: a document that chose "new" picks among the clusters opened so far in this
    # pass (31) and a brand-new one (32); a document without a cluster among all clusters and a
    # new one (exact sequential seating, GSDPMM's initialisation). Current counts throughout.
    order = jnp.argsort(~later, stable=True)
    num_later = jnp.sum(later, dtype=jnp.int32)

    def settle_one(carry):
        i, st, opened, changed, overflow = carry
        j = order[i]
        doc, it, cn, ln, ol = docs[j], items[j], counts[j], length[j], old[j]   # ol: not moved yet
        allowed = opened | ((ol < 0) & (st.cluster_docs > 0))          # never `ol` itself
        join = jnp.where(allowed,
                         jnp.log(jnp.maximum(st.cluster_docs, 1).astype(jnp.float32))
                         + block_log_predictive(st.word_cluster[it], cn, st.cluster_tokens, ln,
                                                b, v * b, max_count=cmax), -jnp.inf)
        new = log_alpha + empty_log_predictive(cn, ln, b, v, cmax)
        pick = categorical_logits(u1[j][None], jnp.append(join, new)[None])[0]
        free = (st.cluster_docs - (slots == ol)) == 0                 # after leaving `ol`
        opens = pick == cap
        lost = opens & ~jnp.any(free)                                  # no slot: overflow
        target = jnp.where(opens, jnp.argmax(free).astype(jnp.int32), pick)
        target = jnp.where(lost, ol, target)
        st = move_documents(st, doc[None], it[None], cn[None], ln[None], ol[None], target[None],
                            (target != ol)[None], own=None if own is None else own[j][None])
        opened = opened | ((slots == target) & opens & ~lost)
        return (i + 1, st, opened, changed + (target != ol).astype(jnp.int32), overflow | lost)

    _, st, _, changed_later, overflow = jax.lax.while_loop(
        lambda carry: carry[0] < num_later, settle_one,
        (jnp.int32(0), st, jnp.zeros((cap,), bool), jnp.int32(0), jnp.bool_(False)))
    return st, moved + changed_later, overflow


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler``; pure and jit/vmap-able (params static).

    `axis_name`: inside ``shard_map`` over documents (``jaxtopics.distributed``), the mapped
    axis (``_settle``: the sharded sweep is the blocked sweep whose block b is the union of the
    shards' blocks b); the info is the whole sweep's, equal on every shard."""
    settle = _settle
    if axis_name is not None:
        check_shard_params(params)
        settle = partial(_settle, axis_name=axis_name)
    if params.resample_concentrations:          # static: without it, the key is the sweep's
        key, k_alpha = jax.random.split(key)
    state, changed, overflow = blocked_sweep(key, state, data, params, settle, uniforms_per_doc=2)
    if params.resample_concentrations:
        state = resample_alpha(shared_key(k_alpha, axis_name), state, params)
    return state, SweepInfo(changed, overflow, jnp.sum(state.cluster_docs > 0, dtype=jnp.int32))


def resample_alpha(key: Array, state: State, params: Params) -> State:
    """The state with alpha drawn by (33) given its partition: C occupied clusters of the D
    seated documents (global counts, so a sharded sweep passes a key equal on every shard)."""
    alpha = concentration_one_group(key, state.alpha, jnp.sum(state.cluster_docs > 0),
                                    jnp.sum(state.cluster_docs), params.prior_shape,
                                    params.prior_rate)
    return state._replace(alpha=alpha)


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """{"alpha": the current value} when sampled (``resample_concentrations``), else {}."""
    return sampled_concentrations.traced(state, params, ("alpha",))


def recount_shard(state: State, data: Data, params: Params, sizes: dict) -> State:
    """DMM's ``recount_shard`` (padding documents in no cluster); alpha is the chain's."""
    return _with_alpha(dmm.recount_clusters(state, data, params, sizes), state.alpha)


def grow(state: State, data: Data, params: Params) -> State:
    """Host side: the state with twice the cluster slots (at most D, which always suffices; the
    new slots are empty). Raises ParameterError when the table would exceed int32 indexing."""
    cap = state.cluster_docs.shape[0]
    d = state.z.shape[0] - 1
    v = state.word_cluster.shape[0]
    new = max(cap + 1, min(2 * cap, d))
    check_table(v, new, "capacity")
    pad = new - cap
    return state._replace(
        cluster_docs=jnp.pad(state.cluster_docs, (0, pad)),
        cluster_tokens=jnp.pad(state.cluster_tokens, (0, pad)),
        word_cluster=jnp.pad(state.word_cluster, ((0, 0), (0, pad))))


# --------------------------------------------------------------------------------------------
# read-outs


def invariants(state: State, data: Data | None, params: Params) -> dict[str, Array]:
    """What the driver checks after every jitted chunk (``models.base.Invariants``): DMM's
    (``dmm.invariants``, over every cluster slot)."""
    return dmm.invariants(state, data, params)


def log_joint(state: State, data: Data, params: Params) -> Array:
    """Collapsed log p(d, z): the Chinese restaurant process prior
    C log alpha + sum_k log Gamma(n_k) - log alpha^(D), plus sum_k log DirMult(n_k. | beta)
    (over the documents that have a cluster: all of them after the first sweep)."""
    n = state.cluster_docs
    d = jnp.sum(n)
    active = n > 0
    log_gamma_n = jax.scipy.special.gammaln(jnp.maximum(n, 1).astype(jnp.float32))
    alpha = jnp.float32(_alpha(state, params))
    prior = (jnp.sum(active) * jnp.log(alpha)
             + jnp.sum(jnp.where(active, log_gamma_n, 0.0))
             - log_rising_factorial(alpha, d))
    return prior + dirichlet_multinomial_log_evidence(state.word_cluster, params.beta, axis=0)


def active_clusters(state: State) -> np.ndarray:
    """Slot ids of the active clusters, by decreasing size (ties: slot order); host side."""
    sizes = np.asarray(state.cluster_docs)
    slots = np.flatnonzero(sizes > 0)
    return slots[np.argsort(-sizes[slots], kind="stable")]


def _relabel(state: State) -> tuple[np.ndarray, np.ndarray]:
    """(active slots in label order, label of every slot: -1 when empty)."""
    slots = active_clusters(state)
    label = np.full(state.cluster_docs.shape[0], -1, np.int64)
    label[slots] = np.arange(slots.size)
    return slots, label


@partial(jax.jit, static_argnames=("params",))
def _slot_logits(state: State, params: Params, items, counts, length, old, own) -> Array:
    """log of (31) [C_docs, capacity] (jitted); with `own`, the document is excluded from `old`,
    and when that leaves its cluster empty the cluster's weight is (32)'s (re-opening it is the
    same partition). Empty slots: -inf. In chunks of documents (``dmm.readout_rows``), so no
    [C_docs, words, capacity] array exists."""
    own = jnp.broadcast_to(jnp.asarray(own), old.shape)
    return chunked_map(lambda xs: _chunk_slot_logits(state, params, *xs),
                       (items, counts, length, old, own),
                       dmm.readout_rows(items.shape[1], state.cluster_docs.shape[0]))


def _chunk_slot_logits(state: State, params: Params, items, counts, length, old, own) -> Array:
    cap = state.cluster_docs.shape[0]
    v = state.word_cluster.shape[0]
    own = jnp.broadcast_to(jnp.asarray(own), old.shape) & (old >= 0)
    here = ((jnp.arange(cap)[None, :] == old[:, None]) & own[:, None]).astype(jnp.int32)
    others = state.cluster_docs[None, :] - here
    pred = doc_log_predictive(state, items, counts, length, old, params.beta, None, own)
    empty = (jnp.log(jnp.float32(_alpha(state, params)))
             + empty_log_predictive(counts, length, params.beta, v, None))
    return jnp.where(others > 0, jnp.log(jnp.maximum(others, 1).astype(jnp.float32)) + pred,
                     jnp.where(here > 0, empty[:, None], -jnp.inf))


def _conditionals(logits: Array, slots: np.ndarray) -> np.ndarray:
    """p(cluster | document) over the active `slots`: (31) normalised over them (host side)."""
    x = np.asarray(logits, np.float64)[:, slots]
    if x.shape[1] == 0:
        return np.zeros(x.shape, np.float32)
    x = np.exp(x - x.max(1, keepdims=True))
    return (x / x.sum(1, keepdims=True)).astype(np.float32)


def estimate(state: State, params: Params) -> dict[str, np.ndarray]:
    """Read-outs over the C active clusters, relabelled 0..C-1 by decreasing size (host side,
    numpy: C is data-dependent).

    theta [D, C]: p(z_m = k | z_-m, d) over the active clusters (31); phi [C, V]:
    (n_k^v + beta) / (n_k + V beta); labels [D]: the relabelled cluster of every document
    (-1 only before the first sweep of the "incremental" start); cluster_sizes [C]: documents
    per cluster; num_active_clusters: C; cluster_weights [C]: n_k / D (the posterior mean of
    the mixture weights, less the new-cluster mass alpha/(D+alpha) renormalised away); alpha:
    the concentration in use (the current draw when sampled).
    """
    slots, label = _relabel(state)
    d = state.z.shape[0] - 1
    z = np.asarray(state.z[:d])
    length = state.doc_counts[:d].sum(1)
    theta = _conditionals(_slot_logits(state, params, state.doc_items[:d], state.doc_counts[:d],
                                       length, state.z[:d], True), slots)
    word_cluster = np.asarray(state.word_cluster)[:, slots].T.astype(np.float64)
    tokens = np.asarray(state.cluster_tokens)[slots].astype(np.float64)
    v = word_cluster.shape[1]
    phi = ((word_cluster + params.beta) / (tokens[:, None] + v * params.beta)).astype(np.float32)
    sizes = np.asarray(state.cluster_docs)[slots]
    labels = np.where(z >= 0, label[np.maximum(z, 0)], -1).astype(np.int32)
    return {"theta": theta, "phi": phi, "labels": labels,
            "cluster_sizes": sizes, "num_active_clusters": np.int64(slots.size),
            "cluster_weights": (sizes / max(d, 1)).astype(np.float32),
            "alpha": np.asarray(_alpha(state, params))}


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int) -> State:
    """The shape and dtype of every State array (checked when a model file is read); the
    cluster slots are a capacity, grown by ``grow``; alpha a float32 scalar."""
    return State(*dmm.layout_shapes(same_length(0), num_docs, num_words),
                 alpha=array_spec(dtype=jnp.float32))


def check_state(state: State, params: Params) -> str | None:
    """What is out of range in a state read from a file (host arrays), or None: clusters z in
    [-1, capacity) (-1: not seated yet, before the first sweep of the "incremental" start) with
    the dummy slot 0, the documents' words in [0, V), counts non-negative; alpha a finite
    positive float32, the Params' value unless sampled."""
    return (sampled_concentrations.state_problem(state, params, ("alpha",))
            or dmm.check_layout(state, np.shape(state.cluster_docs)[0], unseated=True))


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with its count tables recounted from z (same capacity; after loading a file)."""
    d = data.items.shape[0] - 1
    return _with_alpha(state_from_assignments(state.z[:d], data, params,
                                              state.cluster_docs.shape[0]), state.alpha)


def assignments(state: State) -> Array:
    """Relabelled cluster of every token (its document's), aligned with ``corpus.word_ids``."""
    _, label = _relabel(state)
    d = state.z.shape[0] - 1
    length = state.doc_counts[:d].sum(1)
    z = np.asarray(state.z[:d])
    labels = np.where(z >= 0, label[np.maximum(z, 0)], -1).astype(np.int32)
    return np.repeat(labels, np.asarray(length))


#: held-out methods (``jaxtopics.evaluation``): the exact sum over clusters is the default
HELD_OUT_METHODS = ("exact", "completion")
DEFAULT_HELD_OUT_METHOD = "exact"


def held_out_exact(state: State, new_data: Data, params: Params) -> Array:
    """log p(w_d | fitted model) [D_new] of unseen documents, exactly: the sum over the active
    clusters of m_k / (D + alpha) times the Polya predictive of the document given cluster k's
    counts (31), plus the new cluster's alpha / (D + alpha) times the prior predictive (32)."""
    d = new_data.items.shape[0] - 1
    if new_data.items.size and int(jnp.max(new_data.items)) >= state.word_cluster.shape[0]:
        raise ParameterError("held_out_exact: new documents use word ids outside the fitted vocabulary")
    items, counts, length = new_data.items[:d], new_data.counts[:d], new_data.length[:d]
    logits = _slot_logits(state, params, items, counts, length, jnp.zeros((d,), jnp.int32), False)
    v = state.word_cluster.shape[0]
    alpha = _alpha(state, params)
    new = jnp.log(jnp.float32(alpha)) + empty_log_predictive(counts, length, params.beta, v, None)
    fitted = jnp.sum(state.cluster_docs).astype(jnp.float32)
    total = jnp.logaddexp(jax.nn.logsumexp(logits, axis=-1), new)
    return total - jnp.log(fitted + alpha)


def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50) -> Array:
    """p(cluster | unseen document) [D_new, C] over the active clusters: (31) against the fitted
    counts, normalised over the active clusters (exact; `key` and `num_sweeps` are unused)."""
    d = new_data.items.shape[0] - 1
    if new_data.items.size and int(jnp.max(new_data.items)) >= state.word_cluster.shape[0]:
        raise ParameterError("fold_in: new documents use word ids outside the fitted vocabulary")
    slots, _ = _relabel(state)
    return _conditionals(_slot_logits(state, params, new_data.items[:d], new_data.counts[:d],
                                      new_data.length[:d], jnp.zeros((d,), jnp.int32), False), slots)
