"""Dirichlet multinomial mixture (DMM) by collapsed Gibbs sampling: GSDMM (Yin & Wang 2014).

Every document m belongs to one cluster z_m; a cluster is a multinomial over words. Collapsing
theta ~ Dir(alpha) and phi_k ~ Dir(beta), the cluster of document m has the full conditional
(Yin & Wang 2014; equation numbers (24)-(26) here are those of the TopicModel4J paper, Qiang et
al. 2020, which restates it). Note: the rising factorial's factors are (n_k,-m^w + beta + j - 1), not the
"+ j + 1" some derivations print, and the prior factor is (m_k,-m + alpha) / (M - 1 + K alpha),
whose denominator does not depend on k and cancels:

    p(z_m = k | z_-m, d) ∝ (m_k,-m + alpha)
                           * prod_{w in m} prod_{j=1}^{N_m^w} (n_k,-m^w + beta + j - 1)
                           / prod_{i=1}^{N_m} (n_k,-m + V beta + i - 1)                    (24)

computed in log space by ``ops.block_log_predictive`` (a 10,000-token document does not
underflow). Read-outs (eq. 25, 26): phi_kv = (n_k^v + beta) / (n_k + V beta); the document's
soft clustering p(z_m = k | z_-m, d) is (24) normalised.

Kernels (``Params.sampler``):

- ``"sequential"``: exact collapsed Gibbs, one document at a time in corpus order (24).
- ``"parallel"`` (default): blocked sweep. Documents are dealt round-robin into ``num_blocks``
  blocks (``ops.strided_blocks``); the blocks are visited in turn, the documents of a block all
  draw from (24) at once against the counts at the block's start (each with itself excluded),
  and the counts are refreshed exactly between blocks. With one document per block
  (``num_blocks >= D``) this is the sequential kernel.

Both kernels run the same blocked code (``blocked_sweep``; the sequential one with blocks of one
document), which DPMM (``jaxtopics.models.dpmm``) reuses with its own draw.

State: ``z`` [D+1] (slot D is a dummy for block padding), int32 tables ``cluster_docs`` [K]
(m_k), ``word_cluster`` [V, K] (n_k^w, word-major), ``cluster_tokens`` [K] (n_k), and the
documents' distinct words and multiplicities (``doc_items``, ``doc_counts`` [D+1, M], constant)
so that the read-outs need no corpus. Empty documents are allowed: their cluster follows the
prior term alone.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .. import learned_priors
from ..corpus import Corpus
from ..devices import to_device
from ..errors import ParameterError
from ..validate import (ANY_LENGTH, MAX_BLOCKS, array_spec, check_int, count_problem, latent_problem,
                        same_length)
from ..ops import (
    block_log_predictive,
    categorical_logits,
    chunked_map,
    dirichlet_multinomial_log_evidence,
    exchange,
    grouped_counts,
    move_counts,
    pad_array,
    pad_blocks,
    require_parallel,
    sharded_sweep,
    strided_blocks,
)
from .base import Sharding

__all__ = [
    "Params", "State", "Clusters", "Data", "SweepInfo", "SAMPLERS", "learn", "learns",
    "traced_priors", "recount_clusters",
    "check_params", "check_state", "prepare", "init", "state_from_assignments", "sweep", "log_joint",
    "estimate", "fold_in", "assignments", "rebuild", "blocked_sweep", "doc_log_predictive",
    "prior_log_weight", "MAX_TABLE_CELLS", "shard_sizes", "pad_shard", "recount_shard",
]

SAMPLERS = ("parallel", "sequential")
#: the word-cluster table [V, K] must hold fewer cells than this (int32 flat indices; 8 GiB)
MAX_TABLE_CELLS = 2**31 - 1
#: ``jaxtopics.distributed`` can shard this model's ``parallel`` kernel over devices
#: (per-shard State fields along the shard's documents; cluster_docs, word_cluster and
#: cluster_tokens are the global tables)
SHARDING = Sharding(fields={"z": "docs", "doc_items": "docs", "doc_counts": "docs"},
                    replicated=("alpha", "beta"))
#: parameters added after model files were written, with the values those chains ran with
PARAMS_ADDED_LATER = dict(learned_priors.DEFAULTS)
#: State fields added after model files were written: the Params' priors they ran with
STATE_ADDED_LATER = learned_priors.state_added_later(lambda params: params.num_clusters)


#: ``SweepInfo.changed`` counts documents (the trace divides it by the number of documents)
CHANGED_UNIT = "documents"


class Params(NamedTuple):
    """DMM hyper-parameters and kernel settings (hashable: a static argument under jit).

    num_clusters: K (an upper bound on the clusters found: GSDMM leaves the extra ones empty).
    alpha: symmetric Dirichlet on the cluster weights. beta: symmetric Dirichlet on each
    cluster's words. sampler: "parallel" | "sequential". num_blocks: blocks of documents per
    parallel sweep. chunk_size: (document x distinct word) slots per chunk wherever a
    [documents, words, K] working array is needed.
    optimize_alpha, optimize_beta, optimize_every, burn_in, optimizer: learned priors
    (``jaxtopics.learned_priors``, as LDA's): alpha maximises the Dirichlet-multinomial evidence
    of the cluster sizes m_k (one group of D documents), beta that of the clusters' word counts.
    """

    num_clusters: int
    alpha: float = 0.1
    beta: float = 0.1
    sampler: str = "parallel"
    num_blocks: int = 64
    chunk_size: int = 8192
    optimize_alpha: str | None = None
    optimize_beta: bool = False
    optimize_every: int = 10
    burn_in: int = 50
    optimizer: str = "minka"


class Data(NamedTuple):
    """Device layout of a corpus for document-level sweeps. Row D is a dummy empty document.

    items, counts: [D+1, M] distinct word ids of each document and their multiplicities
    (``ops.grouped_counts``; padding slots hold word 0 with count 0). length: [D+1] tokens per
    document. blocks: [B, C] documents per parallel block (D = padding); valid: [B, C] bool.
    word_freq: [V] corpus frequency of each word (its length is the vocabulary size V).
    count_range: [c_max] arange, whose static LENGTH is the largest multiplicity of a word in a
    document (it selects the product form of ``ops.block_log_predictive``).
    """

    items: Array
    counts: Array
    length: Array
    blocks: Array
    valid: Array
    count_range: Array
    word_freq: Array


class Clusters(NamedTuple):
    """The clustering DMM and DPMM share. z [D+1] int32 cluster of each document (slot D:
    dummy, always 0); cluster_docs [K], word_cluster [V, K], cluster_tokens [K] int32 counts
    consistent with z; doc_items, doc_counts [D+1, M]: the documents' distinct words
    (constant, for read-outs)."""

    z: Array
    cluster_docs: Array
    word_cluster: Array
    cluster_tokens: Array
    doc_items: Array
    doc_counts: Array


class State(NamedTuple):
    """DMM's chain state: the :class:`Clusters` fields and the priors in use, alpha [K] float32
    (all equal unless learned asymmetric) and beta [] float32 (``learned_priors``)."""

    z: Array
    cluster_docs: Array
    word_cluster: Array
    cluster_tokens: Array
    doc_items: Array
    doc_counts: Array
    alpha: Array
    beta: Array


def _with_priors(clusters: Clusters, alpha: Array, beta: Array) -> State:
    return State(*clusters, alpha=alpha, beta=beta)


_priors = learned_priors.in_use
learns = learned_priors.learns


class SweepInfo(NamedTuple):
    """Per-sweep diagnostics: changed = documents whose cluster changed (int32)."""

    changed: Array


def _positive_int(params: NamedTuple, name: str, low: int = 1) -> None:
    v = getattr(params, name)
    if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)) or v < low:
        raise ParameterError(f"{name} must be an integer >= {low}, got {v!r}")


def _concentration(params: NamedTuple, name: str) -> None:
    v = getattr(params, name)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {v!r}")
    if not np.isfinite(v) or v <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {v!r}")
    if not 1e-30 <= v <= 1e30:
        raise ParameterError(f"{name} must lie in [1e-30, 1e30] (float32), got {v!r}")


def check_params(params: Params) -> Params:
    """Validate hyper-parameters; raises ParameterError naming the bad field."""
    _positive_int(params, "num_clusters")
    if params.num_clusters > MAX_TABLE_CELLS:
        raise ParameterError(f"num_clusters must be an integer <= {MAX_TABLE_CELLS}, "
                             f"got {params.num_clusters}")
    for name in ("alpha", "beta"):
        _concentration(params, name)
    if params.sampler not in SAMPLERS:
        raise ParameterError(f"sampler must be one of {SAMPLERS}, got {params.sampler!r}")
    check_int(params.num_blocks, "num_blocks", low=1, high=MAX_BLOCKS)
    _positive_int(params, "chunk_size")
    return params._replace(**learned_priors.check(params))


def check_table(num_words: int, num_clusters: int, field: str) -> None:
    """Refuse a word-cluster table [V, K] beyond ``MAX_TABLE_CELLS`` (ParameterError naming `field`)."""
    if num_words * num_clusters > MAX_TABLE_CELLS:
        raise ParameterError(
            f"{field}={num_clusters} with {num_words} words needs a {num_words} x {num_clusters} "
            f"word-cluster table, more than the {MAX_TABLE_CELLS} cells int32 counts can index")


def prepare_layout(corpus: Corpus, num_blocks: int) -> Data:
    """The document layout shared by DMM and DPMM; `num_blocks` blocks of documents."""
    if not isinstance(corpus, Corpus):
        raise ParameterError(f"expected a jaxtopics.Corpus, got {type(corpus).__name__}")
    d = corpus.num_docs
    items, counts = grouped_counts(corpus.word_ids, corpus.doc_offsets)
    items = np.concatenate([items, np.zeros((1, items.shape[1]), np.int32)])
    counts = np.concatenate([counts, np.zeros((1, counts.shape[1]), np.int32)])
    length = np.append(corpus.doc_lengths, 0).astype(np.int32)
    blocks, valid = strided_blocks(d, num_blocks)
    return Data(items=to_device(items), counts=to_device(counts), length=to_device(length),
                blocks=to_device(blocks), valid=to_device(valid),
                count_range=jnp.arange(max(int(counts.max()), 1), dtype=jnp.int32),
                word_freq=to_device(corpus.word_counts().astype(np.int32)))


def prepare(corpus: Corpus, params: Params) -> Data:
    """Lay the corpus out for document-level sweeps."""
    check_params(params)              # the functional core validates too
    check_table(corpus.num_words, params.num_clusters, "num_clusters")
    return prepare_layout(corpus, params.num_blocks)


def _sizes(data: Data) -> tuple[int, int, int]:
    """(D documents, M distinct-word slots, V words), static."""
    return data.items.shape[0] - 1, data.items.shape[1], data.word_freq.shape[0]


@partial(jax.jit, static_argnames=("params", "capacity"))
def state_from_assignments(z: Array, data: Data, params: NamedTuple,
                           capacity: int | None = None) -> Clusters:
    """The state with clusters z [D] and its count tables (K = `capacity` or num_clusters;
    z = -1: a document in no cluster). Jitted (params and capacity static)."""
    d, _, num_words = _sizes(data)
    k = params.num_clusters if capacity is None else capacity
    z = jnp.append(jnp.asarray(z, jnp.int32), 0)
    counted = ((jnp.arange(d + 1) < d) & (z >= 0)).astype(jnp.int32)   # z = -1: unassigned
    col = jnp.maximum(z, 0)
    return Clusters(
        z=z,
        cluster_docs=jnp.zeros((k,), jnp.int32).at[col].add(counted),
        word_cluster=jnp.zeros((num_words, k), jnp.int32).at[
            data.items, jnp.broadcast_to(col[:, None], data.items.shape)].add(
                data.counts * counted[:, None]),
        cluster_tokens=jnp.zeros((k,), jnp.int32).at[col].add(data.length * counted),
        # copies: the driver donates the state's buffers, which must not alias the data's
        doc_items=jnp.copy(data.items), doc_counts=jnp.copy(data.counts))


def init(key: Array, data: Data, params: Params) -> State:
    """Uniform random clusters (GSDMM's initialisation)."""
    d, _, _ = _sizes(data)
    return _with_priors(state_from_assignments(jax.random.randint(key, (d,), 0, params.num_clusters),
                                               data, params),
                        *learned_priors.initial_traced(params, params.num_clusters))


# --------------------------------------------------------------------------------------------
# the per-document likelihood and the blocked sweep (shared with DPMM)


def doc_log_predictive(state: State, items: Array, counts: Array, length: Array, old: Array,
                       beta: float, max_count: int | None, own: Array | None = None) -> Array:
    """log p(document | cluster k, other documents) for a batch of documents: the product in (24)
    over every cluster column k of the state's tables, each document's own counts excluded
    from column `old` (where `own` is True; default: every document is counted in `old`).

    items, counts [C, M]; length, old [C]. Returns [C, K] float32.
    """
    v, k = state.word_cluster.shape
    here = jnp.arange(k)[None, :] == old[:, None]                                # [C, K]
    if own is not None:
        here = here & own[:, None]
    rows = state.word_cluster[items] - jnp.where(here[:, None, :], counts[..., None], 0)
    totals = state.cluster_tokens[None, :] - jnp.where(here, length[:, None], 0)
    return block_log_predictive(rows, counts, totals, length, beta, v * beta, max_count=max_count)


def empty_log_predictive(counts: Array, length: Array, beta: float, v: int,
                         max_count: int | None) -> Array:
    """log p(document | an empty cluster) [C]: (24)'s product with every count 0 (eq. 32)."""
    zeros = jnp.zeros(counts.shape + (1,), jnp.int32)
    return block_log_predictive(zeros, counts, jnp.zeros(length.shape + (1,), jnp.int32), length,
                                beta, v * beta, max_count=max_count)[..., 0]


def move_documents(state: State, docs: Array, items: Array, counts: Array, length: Array,
                   old: Array, new: Array, valid: Array, axis_name: str | None = None,
                   own: Array | None = None) -> State:
    """Move documents `docs` from clusters `old` to `new` (valid=False: padding, no move).
    ``old = -1``: the document is in no cluster yet (DPMM's incremental start) and only joins.

    `axis_name` (a sharded sweep): the global tables take the moves of every shard
    (``ops.exchange``), z only this shard's. `own` (default all True): False for a document of
    another shard whose moves this shard applies to its tables but not to z."""
    z_valid = valid if own is None else valid & own
    state = state._replace(z=state.z.at[docs].set(jnp.where(z_valid, new, state.z[docs])))
    w = valid.astype(jnp.int32)
    r = w * (old >= 0)
    items, counts, length, old, new, w, r = exchange(axis_name, items, counts, length, old, new, w, r)
    old = jnp.maximum(old, 0)
    m = items.shape[-1]
    wc = counts * w[:, None]
    return state._replace(
        cluster_docs=move_counts(state.cluster_docs, None, old, new, w, r),
        cluster_tokens=move_counts(state.cluster_tokens, None, old, new, w * length, r * length),
        word_cluster=move_counts(state.word_cluster, items.reshape(-1), jnp.repeat(old, m),
                                 jnp.repeat(new, m), wc.reshape(-1),
                                 (counts * r[:, None]).reshape(-1)))


#: settle(key, state, docs, items, counts, length, old, valid, u, data, params)
#:   -> (state, new clusters [C], changed int32, extra info)
Settle = Callable[..., tuple]


def schedule(data: Data, sampler: str) -> tuple[Array, Array]:
    """(blocks, valid) of a sweep: ``data.blocks`` for "parallel"; for "sequential", D blocks
    of one document each in corpus order (the blocked sweep is then exact collapsed Gibbs)."""
    if sampler == "sequential":
        d = data.items.shape[0] - 1
        return jnp.arange(d, dtype=jnp.int32)[:, None], jnp.ones((d, 1), bool)
    return data.blocks, data.valid


def blocked_sweep(key: Array, state: State, data: Data, params: NamedTuple, settle: Settle,
                  uniforms_per_doc: int = 1) -> tuple[State, Array, Array]:
    """Visit the blocks of the sweep (``schedule``) in turn; `settle` draws and applies the
    moves of one block against the counts at its start. Returns (state, documents changed, OR
    of the settles' boolean flags)."""
    blocks, valid = schedule(data, params.sampler)
    u_all = jax.random.uniform(key, (uniforms_per_doc,) + blocks.shape)

    def block(carry, xs):
        st, changed, flag = carry
        docs, valid, u = xs
        st, ch, fl = settle(st, docs, data.items[docs], data.counts[docs], data.length[docs],
                            st.z[docs], valid, u, data, params)
        return (st, changed + ch, flag | fl), None

    (state, changed, flag), _ = jax.lax.scan(
        block, (state, jnp.int32(0), jnp.bool_(False)),
        (blocks, valid, jnp.moveaxis(u_all, 0, 1)))
    return state, changed, flag


def chunk_docs(params: NamedTuple, data: Data) -> int:
    """Documents per chunk: ``chunk_size`` (document x word) slots, at least one document."""
    return max(1, params.chunk_size // data.items.shape[1])


#: (document, word, cluster) cells per chunk of the read-outs' log-predictives (256 MB float32)
READOUT_CELLS = 2**26


def readout_rows(width: int, clusters: int) -> int:
    """Documents of `width` distinct-word slots per chunk of the read-outs (theta over
    `clusters`): ``READOUT_CELLS`` cells of [documents, width, clusters], at least 1."""
    return max(1, READOUT_CELLS // max(width * clusters, 1))


def prior_log_weight(others: Array, alpha: Array | float) -> Array:
    """log of (24)'s first factor, m_k,-m + alpha_k, from `others` = m_k,-m [..., K] (alpha a
    scalar, or [K] when learned asymmetric); the denominator M - 1 + sum_k alpha_k is the same
    for every k and cancels."""
    return jnp.log(others.astype(jnp.float32) + alpha)


def _settle(st: State, docs, items, counts, length, old, valid, u, data: Data, params: Params,
            axis_name: str | None = None):
    """One DMM block: every document draws from (24) against the block-start counts (the global
    tables then take the moves of every shard of a sharded sweep)."""
    a, b = _priors(st, params)
    cmax = data.count_range.shape[0]

    def draw(c):
        uc, it, cn, ln, ol = c
        here = jnp.arange(params.num_clusters)[None, :] == ol[:, None]
        prior = prior_log_weight(st.cluster_docs[None, :] - here.astype(jnp.int32), a)
        return categorical_logits(uc, prior + doc_log_predictive(st, it, cn, ln, ol, b, cmax))

    new = chunked_map(draw, (u[0], items, counts, length, old), chunk_docs(params, data))
    st = move_documents(st, docs, items, counts, length, old, new, valid, axis_name)
    return st, jnp.sum(valid & (new != old), dtype=jnp.int32), jnp.bool_(False)


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler`` (the layout of `data` was made for it by
    ``prepare``); pure and jit/vmap-able (params static).

    `axis_name`: inside ``shard_map`` over documents (``jaxtopics.distributed``), the mapped
    axis; every block's moves of the global tables are exchanged between the shards, so the
    sharded sweep is the blocked sweep whose block b is the union of the shards' blocks b."""
    if axis_name is None:
        return _blocked(key, state, data, params)
    return sharded_sweep(_blocked, key, state, data, params, axis_name)


def _blocked(key: Array, state: State, data: Data, params: Params,
             axis_name: str | None = None) -> tuple[State, SweepInfo]:
    state, changed, _ = blocked_sweep(key, state, data, params, partial(_settle, axis_name=axis_name))
    return state, SweepInfo(changed)


# --------------------------------------------------------------------------------------------
# sharding hooks (``jaxtopics.distributed``), shared with DPMM


#: sharded sweeps run the parallel kernel
check_shard_params = require_parallel


def shard_sizes(data: Data, num_shards: int) -> dict[str, int]:
    """The sizes of a shard's layout: documents, distinct-word slots, largest multiplicity and
    the blocks' [B, C] shape."""
    d, m, _ = _sizes(data)
    b, c = data.blocks.shape
    return {"docs": d, "width": m, "max_count": data.count_range.shape[0], "blocks": b,
            "block_width": c}


def pad_shard(data: Data, sizes: dict[str, int]) -> Data:
    """A shard's Data padded to ``sizes``: padding documents (d..d_max-1) are empty and in no
    block, the dummy row moves to d_max, the word slots widen to ``width`` (word 0, count 0)."""
    d = data.items.shape[0] - 1
    d_max, m = sizes["docs"], sizes["width"]
    blocks, valid = pad_blocks(data.blocks, data.valid, d, d_max, sizes["blocks"], sizes["block_width"])
    return Data(items=pad_array(data.items, (d_max + 1, m), rows=d),
                counts=pad_array(data.counts, (d_max + 1, m), rows=d),
                length=pad_array(data.length, (d_max + 1,), rows=d), blocks=blocks, valid=valid,
                count_range=np.arange(sizes["max_count"], dtype=np.int32),
                word_freq=np.asarray(data.word_freq))


def recount_clusters(state: Clusters, data: Data, params: NamedTuple, sizes: dict) -> Clusters:
    """A shard's tables recounted from z; padding documents (>= sizes["docs"]) get z = -1 (in no
    cluster, counted nowhere). The capacity is the state's."""
    d = data.items.shape[0] - 1
    z = jnp.where(jnp.arange(d) < sizes["docs"], state.z[:d], -1)
    return state_from_assignments(z, data, params, state.cluster_docs.shape[0])


def recount_shard(state: State, data: Data, params: NamedTuple, sizes: dict) -> State:
    """:func:`recount_clusters`, the priors kept."""
    return _with_priors(recount_clusters(state, data, params, sizes), state.alpha, state.beta)


# --------------------------------------------------------------------------------------------
# read-outs


def invariants(state: State, data: Data | None, params: NamedTuple) -> dict[str, Array]:
    """What the driver checks after every jitted chunk (``models.base.Invariants``; DPMM's too):
    the count tables are non-negative, word_cluster sums over its rows to cluster_tokens,
    cluster_tokens to the documents' tokens (doc_counts), and (when `data` is given; None: a
    sharded state's global view) cluster_docs to the D documents (after a sweep every document
    has a cluster)."""
    from ..ops.counts import count_invariants, table_total
    return count_invariants(
        {"cluster_docs": state.cluster_docs, "word_cluster": state.word_cluster,
         "cluster_tokens": state.cluster_tokens},
        {"word_cluster: sums over words to cluster_tokens": (state.word_cluster.sum(0),
                                                             state.cluster_tokens),
         "cluster_tokens: sums to the tokens": (state.cluster_tokens.sum(),
                                                table_total(state.doc_counts)),
         "cluster_docs: sums to the documents": (state.cluster_docs.sum(),
                                                 None if data is None else data.length.shape[0] - 1)})


def log_joint(state: State, data: Data, params: Params) -> Array:
    """Collapsed log p(d, z) = log DirMult(m_. | alpha) + sum_k log DirMult(n_k. | beta)."""
    alpha, beta = _priors(state, params)
    return (dirichlet_multinomial_log_evidence(state.cluster_docs[None, :], alpha)
            + dirichlet_multinomial_log_evidence(state.word_cluster, beta, axis=0))


@partial(jax.jit, static_argnames=("params",))
def _conditionals(state: State, params: Params, items: Array, counts: Array, length: Array,
                  old: Array, own: Array | bool) -> Array:
    """p(z_m = k | z_-m, d) [C, K] by (24), normalised (own counts excluded where `own`); in
    chunks of documents (``readout_rows``), so no [C, words, K] array exists."""
    own = jnp.broadcast_to(jnp.asarray(own), old.shape)
    return chunked_map(lambda xs: _chunk_conditionals(state, params, *xs),
                       (items, counts, length, old, own),
                       readout_rows(items.shape[1], params.num_clusters))


def _chunk_conditionals(state: State, params: Params, items: Array, counts: Array,
                        length: Array, old: Array, own: Array) -> Array:
    k = params.num_clusters
    alpha, beta = _priors(state, params)
    here = (jnp.arange(k)[None, :] == old[:, None]) & own[:, None]
    logits = (prior_log_weight(state.cluster_docs[None, :] - here.astype(jnp.int32), alpha)
              + doc_log_predictive(state, items, counts, length, old, beta, None, own))
    return jax.nn.softmax(logits, axis=-1)


def estimate(state: State, params: Params) -> dict[str, Array]:
    """:func:`_estimate` (jitted) and the priors in use, "alpha" and "beta" (the Params' floats
    unless learned)."""
    alpha, beta = _priors(state, params)
    return {**_estimate(state, params), "alpha": alpha, "beta": beta}


@partial(jax.jit, static_argnames=("params",))
def _estimate(state: State, params: Params) -> dict[str, Array]:
    """Point estimates and read-outs (jitted, params static).

    theta [D, K]: p(z_m = k | z_-m, d), (24) normalised (the document's soft clustering);
    phi [K, V]: (n_k^v + beta) / (n_k + V beta) (eq. 26); labels [D]: z; cluster_sizes [K]:
    documents per cluster; num_active_clusters: clusters holding a document; cluster_weights
    [K]: (m_k + alpha_k) / (D + sum_k alpha_k) (eq. 25).
    """
    k = params.num_clusters
    v = state.word_cluster.shape[0]
    d = state.z.shape[0] - 1
    z = state.z[:d]
    length = state.doc_counts[:d].sum(1)
    alpha, beta = _priors(state, params)
    theta = _conditionals(state, params, state.doc_items[:d], state.doc_counts[:d], length, z, True)
    phi = (state.word_cluster.T + beta) / (state.cluster_tokens[:, None] + v * beta)
    total = k * alpha if jnp.ndim(alpha) == 0 else jnp.sum(alpha)
    return {"theta": theta, "phi": phi, "labels": z, "cluster_sizes": state.cluster_docs,
            "num_active_clusters": jnp.sum(state.cluster_docs > 0, dtype=jnp.int32),
            "cluster_weights": (state.cluster_docs + alpha) / (d + total)}


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int) -> State:
    """The shape and dtype of every State array (checked when a model file is read)."""
    return _with_priors(layout_shapes(params.num_clusters, num_docs, num_words),
                        array_spec(params.num_clusters, dtype=np.float32),
                        array_spec(dtype=np.float32))


def layout_shapes(clusters: int, num_docs: int, num_words: int) -> Clusters:
    """DMM's State shapes with `clusters` slots (DPMM: ``same_length(0)``, a capacity);
    the documents' distinct-word slots M are a second shared length."""
    d1 = num_docs + 1 if num_docs >= 0 else ANY_LENGTH
    items = array_spec(d1, same_length(1))
    return Clusters(z=array_spec(d1), cluster_docs=array_spec(clusters),
                 word_cluster=array_spec(num_words, clusters), cluster_tokens=array_spec(clusters),
                 doc_items=items, doc_counts=items)

def check_state(state: State, params: Params) -> str | None:
    """What is out of range in a state read from a file (host arrays), or None: clusters z in
    [0, K) with the dummy slot 0, the documents' words in [0, V), counts non-negative, and the
    count tables equal to their recount from z and the documents' words; the priors finite,
    positive and the Params' unless learned."""
    return (learned_priors.state_problem(state, params, params.num_clusters)
            or check_layout(state, params.num_clusters))


def check_layout(state: State, num_clusters: int, unseated: bool = False) -> str | None:
    """:func:`check_state` for `num_clusters` cluster slots; `unseated`: z may also be -1 (a
    document without a cluster, DPMM before its first sweep)."""
    problem = (latent_problem("z", state.z, num_clusters, dummy_slot=True, low=-int(unseated))
               or latent_problem("doc_items", state.doc_items, np.shape(state.word_cluster)[0])
               or count_problem(cluster_docs=state.cluster_docs, word_cluster=state.word_cluster,
                                cluster_tokens=state.cluster_tokens, doc_counts=state.doc_counts))
    if problem:
        return problem
    z = np.asarray(state.z)[:-1]
    seated = z >= 0
    if not seated.all() and seated.any():
        return ("z seats some documents and leaves others unseated (-1): only a chain before "
                "its first sweep has unseated documents, and then all of them")
    doc_counts = np.asarray(state.doc_counts, np.int64)
    if doc_counts[-1].any():
        return "doc_counts has words in its padding row (the last)"
    # the three tables recounted from the seated documents' words, cell by cell
    items, counts, zs = np.asarray(state.doc_items)[:-1][seated], doc_counts[:-1][seated], z[seated]
    word_cluster = np.zeros(np.shape(state.word_cluster), np.int64)
    np.add.at(word_cluster, (items, np.broadcast_to(zs[:, None], items.shape)), counts)
    recount = {"cluster_docs": np.bincount(zs, minlength=num_clusters),
               "cluster_tokens": np.bincount(zs, weights=counts.sum(1), minlength=num_clusters),
               "word_cluster": word_cluster}
    for name, table in recount.items():
        if not np.array_equal(np.asarray(getattr(state, name)), table):
            return f"{name} counts disagree with the documents' words and clusters z"
    return None


def state_tokens(state: State) -> int:
    """Tokens the state's documents hold (host arrays): what a model file's ``num_tokens``
    must say, since no State array has one entry per token."""
    return int(np.asarray(state.doc_counts, np.int64)[:-1].sum())


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with its count tables recounted from z (after loading a file)."""
    d, _, _ = _sizes(data)
    return _with_priors(state_from_assignments(state.z[:d], data, params,
                                               state.cluster_docs.shape[0]),
                        state.alpha, state.beta)


def assignments(state: State) -> np.ndarray:
    """Cluster of every token (its document's), aligned with ``corpus.word_ids`` ([N] int32,
    host side)."""
    d = state.z.shape[0] - 1
    return np.repeat(np.asarray(state.z[:d]), np.asarray(state.doc_counts[:d].sum(1)))


#: held-out methods (``jaxtopics.evaluation``): the exact sum over clusters is the default
HELD_OUT_METHODS = ("exact", "completion")
DEFAULT_HELD_OUT_METHOD = "exact"


def held_out_exact(state: State, new_data: Data, params: Params) -> Array:
    """log p(w_d | fitted model) [D_new] of unseen documents, exactly: the sum over clusters of
    (m_k + alpha) / (D + K alpha) (eq. 25) times the Polya predictive of the document's words
    given cluster k's counts (the product of eq. 24), in log space."""
    d, _, _ = _sizes(new_data)
    if new_data.items.size and int(jnp.max(new_data.items)) >= state.word_cluster.shape[0]:
        raise ParameterError("held_out_exact: new documents use word ids outside the fitted vocabulary")
    fitted = state.z.shape[0] - 1
    alpha, beta = _priors(state, params)
    total = params.num_clusters * alpha if jnp.ndim(alpha) == 0 else jnp.sum(alpha)
    log_norm = jnp.log(jnp.float32(fitted) + total)

    def chunk(xs):
        items, counts, length = xs
        none = jnp.zeros(length.shape, jnp.int32)
        logits = (prior_log_weight(state.cluster_docs[None, :], alpha)
                  + doc_log_predictive(state, items, counts, length, none, beta, None,
                                       jnp.zeros(length.shape, bool)))
        return jax.nn.logsumexp(logits, axis=-1) - log_norm

    return chunked_map(chunk, (new_data.items[:d], new_data.counts[:d], new_data.length[:d]),
                       readout_rows(new_data.items.shape[1], params.num_clusters))


def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50) -> Array:
    """p(cluster | unseen document) [D_new, K]: (24) against the fitted counts, exactly (no
    sampling: a new document's cluster given the training clusters has this closed form;
    `key` and `num_sweeps` are unused)."""
    d, _, _ = _sizes(new_data)
    if new_data.items.size and int(jnp.max(new_data.items)) >= state.word_cluster.shape[0]:
        raise ParameterError("fold_in: new documents use word ids outside the fitted vocabulary")
    return _conditionals(state, params, new_data.items[:d], new_data.counts[:d],
                         new_data.length[:d], jnp.zeros((d,), jnp.int32), False)


# --------------------------------------------------------------------------------------------
# learned priors


def learn(state: State, data: Data, params: Params, t: Array,
          axis_name: str | None = None) -> State:
    """The state after sweep `t` with its priors re-fitted where the chain learns them
    (``learned_priors.refit``): alpha from the cluster sizes m_k (one group of D documents),
    beta from the clusters' word counts. Both tables are global (whole on every shard), so a
    sharded chain computes the same priors on every shard without a sum."""
    return learned_priors.refit(state, params, t, lambda: state.cluster_docs[None, :],
                                state.word_cluster, alpha_axis=-1, beta_axis=0)


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """The learned priors the trace records ({} when the chain learns none)."""
    return learned_priors.traced(state, params)
