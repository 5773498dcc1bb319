"""Latent Dirichlet allocation: collapsed Gibbs (exact and blocked-parallel) and uncollapsed Gibbs.

LDA is Blei, Ng & Jordan (2003). Collapsed full conditional of token i = (d, w) (Griffiths &
Steyvers, PNAS 2004):

    p(z_i = k | z_-i, w) ∝ (n_dk^-i + alpha) (n_kw^-i + beta) / (n_k^-i + V beta)        (1)

Kernels (``Params.sampler``):

- ``"sequential"``: exact collapsed Gibbs, token by token in corpus order, draws from (1).
- ``"parallel"`` (default): blocked sweep. Tokens are dealt round-robin into ``num_blocks``
  blocks (the strided layout of ``ops.to_strided``, in which ``Data`` keeps every per-token
  array), so a block rarely holds two tokens of one document; the blocks
  are visited in turn, all tokens of a block move at once against the counts at the block's start,
  and the counts are refreshed exactly between blocks. Each token's move targets (1) with those
  counts: by default (``mh_steps=0``) an exact draw, O(K) per token — per sweep this matches
  exact Gibbs; with ``mh_steps > 0``, that many Metropolis-Hastings cycles of a document proposal
  (n_dk + alpha) and a word proposal (n_kw + beta), both drawn in O(1) from the topics of random
  member tokens (WarpLDA/LightLDA-style, ``ops.mh``), so a sweep costs O(N), not O(N K).
- ``"uncollapsed"``: exact blocked Gibbs over theta, phi and z (as in Heinrich, "Parameter
  estimation for text analysis", 2005): phi_k | z ~ Dir(beta + n_k.),
  theta_d | z ~ Dir(alpha + n_d.), then every z_i | theta, phi ∝ theta_dk phi_kw in parallel.

Counts are int32 tables: ``doc_topic`` [D, K] (n_dk), ``word_topic`` [V, K] (n_kw, word-major so
that a token gathers one contiguous row) and ``topic`` [K] (n_k).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .. import learned_priors, seed_words
from ..corpus import Corpus
from ..devices import to_device
from ..errors import ParameterError
from ..validate import (FLOAT32_MAX, INT32_MAX, MAX_BLOCKS, check_float32, check_int,
                        check_positive_int, count_problem, latent_problem)
from ..ops import (
    DRAWS,
    LANE_MULTIPLE,
    block_uniforms,
    categorical,
    categorical_logits,
    chunked_map,
    collapsed_topic_draw,
    count_table,
    dirichlet_multinomial_log_evidence,
    exchange,
    from_strided,
    group_rows,
    log_dirichlet,
    mh_accept,
    move_counts,
    propose_from_members,
    round_up,
    sharded_sweep,
    table_cells,
    strided_segments,
    to_strided,
)
from .base import Sharding
from .lda_exchange import delayed_blocks, pack_moves, rotated_blocks
from .lda_sparse import block_draw, block_word_bound, uses_sparse

__all__ = [
    "Params", "State", "Data", "SweepInfo", "SAMPLERS",
    "check_params", "state_shapes", "check_state", "prepare", "init", "state_from_assignments",
    "sweep", "log_joint", "estimate", "fold_in", "assignments", "rebuild",
    "shard_sizes", "pad_shard", "recount_shard", "check_shard_params",
    "to_carry", "from_carry", "sweep_carry", "learn", "learns", "traced_priors", "initial_priors",
    "OPTIMIZE_ALPHA",
]

SAMPLERS = ("parallel", "sequential", "uncollapsed")
#: ``jaxtopics.distributed`` can shard this model's ``parallel`` kernel over devices
SHARDING = Sharding(
    # per-shard State fields and the axis each runs along; word_topic and topic are global
    fields={"z": "tokens", "doc_topic": "docs"},
    # global State fields that are settings, equal on every shard (never summed over shards)
    replicated=("alpha", "beta"),
    # a shard laid out for word rotation holds z in that layout ([B, C], ``Data.order``): no
    # sweep or chunk of sweeps converts it, and ``Data.order`` stays on the host
    permuted={"z": "order"},
    # the ``init`` settings ``distributed.init`` supports (the facade shards any initial state)
    inits=("random",),
    # ``shard_sizes`` entries that ``jaxtopics.distributed`` sums over the shards (bounds of
    # global quantities): a word's count in the whole corpus is at most the sum of the shards'
    # largest
    summed_sizes=("count_bound",),
)
#: parameters added after model files of format 2 were written, with the value older files ran
#: with (not today's default); every other parameter must be in a model file
PARAMS_ADDED_LATER = {"sync_every": 1, "exchange": "moves", **learned_priors.DEFAULTS,
                      **seed_words.DEFAULTS, "draw": "dense"}
#: State fields added after model files were written: a function of the file's params giving
#: the value the chain had (learned priors: the fixed ones it ran with)
STATE_ADDED_LATER = learned_priors.state_added_later(lambda params: params.num_topics)
#: ``Params.optimize_alpha``: None (alpha fixed), or learned as one value or one per topic
OPTIMIZE_ALPHA = learned_priors.OPTIMIZE_ALPHA
LOG_JOINT_USES_DATA = False
"""log_joint(state, None, params) works: the joint is a function of the state alone."""
INITS = ("random", "incremental")
#: how a sharded sweep keeps the devices' word-topic tables current (``Params.exchange``)
EXCHANGES = ("rotate", "moves")


class Params(NamedTuple):
    """LDA hyper-parameters and kernel settings (hashable: a static argument under jit).

    num_topics: K. alpha: symmetric doc-topic Dirichlet. beta: symmetric topic-word Dirichlet.
    sampler: "parallel" | "sequential" | "uncollapsed". num_blocks: blocks per parallel sweep
    (the staleness of a parallel sweep is ~1/num_blocks of the corpus).
    mh_steps: 0 (default) = each token of a block draws exactly from (1), O(K) per token: per
    sweep this matches exact Gibbs. > 0 = that many MH cycles (doc + word proposal) per token,
    O(1) per token: its cost does not grow with K (on CPU it matches the exact draw at K=500 and
    wins beyond), but it mixes much more slowly per sweep; for very large K.
    chunk_size: tokens per chunk wherever a [tokens, K] working array is needed (at most; on
    XLA:CPU the exact draw uses fewer at large K so that its weights stay in cache).
    init: "incremental" (each block drawn from (1) given the blocks before it, as the first
    sweep of Griffiths & Steyvers / tomotopy's initialisation) or "random" (uniform topics).
    exchange: sharded sweeps only (``jaxtopics.distributed``), how the devices share n_kw.
    None (default): "rotate", or "moves" with ``draw="sparse"``. "rotate": the words are cut into P groups (word w in group w mod P), each device
    draws in P sub-epochs the tokens of its documents whose words are in the group it holds and
    passes the group on (``ops.rotation``): every n_kw row is updated by one device at a time,
    exactly, and a sweep has 2P + 1 collectives of whole groups (n_k, K numbers, is summed
    after each sub-epoch: the one count another device's moves reach late). "moves": every
    device holds all of n_kw and the devices exchange their blocks' moves (``sync_every``).
    With "rotate" a sweep has P ceil(num_blocks / P) blocks (each word group's tokens of a
    shard in ceil(num_blocks / P) blocks), at least one per group.
    sync_every: ``exchange="moves"`` only (with "rotate" only its default is accepted): blocks
    between two exchanges of the word-topic moves. E applies a device's own moves at once and
    the other devices' every E blocks (E times fewer collectives; E >= num_blocks: once a
    sweep). 4 converges like exact Gibbs on Reuters (docs/distributed.md) and
    is ~1.08x faster than 1 on 2 CPU devices; 1 = after every block (one sharded sweep is then
    the one-device blocked sweep whose block b is the union of the shards' blocks b; the
    uniforms differ).
    optimize_alpha: None (default: alpha stays as given), "symmetric" (one alpha learned) or
    "asymmetric" (alpha_k learned per topic); optimize_beta: learn the symmetric beta. Learned
    priors maximise the Dirichlet-multinomial evidence of the current counts (``hyper``: the
    doc-topic rows for alpha, the topics' word counts for beta) with a weak Gamma prior, after
    sweep s (counted from 1) whenever s > burn_in and s is a multiple of optimize_every
    (:func:`learn`); `alpha` and `beta` are their starting values, the learned ones are chain
    state (``State.alpha``, ``State.beta``). optimizer: "minka" (default: Minka's fixed point)
    or "optax" (L-BFGS on log alpha; the same optimum).
    seed_words: guided topics (``jaxtopics.seed_words``): (topic, word id, weight) triples, each
    giving beta_kw = beta + weight in its topic's row; every kernel, the joint and phi then use
    the per-topic prior (S) of that module. () (default): the symmetric beta. Not with
    ``optimize_beta`` or ``mh_steps > 0``.
    draw: the exact parallel kernel's draw of a token from (1): "dense" (O(K),
    ``ops.collapsed_topic_draw``), "sparse" (``ops.sparse_draw``, SparseLDA/CuLDA's split:
    O(document length + sqrt(K)) per token plus O(K) per distinct word of a block; symmetric
    beta, not with seed words, not with ``exchange="rotate"`` when sharded) or "auto" (default:
    :mod:`.lda_sparse` picks by K and backend from measurement). The same law either way.
    """

    num_topics: int
    alpha: float = 0.1
    beta: float = 0.01
    sampler: str = "parallel"
    num_blocks: int = 64
    mh_steps: int = 0
    chunk_size: int = 8192
    init: str = "random"
    sync_every: int = 4
    exchange: str | None = None
    optimize_alpha: str | None = None
    optimize_beta: bool = False
    optimize_every: int = 10
    burn_in: int = 50
    optimizer: str = "minka"
    seed_words: tuple = ()
    draw: str = "auto"


@dataclass(frozen=True)
class Data:
    """Device layout of a corpus for LDA sweeps: 8 bytes per token (4 more with the MH index).

    The per-token arrays exist only in the strided block layout of the parallel sweep
    (``ops.to_strided`` with B = ``num_blocks``): token t sits at slot (t mod B, t div B), so row
    b is block b, and the corpus order is ``ops.from_strided`` of it; no index array is needed.
    word, doc: [B, C] int32 word and document of each token; slots that hold no token (past N,
    or a shard's padding tokens) hold word V and document 0 (``word < V`` marks the tokens).
    doc_start, doc_len: [D] token range of each document; word_start, word_len: [V] range of each
    word in word_members. word_members: [N] token positions sorted by word, and word_rank: [B, C]
    each token's place among its word's tokens: the MH kernel's proposals only (``mh_steps > 0``;
    None otherwise). num_tokens: N (static). count_bound (static): a bound on every cell of the
    doc-topic and word-topic tables, the longest document's length or the most frequent word's
    count, whichever is larger (for a shard: of the whole corpus); it lets the exact parallel
    kernel carry those tables narrow (:func:`to_carry`).
    word_groups (static): 1, or G > 1 in a shard laid out for word rotation (``pad_shard``):
    rows s P' .. (s+1) P' - 1 (P' = rows / G) are the blocks of the shard's tokens of word group
    s, ``word`` holds the word's row in its group (w div G; no token: ``group_rows(V, G)``) and
    order [B, C] each slot's token (its position in the shard; no token: num_tokens): the State
    of such a shard holds z [B, C] in this layout, and ``jaxtopics.distributed`` keeps `order`
    on the host to put z in corpus order (None on the devices).
    rotate_words (static): Params.exchange == "rotate" for the exact parallel kernel; a sharded
    layout then rotates word groups.
    """

    word: Array
    doc: Array
    doc_start: Array
    doc_len: Array
    word_start: Array
    word_len: Array
    word_members: Array | None
    word_rank: Array | None
    num_tokens: int
    count_bound: int = 2**31 - 1
    order: Array | None = None
    word_groups: int = 1
    rotate_words: bool = False
    max_doc_len: int = 0
    block_words: int = 0


jax.tree_util.register_dataclass(
    Data, data_fields=["word", "doc", "doc_start", "doc_len", "word_start", "word_len",
                       "word_members", "word_rank", "order"],
    meta_fields=["num_tokens", "count_bound", "word_groups", "rotate_words", "max_doc_len",
                 "block_words"])


class State(NamedTuple):
    """Chain state: z [N+1] int32 topic of each token (slot N is a dummy, always 0), the int32
    count tables doc_topic [D, K], word_topic [V, K], topic [K] consistent with z, and the
    priors in use: alpha [K] float32 (all equal unless learned asymmetric) and beta [] float32,
    the Params' values unless the chain learns them (``Params.optimize_alpha``/``optimize_beta``)."""

    z: Array
    doc_topic: Array
    word_topic: Array
    topic: Array
    alpha: Array
    beta: Array


class SweepInfo(NamedTuple):
    """Per-sweep diagnostics: changed = number of tokens whose topic changed (int32)."""

    changed: Array


def check_params(params: Params) -> Params:
    """Validate hyper-parameters; raises ParameterError naming the bad field.

    Returns the params normalised (Python int / float fields). num_topics and the kernel sizes
    fit in int32 (bools are refused); alpha and beta are normal float32 numbers, and K * alpha
    must stay finite in float32 (V * beta is checked by :func:`prepare`, which knows V).
    """
    k = check_positive_int(params.num_topics, "num_topics")
    alpha = check_float32(params.alpha, "alpha")
    if alpha * k > FLOAT32_MAX:
        raise ParameterError(f"alpha = {alpha!r} is too large for num_topics = {k}: K * alpha "
                             f"overflows float32")
    beta = check_float32(params.beta, "beta")
    if not isinstance(params.sampler, str) or params.sampler not in SAMPLERS:
        raise ParameterError(f"sampler must be one of {SAMPLERS}, got {params.sampler!r}")
    if not isinstance(params.init, str) or params.init not in INITS:
        raise ParameterError(f"init must be one of {INITS}, got {params.init!r}")
    exchange = params.exchange
    if exchange is None:            # the default: word rotation, or moves for the sparse draw
        exchange = "moves" if params.draw == "sparse" else "rotate"
    if not isinstance(exchange, str) or exchange not in EXCHANGES:
        raise ParameterError(f"exchange must be one of {EXCHANGES}, got {exchange!r}")
    sizes = {name: check_int(getattr(params, name), name, low=low, high=high)
             for name, low, high in (("num_blocks", 1, MAX_BLOCKS), ("mh_steps", 0, INT32_MAX),
                                     ("chunk_size", 1, INT32_MAX), ("sync_every", 1, INT32_MAX))}
    if sizes["mh_steps"] and params.sampler != "parallel":
        raise ParameterError(f"mh_steps applies to the 'parallel' sampler only, got "
                             f"sampler={params.sampler!r} with mh_steps={sizes['mh_steps']}")
    default_sync = Params._field_defaults["sync_every"]
    if exchange == "rotate" and sizes["sync_every"] != default_sync:
        raise ParameterError(f"sync_every applies to exchange='moves' only (rotating word groups "
                             f"exchanges no moves), got sync_every={sizes['sync_every']} with "
                             f"exchange='rotate'")
    if not isinstance(params.draw, str) or params.draw not in DRAWS:
        raise ParameterError(f"draw must be one of {DRAWS}, got {params.draw!r}")
    if params.draw == "sparse" and (params.sampler != "parallel" or sizes["mh_steps"]
                                    or params.seed_words):
        raise ParameterError("draw='sparse' is the exact 'parallel' kernel's draw (mh_steps=0, "
                             f"no seed_words), got sampler={params.sampler!r}, "
                             f"mh_steps={sizes['mh_steps']}, seed_words={bool(params.seed_words)}")
    learning = learned_priors.check(params)
    if learning["optimize_alpha"] == "asymmetric" and sizes["mh_steps"]:
        # the MH document proposal draws (n_dt + alpha) / (n_d + K alpha) in O(1) from a random
        # member token or a uniform topic; a topic-dependent alpha_t would need an alias table
        raise ParameterError("optimize_alpha='asymmetric' needs exact draws (mh_steps=0): the "
                             "Metropolis-Hastings document proposal draws from a symmetric "
                             f"alpha only, got mh_steps={sizes['mh_steps']}")
    return params._replace(num_topics=k, alpha=alpha, beta=beta, sampler=str(params.sampler),
                           init=str(params.init), exchange=str(exchange),
                           draw=str(params.draw), **sizes, **learning,
                           seed_words=seed_words.check(params))


def initial_priors(params: Params) -> tuple[np.ndarray, np.ndarray]:
    """(alpha [K] float32, beta [] float32): the State's priors before anything is learned."""
    return learned_priors.initial(params, params.num_topics)


def _initial_priors_traced(params: Params) -> tuple[Array, Array]:
    return learned_priors.initial_traced(params, params.num_topics)


learns = learned_priors.learns
_priors = learned_priors.in_use


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """The learned priors the trace records ({} when the chain learns none)."""
    return learned_priors.traced(state, params)


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int) -> State:
    """The shape and dtype of every State array for a corpus of these sizes (no computation):
    what a model file's arrays are checked against before a model is built from them."""
    k, i32 = params.num_topics, jnp.int32
    return State(z=jax.ShapeDtypeStruct((num_tokens + 1,), i32),
                 doc_topic=jax.ShapeDtypeStruct((num_docs, k), i32),
                 word_topic=jax.ShapeDtypeStruct((num_words, k), i32),
                 topic=jax.ShapeDtypeStruct((k,), i32),
                 alpha=jax.ShapeDtypeStruct((k,), jnp.float32),
                 beta=jax.ShapeDtypeStruct((), jnp.float32))


def check_state(state: State, params: Params) -> str | None:
    """What is inconsistent in a state read from outside (host arrays), or None if nothing.

    Topics lie in [0, K), the dummy slot z[N] is 0, counts are non-negative and the three count
    tables agree with z; the priors are finite and positive, equal to the Params' where they are
    not learned, and alpha is one value unless learned asymmetric.
    """
    z = np.asarray(state.z)
    n, k = z.shape[0] - 1, params.num_topics
    doc_topic, word_topic, topic = (np.asarray(a, np.int64) for a in state[1:4])
    problem = learned_priors.state_problem(state, params, k)
    if problem:
        return problem
    problem = (latent_problem("z", z, k, dummy_slot=True, what="topics")
               or count_problem(doc_topic=doc_topic, word_topic=word_topic, topic=topic))
    if problem:
        return problem
    by_topic = np.bincount(z[:n], minlength=k)
    for name, table in (("doc_topic", doc_topic.sum(0)), ("word_topic", word_topic.sum(0)),
                        ("topic", topic)):
        if not np.array_equal(table, by_topic):
            return f"{name} counts disagree with the topic assignments z"
    return None


def prepare(corpus: Corpus, params: Params) -> Data:
    """Lay the corpus out for sweeps: per-token arrays, word index, parallel blocks.

    Raises ParameterError if V * beta overflows float32 (the denominator of (1)).
    """
    check_params(params)              # the functional core validates too
    if params.beta * corpus.num_words > FLOAT32_MAX:
        raise ParameterError(f"beta = {params.beta!r} is too large for a vocabulary of "
                             f"{corpus.num_words} words: V * beta overflows float32")
    seed_words.check_vocabulary(params, corpus.num_words)
    n, v, b = corpus.num_tokens, corpus.num_words, params.num_blocks
    word_ids = np.asarray(corpus.word_ids, np.int32)
    word_len = np.bincount(word_ids, minlength=v).astype(np.int32)
    word_start = (np.cumsum(word_len) - word_len).astype(np.int32)
    members = rank = None
    if params.mh_steps > 0:
        members = np.argsort(word_ids, kind="stable").astype(np.int32)
        rank = np.zeros(n, np.int32)
        rank[members] = np.arange(n, dtype=np.int32) - word_start[word_ids[members]]
        members, rank = to_device(members), to_device(to_strided(rank, b))
    word = to_strided(word_ids, b, fill=v)
    return Data(
        word=to_device(word),
        doc=to_device(strided_segments(corpus.doc_offsets, b)),    # no [N] doc_index on the host
        doc_start=to_device(corpus.doc_offsets[:-1].astype(np.int32)),
        doc_len=to_device(corpus.doc_lengths.astype(np.int32)),
        word_start=to_device(word_start), word_len=to_device(word_len),
        word_members=members, word_rank=rank, num_tokens=n,
        count_bound=int(max(word_len.max(initial=0), corpus.doc_lengths.max(initial=0))),
        rotate_words=_carries_blocks(params) and params.exchange == "rotate",
        max_doc_len=int(corpus.doc_lengths.max(initial=0)), block_words=block_word_bound(word))


def _sizes(data: Data) -> tuple[int, int, int]:
    """(N tokens, D docs, V words), static."""
    return data.num_tokens, data.doc_start.shape[0], data.word_start.shape[0]


def _valid(data: Data) -> Array:
    """[B, C] bool: the slots of the block layout that hold a token."""
    return data.word < _word_rows(data)


def _word_rows(data: Data) -> int:
    """Rows of the word-topic table the sweep's ``data.word`` indexes: V, or one word group's."""
    return group_rows(data.word_start.shape[0], data.word_groups)


def _token_at(blocked: Array, i: Array) -> Array:
    """Token i's entry of a [B, C] block-layout array (``ops.to_strided``)."""
    return blocked[i % blocked.shape[0], i // blocked.shape[0]]


def _token_arrays(data: Data) -> tuple[Array, Array, Array]:
    """(doc, word, counted int32) of every token, in the order z holds the tokens: corpus order
    ([N]; counted is 0 on a shard's padding tokens), or in a word-rotation shard its layout's
    slots ([B C]; counted is 0 on the slots that hold no token)."""
    counted = _valid(data)
    if data.word_groups > 1:                     # global word ids from (row in group, group)
        rows, groups = data.word.shape[0], data.word_groups
        word = data.word * groups + jnp.arange(rows, dtype=jnp.int32)[:, None] // (rows // groups)
        word = jnp.where(counted, word, 0)
        return data.doc.reshape(-1), word.reshape(-1), counted.astype(jnp.int32).reshape(-1)
    return (_in_corpus_order(data, data.doc), _in_corpus_order(data, data.word),
            _in_corpus_order(data, counted.astype(jnp.int32)))


def _in_corpus_order(data: Data, blocked: Array) -> Array:
    """A [B, C] per-slot array of the strided layout as [N] in corpus order."""
    return from_strided(blocked, data.num_tokens)


def state_from_assignments(z: Array, data: Data, params: Params) -> State:
    """Build the count tables for given topics z [N] (corpus order; a shard laid out for word
    rotation: z [B, C] in its layout, kept so)."""
    n, d, v = _sizes(data)
    k = params.num_topics
    z = jnp.asarray(z, jnp.int32)
    doc, word, counted = _token_arrays(data)
    flat = z.reshape(-1)
    alpha, beta = _initial_priors_traced(params)
    return State(
        z=z if data.word_groups > 1 else jnp.append(z, 0),
        doc_topic=count_table((d, k), doc, flat, weights=counted),
        word_topic=count_table((v, k), word, flat, weights=counted),
        topic=count_table((k,), flat, weights=counted),
        alpha=alpha, beta=beta,
    )


def init(key: Array, data: Data, params: Params) -> State:
    """Initial topics: uniform ("random"; a seeded chain's seed words in their topics,
    ``seed_words.initial_topics``), or drawn block by block from (1) given the tokens of the
    earlier blocks ("incremental"; O(N K) once, a far better start than uniform)."""
    n, d, v = _sizes(data)
    k = params.num_topics
    if params.init == "random":
        return _init_random(key, data, params)
    if data.word_groups > 1:
        raise ParameterError("init='incremental' needs the whole word-topic table: a shard laid "
                             "out for word rotation starts with init='random'")
    empty = State(jnp.zeros((n + 1,), jnp.int32), jnp.zeros((d, k), jnp.int32),
                  jnp.zeros((v, k), jnp.int32), jnp.zeros((k,), jnp.int32),
                  *_initial_priors_traced(params))
    prior = seed_words.prior(params, v)

    def block(st, xs):
        valid, doc, word, b = xs
        u = jax.random.uniform(jax.random.fold_in(key, b), doc.shape)
        new = chunked_map(lambda c: _dense_block_draw(*c, st, params, v, exclude_own=False,
                                                      prior=prior),
                          (u, doc, word, jnp.zeros_like(doc)), _draw_chunk(params, doc.shape[0]))
        weight = valid.astype(jnp.int32)          # tokens join the counts: one scatter per table
        return st._replace(doc_topic=st.doc_topic.at[doc, new].add(weight),
                           word_topic=st.word_topic.at[word, new].add(weight),
                           topic=st.topic.at[new].add(weight)), jnp.where(valid, new, 0)

    state, new = jax.lax.scan(block, empty, (_valid(data), data.doc, data.word,
                                             jnp.arange(data.word.shape[0])))
    return state._replace(z=jnp.append(_in_corpus_order(data, new), 0))


@functools.partial(jax.jit, static_argnums=(2,))
def _init_random(key: Array, data: Data, params: Params) -> State:
    """Uniform initial topics (a seeded chain: its seed words' tokens in their topics) and
    their counts, one compiled program with no [N] temporary
    beyond z itself (run op by op, the random bits, corpus-order copies and the scatters'
    operands were each an [N] buffer of their own: 70 bytes per token at the peak)."""
    k = params.num_topics
    if data.word_groups > 1:                     # z in the rotation layout
        z = jnp.where(_valid(data), jax.random.randint(key, data.word.shape, 0, k), 0)
        start = seed_words.initial_topics(params, _sizes(data)[2])
        if start is not None:                    # seed words' tokens start in their topic
            _, word, counted = _token_arrays(data)
            seeded = jnp.where(counted > 0, jnp.take(start, word, mode="clip"), -1)
            z = jnp.where(seeded.reshape(z.shape) >= 0, seeded.reshape(z.shape), z)
        return state_from_assignments(z, data, params)
    return _draw_uniform_blocks(key, data, params)


def _draw_uniform_blocks(key: Array, data: Data, params: Params) -> State:
    """z uniform, drawn a block of the layout at a time (row b from ``fold_in(key, b)``) and
    counted as it is drawn: every temporary is one block's ([C]); drawing all N at once held
    20 bytes per token of random bits and the scatters' [N, 2] index arrays 16 more."""
    (n, d, v), k = _sizes(data), params.num_topics
    rows, width = data.word.shape
    alpha, beta = _initial_priors_traced(params)
    empty = State(jnp.zeros((n + 1,), jnp.int32), jnp.zeros((d, k), jnp.int32),
                  jnp.zeros((v, k), jnp.int32), jnp.zeros((k,), jnp.int32), alpha, beta)

    start = seed_words.initial_topics(params, v)   # a seeded chain: seed words in their topic

    def block(st, b):
        new = jax.random.randint(jax.random.fold_in(key, b), (width,), 0, k)
        if start is not None:
            seeded = jnp.take(start, data.word[b], mode="clip")
            new = jnp.where(seeded >= 0, seeded, new)
        weight = (data.word[b] < v).astype(jnp.int32)          # slots that hold a token
        pos = jnp.where(weight > 0, b + rows * jnp.arange(width, dtype=jnp.int32), n)
        return st._replace(z=st.z.at[pos].set(jnp.where(weight > 0, new, 0)),
                           doc_topic=st.doc_topic.at[data.doc[b], new].add(weight),
                           word_topic=st.word_topic.at[data.word[b], new].add(weight),
                           topic=st.topic.at[new].add(weight)), None

    return jax.lax.scan(block, empty, jnp.arange(rows))[0]


def _conditional(doc_row: Array, word_row: Array, topic_row: Array, alpha: Array | float,
                 beta: Array | float, v: int, beta_total: Array | None = None) -> Array:
    """Eq. (1) from count rows that already exclude the token itself; with `beta_total` [K]
    (seed words), `beta` is the word's prior row beta_.w [K] and (S) of ``seed_words``."""
    return ((doc_row.astype(jnp.float32) + alpha)
            * (word_row.astype(jnp.float32) + beta)
            / (topic_row.astype(jnp.float32) + (v * beta if beta_total is None else beta_total)))


def _apply_moves(state: State, pos: Array | None, doc: Array, word: Array, old: Array, new: Array,
                 valid: Array, axis_name: str | None = None) -> State:
    """Move tokens `pos` from topics `old` to `new` (padding slots have valid=False); with
    ``pos=None`` the count tables only (the caller writes z).

    With `axis_name` (documents sharded over that mapped axis) the word-topic and topic moves of
    every shard are gathered (``ops.exchange``) and applied to each shard's copy of those tables,
    so the copies stay equal; the document-topic moves stay local."""
    weight = valid.astype(jnp.int32)
    z = state.z if pos is None else state.z.at[pos].set(jnp.where(valid, new, 0))
    doc_topic = move_counts(state.doc_topic, doc, old, new, weight)
    word, old, new, weight = exchange(axis_name, word, old, new, weight)
    return state._replace(z=z, doc_topic=doc_topic,
                          word_topic=move_counts(state.word_topic, word, old, new, weight),
                          topic=move_counts(state.topic, None, old, new, weight))


# --------------------------------------------------------------------------------------------
# kernels


def _sequential_sweep(key: Array, state: State, data: Data, params: Params) -> tuple[State, SweepInfo]:
    n, _, v = _sizes(data)
    u = jax.random.uniform(key, (n,))
    prior = seed_words.prior(params, v)

    def step(i, carry):
        st, changed = carry
        d, w, s = _token_at(data.doc, i), _token_at(data.word, i), st.z[i]
        alpha, beta = _priors(st, params)
        beta, total = (beta, None) if prior is None else (prior[0][w], prior[1])
        weights = _conditional(st.doc_topic[d].at[s].add(-1), st.word_topic[w].at[s].add(-1),
                               st.topic.at[s].add(-1), alpha, beta, v, total)
        t = categorical(u[i][None], weights[None])
        one = jnp.ones((1,), bool)
        st = _apply_moves(st, i[None], d[None], w[None], s[None], t, one)
        return st, changed + (t[0] != s).astype(jnp.int32)

    state, changed = jax.lax.fori_loop(0, n, step, (state, jnp.int32(0)))
    return state, SweepInfo(changed)


def _dense_block_draw(u: Array, doc: Array, word: Array, old: Array, state: State,
                      params: Params, v: int, exclude_own: bool = True,
                      prior: tuple[Array, Array] | None = None,
                      prior_word: Array | None = None) -> Array:
    """Exact draw from (1) for a chunk of tokens against fixed counts (own token at `old`
    excluded when `exclude_own`); ``ops.collapsed_topic_draw`` with the document as the group.
    `prior`: a seeded chain's (beta [V, K], its column sums) (``seed_words.prior``), its rows
    read at `prior_word` (the tokens' global word ids; default `word`)."""
    alpha, beta = _priors(state, params)
    total = None
    if prior is not None:
        beta, total = jnp.take(prior[0], word if prior_word is None else prior_word, axis=0,
                               mode="clip"), prior[1]
    return collapsed_topic_draw(u, state.doc_topic[doc], state.word_topic[word], state.topic, old,
                                alpha, beta, v, exclude_own, beta_total=total)


def _mh_block_draw(u: Array, pos: Array, doc: Array, word: Array, rank: Array, old: Array,
                   state: State, data: Data, params: Params, v: int) -> Array:
    """`mh_steps` cycles of doc- and word-proposal MH per token targeting (1), O(1) per token.

    Proposals leave the token out of its groups (q_doc ∝ n_dt^-i + alpha, q_word ∝ n_tw^-i + beta),
    so the acceptance ratios are the LightLDA cycle ratios
      doc:  (n_tw^-i + beta)(n_s^-i + V beta) / ((n_sw^-i + beta)(n_t^-i + V beta))
      word: (n_dt^-i + alpha)(n_s^-i + V beta) / ((n_ds^-i + alpha)(n_t^-i + V beta)).
    `u` [mh_steps, 4, tokens] holds the uniforms of the proposals and of the acceptance tests;
    `rank` is each token's place among its word's tokens (``Data.word_rank``).
    """
    (a, b), k = _priors(state, params), params.num_topics
    vb = v * b
    doc_start, doc_len = data.doc_start[doc], data.doc_len[doc]
    word_start, word_len = data.word_start[word], data.word_len[word]
    doc_skip, word_skip = pos - doc_start, rank

    def factors(t):
        """(n_dt^-i + alpha, n_tw^-i + beta, n_t^-i + V beta) from the block-start counts."""
        own = (t == old).astype(jnp.float32)
        return (table_cells(state.doc_topic, doc, t) - own + a,
                table_cells(state.word_topic, word, t) - own + b,
                state.topic[t] - own + vb)

    def cycle(step, carry):
        """One doc-proposal and one word-proposal MH step."""
        s, fd_s, fw_s, fn_s = carry
        for kind in (0, 1):
            if kind == 0:   # topic of another random token of the same document
                t = propose_from_members(u[step, 0], doc_start, doc_len, None, state.z, a, k,
                                         skip=doc_skip)
            else:           # topic of another random token of the same word
                t = propose_from_members(u[step, 2], word_start, word_len, data.word_members,
                                         state.z, b, k, skip=word_skip)
            fd_t, fw_t, fn_t = factors(t)
            if kind == 0:
                ratio = (fw_t * fn_s) / (fw_s * fn_t)
            else:
                ratio = (fd_t * fn_s) / (fd_s * fn_t)
            accept = mh_accept(u[step, 1 + 2 * kind], ratio)
            s = jnp.where(accept, t, s)
            fd_s, fw_s, fn_s = (jnp.where(accept, x, y) for x, y in
                                ((fd_t, fd_s), (fw_t, fw_s), (fn_t, fn_s)))
        return s, fd_s, fw_s, fn_s

    carry = (old, *factors(old))
    if params.mh_steps <= _MH_UNROLL:   # side by side, fused (a loop of 2 cycles: 1.5x slower)
        for step in range(params.mh_steps):
            carry = cycle(step, carry)
        return carry[0]
    # a loop beyond: unrolled, the compile time grows as mh_steps^2 (16 cycles: 16 s)
    return jax.lax.fori_loop(0, params.mh_steps, cycle, carry)[0]


#: at most this many MH cycles are compiled side by side, more run as a loop
_MH_UNROLL = 4


def _draw_chunk(params: Params, block_size: int) -> int:
    """Tokens per chunk of the exact block draw: at most ``params.chunk_size``, and on XLA:CPU
    few enough that a chunk's [chunk, K] float32 weights (_CPU_DRAW_ELEMENTS) stay in a core's L2
    cache: the categorical reads them three times, the last time by a strided gather (measured
    1.2-1.5x faster K=500 sweeps with 1024- than with 8192-token chunks). The block is split
    into equal chunks, of a multiple of ``ops.LANE_MULTIPLE`` tokens (whole SIMD vectors) when
    that pads by at most 1/16.
    Each token's draw uses its own uniform and count rows whatever the chunking, but the
    matmul prefix sums' last bits may depend on the chunk's width on XLA:CPU (measured: 1024-
    and 8192-token chunks gave two chains that part after a few sweeps, 512 and 2048 did not),
    so ``chunk_size`` is part of a chain's settings like every other parameter."""
    chunk = params.chunk_size
    if jax.default_backend() == "cpu":
        chunk = min(chunk, max(64, _CPU_DRAW_ELEMENTS // params.num_topics))
    pieces = -(-block_size // chunk)
    chunk = -(-block_size // pieces)
    return round_up(chunk, LANE_MULTIPLE) if chunk >= 16 * LANE_MULTIPLE else chunk


#: [chunk, K] elements of the exact draw's working weights on XLA:CPU (1 MiB of float32)
_CPU_DRAW_ELEMENTS = 2 ** 18


def _parallel_sweep(key: Array, state: State, data: Data, params: Params,
                    axis_name: str | None = None) -> tuple[State, SweepInfo]:
    if params.mh_steps == 0:
        carry, info = sweep_carry(key, to_carry(state, data, params, axis_name), data, params,
                                  axis_name)
        return from_carry(carry, data, params), info
    if data.word_rank is None:
        raise ParameterError("this Data was prepared for exact draws (mh_steps=0): prepare it "
                             "with the Params that set mh_steps > 0")
    return _blocked_sweep(key, state, data, params, axis_name)


def _carries_blocks(params: Params) -> bool:
    """Whether the sweep carries z in block layout: the exact parallel kernel (to_carry)."""
    return params.sampler == "parallel" and params.mh_steps == 0


def to_carry(state: State, data: Data, params: Params, axis_name: str | None = None) -> State:
    """The state as the exact parallel kernel carries it from sweep to sweep: z in the block
    layout of ``data`` ([B, C], slot (b, c) = token b + B c; slots past N hold 0), plus
    one empty row when a delayed exchange pads the blocks (``sync_every`` not dividing B). The
    driver converts once per jitted chunk of sweeps (``fit.run_chunk``), so no sweep transposes
    z. On the CPU, when every count fits (``data.count_bound`` <= 65535), doc_topic and
    word_topic travel as uint16: half the bytes for the draw's row reads and the moves' writes,
    the same chain bitwise (the updates wrap modulo 2^16 and every result fits); 1.2x faster
    K=500 sweeps on 2 CPU devices, whose two copies of n_.w then share the cache. Other
    kernels carry the state as it is."""
    if not _carries_blocks(params):
        return state
    if _narrow_counts(data):
        state = state._replace(doc_topic=state.doc_topic.astype(_NARROW),
                               word_topic=state.word_topic.astype(_NARROW))
    n = data.num_tokens
    num_blocks, width = data.word.shape
    if data.word_groups > 1 or uses_sparse(params, data):   # z kept as it is (sparse: corpus
        return state                                        # order, documents contiguous)
    z = to_strided(state.z[:n], num_blocks, width=width)
    every = _exchange_every(params, data, axis_name)
    if every > 1 and num_blocks % every:
        z = jnp.concatenate([z, jnp.zeros((1, width), jnp.int32)])
    return state._replace(z=z)


def from_carry(carry: State, data: Data, params: Params) -> State:
    """The inverse of :func:`to_carry`: z back in corpus order with its dummy slot (a shard laid
    out for word rotation keeps z in its own layout), the tables back to int32."""
    if not _carries_blocks(params):
        return carry
    if data.word_groups > 1 or uses_sparse(params, data):   # z kept as it is
        z = carry.z
    else:
        z = jnp.append(from_strided(carry.z[:data.word.shape[0]], data.num_tokens), 0)
    return carry._replace(z=z, doc_topic=carry.doc_topic.astype(jnp.int32),
                          word_topic=carry.word_topic.astype(jnp.int32))


#: the dtype of the carried doc-topic and word-topic tables when every count fits in it
_NARROW = jnp.uint16


def _narrow_counts(data: Data) -> bool:
    """Whether the exact parallel kernel carries its count tables as ``_NARROW``: on the CPU
    (a GPU's scatter-add has no 16-bit atomics) when no cell can exceed its range."""
    return (jax.default_backend() == "cpu"
            and data.count_bound <= int(jnp.iinfo(_NARROW).max))


def sweep_carry(key: Array, carry: State, data: Data, params: Params,
                axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """:func:`sweep` on a state in the :func:`to_carry` layout (the same chain, bitwise)."""
    if not _carries_blocks(params):
        return sweep(key, carry, data, params, axis_name)
    if axis_name is not None:
        check_shard_params(params)
        return sharded_sweep(_blocked_sweep, key, carry, data, params, axis_name)
    return _blocked_sweep(key, carry, data, params, None)


def _blocked_sweep(key: Array, state: State, data: Data, params: Params,
                   axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """The blocks of a parallel sweep. Exact draws take `state` in the :func:`to_carry` layout;
    MH draws take it in corpus order."""
    n, _, v = _sizes(data)
    num_blocks, width = data.word.shape
    exact = params.mh_steps == 0
    sparse = exact and uses_sparse(params, data)      # z in corpus order, as for MH draws
    # The uniforms are made block by block (``ops.block_uniforms``): no [N] array of them exists.
    # Exact draws never read z inside the sweep: a token's old topic is its topic at the start of
    # the sweep (each token is in one block). So z is carried in block layout (to_carry; reading
    # a block's strided positions of a corpus-order z touches a new cache line per token, ~25 %
    # of a K=50 sweep on XLA:CPU), each block reads its row and writes its new topics back in
    # place: no [N] temporary. The MH kernel's proposals read other tokens' current topics by
    # corpus position, so it keeps z in corpus order, up to date block by block.
    chunk = _draw_chunk(params, width)
    every = _exchange_every(params, data, axis_name)
    delayed = every > 1
    rotated = data.word_groups > 1
    word_rows = _word_rows(data)
    prior = seed_words.prior(params, v) if exact else None

    def flushed(st, pending):
        """The state with the last block's new topics written into z."""
        last, last_b = pending
        return st._replace(z=jax.lax.dynamic_update_index_in_dim(st.z, last, last_b, 0))

    def block(carry, xs):
        st, changed, pending = carry
        if rotated:                           # the block's index; its rows are read here
            b = xs
            doc, word = data.doc[b], data.word[b]
        else:
            doc, word, b = xs[:3]
        valid = word < word_rows                            # the slots that hold a token
        if sparse:
            pos = jnp.where(valid, b + num_blocks * jnp.arange(width), n)   # n: z's dummy slot
            old = st.z[pos]
            alpha, beta = _priors(st, params)
            new = jnp.where(valid, block_draw(
                jax.random.fold_in(key, b), doc, word, old, st, data, params, v, word_rows,
                alpha, beta,
                lambda u, d, w, o: _dense_block_draw(u, d, w, o, st, params, v)), 0)
        elif exact:
            # The previous block's new topics are written first: written after this block's
            # reads of its old ones, the update could not be in place (XLA copies the buffer).
            st = flushed(st, pending)
            old = st.z[b]
            block_key = jax.random.fold_in(key, b)      # once per block, not per chunk

            def draw(c):          # a chunk's uniforms are made in the chunk (one fused loop)
                at, doc_c, word_c, old_c = c[:4]
                u = block_uniforms(block_key, None, (width,), positions=at)
                return _dense_block_draw(u, doc_c, word_c, old_c, st, params, v, prior=prior,
                                         prior_word=c[4] if len(c) > 4 else None)
            cs = (jnp.arange(width), doc, word, old)
            if prior is not None and rotated:     # the prior's rows: global word ids
                cs += (word * data.word_groups + b // (num_blocks // data.word_groups),)
            new = jnp.where(valid, chunked_map(draw, cs, chunk), 0)
            pending = (new, b)
            pos = None
        else:
            rank = xs[3]
            pos = jnp.where(valid, b + num_blocks * jnp.arange(width), n)   # n: z's dummy slot
            old = st.z[pos]
            u = block_uniforms(key, b, (params.mh_steps, 4, width))
            new = _mh_block_draw(u, pos, doc, word, rank, old, st, data, params, v)
        st = _apply_moves(st, pos, doc, word, old, new, valid,
                          None if delayed or rotated else axis_name)
        moves = pack_moves(word, old, new, params.num_topics) if delayed else None
        changed = changed + jnp.sum(valid & (new != old), dtype=jnp.int32)
        return (st, changed, pending), moves

    # exact: (a block's new topics, b), written into z at the next block (block 0's own row
    # to start with: a no-op)
    strided = exact and not sparse            # the dense exact draw's z in block layout
    pending = (state.z[0], jnp.int32(0)) if strided else None
    xs = (data.doc, data.word, jnp.arange(num_blocks))
    if not exact:
        xs = xs + (data.word_rank,)
    carry = (state, jnp.int32(0), pending)
    if rotated:
        carry = rotated_blocks(block, carry, data.word_groups, num_blocks, v, axis_name)
    elif delayed:
        carry = delayed_blocks(block, carry, xs, every, v, num_blocks, axis_name)
    else:
        carry, _ = jax.lax.scan(block, carry, xs)
    state, changed, pending = carry
    if strided:
        state = flushed(state, pending)
    return state, SweepInfo(changed)


def _exchange_every(params: Params, data: Data, axis_name: str | None) -> int:
    """Blocks between two exchanges of moves in a sweep: ``sync_every``, at most the sweep's
    blocks (a larger E is the same chain as E = B, without its empty padding blocks); 1
    unsharded or with word rotation (no moves are exchanged)."""
    if axis_name is None or data.word_groups > 1:
        return 1
    return min(params.sync_every, data.word.shape[0])


def _uncollapsed_sweep(key: Array, state: State, data: Data, params: Params) -> tuple[State, SweepInfo]:
    n, _, _ = _sizes(data)
    k_phi, k_theta, k_z = jax.random.split(key, 3)
    alpha, beta = _priors(state, params)
    prior = seed_words.prior(params, state.word_topic.shape[0])
    beta = beta if prior is None else prior[0]
    log_phi = log_dirichlet(k_phi, state.word_topic + beta, axis=0)     # [V, K], columns sum to 1
    log_theta = log_dirichlet(k_theta, state.doc_topic + alpha, axis=1)  # [D, K]
    u = jax.random.uniform(k_z, (n,))

    def draw(c):
        uc, doc, word = c
        return categorical_logits(uc, log_theta[doc] + log_phi[word])

    doc, word, _ = _token_arrays(data)
    z = chunked_map(draw, (u, doc, word), params.chunk_size)
    new = state_from_assignments(z, data, params)._replace(alpha=state.alpha, beta=state.beta)
    return new, SweepInfo(jnp.sum(z != state.z[:n], dtype=jnp.int32))


_KERNELS = {"sequential": _sequential_sweep, "parallel": _parallel_sweep,
            "uncollapsed": _uncollapsed_sweep}


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler``; pure and jit/vmap-able (params static).

    `axis_name`: inside ``shard_map`` over documents (``jaxtopics.distributed``), the mesh axis
    the shards are mapped over. With ``exchange="rotate"`` (Data laid out by ``pad_shard`` in
    word groups) the shards hold one word group's n_kw rows at a time and pass them on after
    each sub-epoch (``ops.rotation``); with ``"moves"`` the ``parallel`` kernel exchanges the
    word-topic moves of every ``sync_every`` blocks between the shards (one packed
    ``all_gather``; with 1, a sharded sweep is the same blocked sweep as on one device, with
    block b the union of the shards' blocks b). Exact draws only: the MH proposals draw from
    a shard's own tokens, not from the whole corpus.
    """
    if axis_name is None:
        return _KERNELS[params.sampler](key, state, data, params)
    check_shard_params(params)
    return sharded_sweep(_parallel_sweep, key, state, data, params, axis_name)


# --------------------------------------------------------------------------------------------
# learned priors


def learn(state: State, data: Data, params: Params, t: Array,
          axis_name: str | None = None) -> State:
    """The state after sweep `t` (0-based) with its priors re-fitted where the chain learns them
    (``Params.optimize_alpha`` / ``optimize_beta``): when s = t + 1 > burn_in and s is a
    multiple of optimize_every, alpha maximises the Dirichlet-multinomial evidence of the
    doc-topic rows n_d. and beta that of the topics' word counts n_k. (``hyper``, from their
    current values: Minka's fixed point or L-BFGS, with hyper's weak Gamma prior). Called by
    the driver after every sweep (``fit.run_chunk``; the state may be in the :func:`to_carry`
    layout); a chain that learns nothing is returned as it is, with no operation added.

    `axis_name`: inside ``shard_map`` over documents, the documents' statistics are summed over
    the shards (``lax.psum``); word_topic is the whole table on every shard, so every shard
    computes the same priors."""
    return learned_priors.refit(state, params, t, state.doc_topic, state.word_topic,
                                alpha_axis=-1, beta_axis=0, axis_name=axis_name)


def invariants(state: State, data: Data | None, params: Params) -> dict[str, Array]:
    """What the driver checks after every jitted chunk (``models.base.Invariants``): the count
    tables are non-negative, doc_topic and word_topic sum over their rows to topic, and topic
    sums to the N tokens (when `data` is given; None: a sharded state's global view)."""
    from ..ops.counts import count_invariants
    return count_invariants(
        {"doc_topic": state.doc_topic, "word_topic": state.word_topic, "topic": state.topic},
        {"doc_topic: sums over documents to topic": (state.doc_topic.sum(0), state.topic),
         "word_topic: sums over words to topic": (state.word_topic.sum(0), state.topic),
         "topic: sums to the tokens": (state.topic.sum(), None if data is None else data.num_tokens)})


def log_joint(state: State, data: Data, params: Params) -> Array:
    """Collapsed log p(w, z) = sum_d log DirMult(n_d. | alpha) + sum_k log DirMult(n_k. | beta_k.)
    (beta_k. the symmetric beta, or topic k's row of a seeded prior).

    The quantity tomotopy reports per word as ``ll_per_word`` (times N). A function of the count
    tables alone: `data` is unused and may be None (so a loaded model's state can be scored).
    """
    alpha, beta = _priors(state, params)
    prior = seed_words.prior(params, state.word_topic.shape[0])
    return (dirichlet_multinomial_log_evidence(state.doc_topic, alpha)
            + dirichlet_multinomial_log_evidence(state.word_topic,
                                                 beta if prior is None else prior[0], axis=0))


def estimate(state: State, params: Params) -> dict[str, Array]:
    """Posterior-mean point estimates (Griffiths & Steyvers 2004): theta_dk = (n_dk + alpha_k) /
    (n_d + sum_k alpha_k), phi_kw = (n_kw + beta) / (n_k + V beta) (seeded: (n_kw + beta_kw) /
    (n_k + sum_w beta_kw)). Returns {"theta": [D, K], "phi": [K, V], "alpha": the alpha in use (a
    float, [K] when learned asymmetric), "beta": the beta in use (a float; seeded: [K, V])}."""
    k = params.num_topics
    v = state.word_topic.shape[0]
    alpha, beta = _priors(state, params)
    nd = state.doc_topic.sum(1, keepdims=True)
    total = k * alpha if jnp.ndim(alpha) == 0 else alpha.sum()
    theta = (state.doc_topic + alpha) / (nd + total)
    prior = seed_words.prior(params, v, beta)
    if prior is None:
        phi = (state.word_topic.T + beta) / (state.topic[:, None] + v * beta)
    else:
        beta = prior[0].T
        phi = (state.word_topic.T + beta) / (state.topic + prior[1])[:, None]
    return {"theta": theta, "phi": phi, "alpha": alpha, "beta": beta}


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with its count tables recounted from the topics z (after loading a file)."""
    return state_from_assignments(state.z[:-1], data, params)._replace(alpha=state.alpha,
                                                                       beta=state.beta)


def assignments(state: State) -> Array:
    """Topic of every token, aligned with ``corpus.word_ids`` ([N] int32)."""
    return state.z[:-1]


# the sharding hooks live in lda_shards.py (one concept per module); a module of the model
# contract provides them, so they are re-exported here
from .lda_shards import check_shard_params, pad_shard, recount_shard, shard_sizes  # noqa: E402,F401
# fold-in of unseen documents (lda_fold_in.py), part of the contract too
from .lda_fold_in import fold_in  # noqa: E402,F401
