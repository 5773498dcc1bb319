"""PTM, the pseudo-document topic model (Zuo, Wu, Zhang, Lin, Wang, Xu & Xiong, KDD 2016).

Each short document m belongs to one of P pseudo-documents, l_m ~ Mult(psi), psi ~ Dir(lam); its
tokens draw topics from the pseudo-document's theta_l ~ Dir(alpha), words from phi_k ~ Dir(beta).
Collapsed Gibbs over the pseudo-documents l and the topics z:

    p(l_m = l | rest) ∝ (n_l,-m + lam) prod_k (N_l,-m^k + alpha)^(N_m^k) / (N_l,-m + K alpha)^(N_m)   (36)

(x^(n) the rising factorial, factors x + j - 1 for j = 1..n; (36) is the equation's number in
the TopicModel4J paper, Qiang et al. 2020; computed in log space, one log per token, by
``ops.token_log_predictive``), and besides that pseudo-document step, for token i of word w in
document m:

    p(z_i = k | rest) ∝ (N_l^k,-i + alpha) (n_k^w,-i + beta) / (n_k,-i + V beta),  l = l_m     (T)

(``ops.collapsed_topic_draw`` with the pseudo-document as the token's group). The collapsed joint
is log p(l) + log p(z | l) + log p(w | z), three Dirichlet-multinomial evidences (``log_joint``).

Seed words (guided topics, ``Params.seed_words``; ``jaxtopics.seed_words``, as LDA's): word w
seeded in topic k gets beta_kw = beta + weight there (beta in the other topics), so in (T) beta
becomes beta_kw and V beta the topic's prior total sum_w beta_kw, log p(w | z) is one Dirichlet
per topic, and phi_kw = (n_k^w + beta_kw) / (n_k + sum_w beta_kw). (36) does not involve the
topic-word prior. A seeded chain's random start puts every seed word's tokens in their topic.

Kernels (``Params.sampler``):

- ``"sequential"``: exact collapsed Gibbs in corpus order: for each document, its pseudo-document
  from (36), then each of its tokens from (T).
- ``"parallel"`` (default): blocked sweep in two phases. (A) documents dealt round-robin into
  ``num_blocks`` blocks (``ops.strided_blocks``); the blocks are visited in turn and all documents
  of a block draw their pseudo-documents at once from (36) against the counts at the block's start
  (each document excluding itself), counts refreshed exactly between blocks. (B) tokens dealt the
  same way into ``num_blocks`` blocks, each block drawn at once from (T), exactly as LDA's parallel
  kernel. With one document and one token per block (``num_blocks >= max(D, N)``) it is exact
  Gibbs (a systematic scan: every l, then every z).

The parallel kernel's token draw from (T) is dense, O(K) per token (``ops.collapsed_topic_draw``),
or sparse (``Params.draw``; ``ops.sparse_draw``, SparseLDA / CuLDA's split into a
pseudo-document bucket and a word bucket, the same law): a token block's pseudo-documents list
their distinct topics once per block (``ops.group_topic_lists``, at most ``MAX_GROUP_TOPICS``;
the tokens of a pseudo-document with more draw densely), and the word bucket's topic-group sums
are built once per block for the block's distinct words (``Data.token_block_words``, laid out
once by :func:`prepare`). Per token O(M + sqrt K), M the pseudo-documents' distinct topics;
per block O(P K) for the lists, so it pays when K is large and a block holds many more tokens
than there are pseudo-documents (:func:`uses_sparse`).

Counts are int32 tables: ``pseudo_topic`` [P, K] (N_l^k), ``pseudo_docs`` [P] (n_l),
``doc_topic`` [D, K] (N_m^k: a document's row moves between pseudo-documents as a whole),
``word_topic`` [V, K] (n_k^w) and ``topic`` [K] (n_k). PTM takes empty documents (they move by
the prior term alone). The pseudo-document step reads each document's tokens from a [D, L] table
padded to the longest document (L): made for short texts; a corpus with a few very long documents
pays D x L int32 there.

Learned priors (``Params.optimize_alpha`` / ``optimize_beta``, as LDA's: ``jaxtopics.learned_priors``,
:func:`learn`): alpha maximises the Dirichlet-multinomial evidence of the pseudo-document-topic
rows N_l. (``pseudo_topic``: groups are pseudo-documents, cells topics; the second sum of
``log_joint``), beta that of the topics' word counts n_k.; lam, the Dirichlet over
pseudo-documents, stays fixed. With alpha_k per topic (asymmetric), alpha in (36) and (T) is
the token's topic's alpha_k and K alpha is sum_k alpha_k.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .. import learned_priors, seed_words
from ..corpus import Corpus
from ..devices import to_device
from ..errors import ParameterError
from ..validate import MAX_BLOCKS, array_spec, check_positive_int, count_problem, latent_problem
from ..ops import (
    DRAWS,
    block_word_lists,
    categorical,
    categorical_logits,
    chunked_map,
    collapsed_topic_draw,
    count_table,
    dirichlet_multinomial_log_evidence,
    exchange,
    move_counts,
    move_rows,
    pad_array,
    dense_where,
    group_topic_lists,
    pad_blocks,
    repeat_ranks,
    sharded_sweep,
    sparse_chunk,
    sparse_topic_draw,
    strided_blocks,
    token_log_predictive,
    word_group_table,
)
from .base import Sharding

__all__ = [
    "Params", "State", "Data", "SweepInfo", "SAMPLERS",
    "check_params", "check_state", "prepare", "init", "state_from_assignments", "sweep", "log_joint",
    "estimate", "fold_in", "assignments", "rebuild", "shard_sizes", "pad_shard", "recount_shard",
    "learn", "learns", "traced_priors", "uses_sparse",
]

SAMPLERS = ("parallel", "sequential")
#: ``jaxtopics.distributed`` can shard this model's ``parallel`` kernel over devices
#: (per-shard State fields and their axis; pseudo_topic, pseudo_docs, word_topic and topic are
#: global: a pseudo-document's documents may live on any shard; alpha and beta, the priors in
#: use, are settings, equal on every shard)
SHARDING = Sharding(fields={"z": "tokens", "pseudo": "docs", "doc_topic": "docs"},
                    replicated=("alpha", "beta"))
#: Params fields newer than some model files, with the value those files ran with
PARAMS_ADDED_LATER = {**learned_priors.DEFAULTS, **seed_words.DEFAULTS, "draw": "dense"}
#: State fields newer than some model files: the priors those chains ran with (their params')
STATE_ADDED_LATER = learned_priors.state_added_later(lambda params: params.num_topics)

#: the most distinct topics a pseudo-document's list holds in the sparse draw (static; the
#: tokens of a pseudo-document with more draw densely)
MAX_GROUP_TOPICS = 256
#: "auto" draws sparsely on XLA:CPU from this K ...
CPU_MIN_TOPICS = 5000
#: ... and when a token block holds at least this many tokens per pseudo-document (the lists
#: cost ~P K per block: ``scripts/profile_sparse_draw.py --model ptm``, docs/benchmarks.md)
CPU_TOKENS_PER_GROUP = 128

# float32 must hold a concentration and its products with K, P, V without under/overflow
_MIN_CONC, _MAX_CONC = 1e-30, 1e30


class Params(NamedTuple):
    """PTM hyper-parameters and kernel settings (hashable: a static argument under jit).

    num_topics: K. num_pseudo_docs: P. alpha: symmetric pseudo-document-topic Dirichlet.
    beta: symmetric topic-word Dirichlet. lam: symmetric Dirichlet over pseudo-documents.
    sampler: "parallel" | "sequential". num_blocks: document blocks and token blocks per parallel
    sweep (staleness ~1/num_blocks of the corpus). chunk_size: bounds the working arrays
    (tokens x topics in the topic step, document tokens x pseudo-documents in (36)).
    optimize_alpha: None (default: alpha stays as given), "symmetric" or "asymmetric" (alpha_k
    per topic); optimize_beta: learn the symmetric beta. As LDA's (``jaxtopics.learned_priors``):
    after sweep s (from 1) with s > burn_in and s a multiple of optimize_every, alpha maximises
    the Dirichlet-multinomial evidence of the pseudo-document-topic rows N_l. and beta that of
    the topics' word counts (:func:`learn`); optimizer "minka" (default) or "optax". `alpha` and
    `beta` are the starting values, the learned ones are chain state (``State.alpha``/``beta``).
    lam is not learned.
    seed_words: guided topics (``jaxtopics.seed_words``): sorted (topic, word id, weight)
    triples, each giving beta_kw = beta + weight in its topic's row; (T), the joint, phi and the
    held-out scores then use that per-topic prior. () (default): the symmetric beta. Not with
    ``optimize_beta``.
    draw: the parallel kernel's token draw from (T): "dense" (O(K) per token), "sparse" (the
    same law by SparseLDA / CuLDA's split, O(M + sqrt K) per token and O(P K) per block; not
    with seed words or the sequential sampler) or "auto" (default: :func:`uses_sparse`).
    """

    num_topics: int
    num_pseudo_docs: int
    alpha: float = 0.1
    beta: float = 0.01
    lam: float = 0.1
    sampler: str = "parallel"
    num_blocks: int = 64
    chunk_size: int = 8192
    optimize_alpha: str | None = None
    optimize_beta: bool = False
    optimize_every: int = 10
    burn_in: int = 50
    optimizer: str = "minka"
    seed_words: tuple = ()
    draw: str = "auto"


class Data(NamedTuple):
    """Device layout of a corpus for PTM sweeps. Token arrays have one dummy slot at index N.

    word, doc: [N+1] int32 per token (corpus order). doc_start, doc_len: [D] token slice of each
    document. doc_tokens: [D, L] token positions of each document (L = longest document, N =
    padding), doc_valid: [D, L]. doc_blocks, doc_block_valid: [B, Cd] documents of each parallel
    block (D = padding). token_blocks, token_block_valid: [B, Ct] tokens of each parallel block.
    word_freq: [V] corpus frequency of each word (its shape carries V).
    token_block_words: [B, U] the distinct words of each token block, ascending, padded with V
    (``ops.block_word_lists``) when the sparse draw may be used (:func:`_lists_words`), else
    [B, 0].
    """

    word: Array
    doc: Array
    doc_start: Array
    doc_len: Array
    doc_tokens: Array
    doc_valid: Array
    doc_blocks: Array
    doc_block_valid: Array
    token_blocks: Array
    token_block_valid: Array
    word_freq: Array
    token_block_words: Array


class State(NamedTuple):
    """Chain state: z [N+1] int32 topic of each token (slot N a dummy, always 0), pseudo [D] int32
    pseudo-document l_m of each document, and the int32 count tables pseudo_topic [P, K],
    pseudo_docs [P], doc_topic [D, K], word_topic [V, K], topic [K], consistent with z and l;
    the priors in use: alpha [K] float32 (all equal unless learned asymmetric) and beta []
    float32, the Params' values unless the chain learns them."""

    z: Array
    pseudo: Array
    pseudo_topic: Array
    pseudo_docs: Array
    doc_topic: Array
    word_topic: Array
    topic: Array
    alpha: Array
    beta: Array


class SweepInfo(NamedTuple):
    """Per-sweep diagnostics: changed = tokens whose topic changed (int32; a document's change of
    pseudo-document is not counted)."""

    changed: Array


def _concentration(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}")
    if not _MIN_CONC <= v <= _MAX_CONC:
        raise ParameterError(f"{name} must lie in [{_MIN_CONC:g}, {_MAX_CONC:g}] "
                             f"(float32 range), got {value!r}")
    return v


def check_params(params: Params) -> Params:
    """Validate (and normalise to int/float) the hyper-parameters; raises ParameterError naming
    the bad field."""
    if params.sampler not in SAMPLERS:
        raise ParameterError(f"sampler must be one of {SAMPLERS}, got {params.sampler!r}")
    if not isinstance(params.draw, str) or params.draw not in DRAWS:
        raise ParameterError(f"draw must be one of {DRAWS}, got {params.draw!r}")
    if params.draw == "sparse" and (params.sampler != "parallel" or params.seed_words):
        raise ParameterError("draw='sparse' is the 'parallel' kernel's draw with the symmetric "
                             f"beta (no seed_words), got sampler={params.sampler!r}, "
                             f"seed_words={bool(params.seed_words)}")
    return params._replace(draw=str(params.draw),
        num_topics=check_positive_int(params.num_topics, "num_topics"),
        num_pseudo_docs=check_positive_int(params.num_pseudo_docs, "num_pseudo_docs"),
        alpha=_concentration(params.alpha, "alpha"), beta=_concentration(params.beta, "beta"),
        lam=_concentration(params.lam, "lam"),
        num_blocks=check_positive_int(params.num_blocks, "num_blocks", high=MAX_BLOCKS),
        chunk_size=check_positive_int(params.chunk_size, "chunk_size"),
        **learned_priors.check(params), seed_words=seed_words.check(params))


learns = learned_priors.learns
_priors = learned_priors.in_use


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """The learned priors the trace records ({} when the chain learns none)."""
    return learned_priors.traced(state, params)


def _total(alpha: Array | float, k: int) -> Array | float:
    """sum_k alpha_k: K alpha for a scalar alpha (a Python float stays one)."""
    return k * alpha if jnp.ndim(alpha) == 0 else jnp.sum(alpha)


def prepare(corpus: Corpus, params: Params) -> Data:
    """Lay the corpus out for sweeps: per-token arrays, per-document token lists, blocks."""
    check_params(params)              # the functional core validates too
    seed_words.check_vocabulary(params, corpus.num_words)
    n, d = corpus.num_tokens, corpus.num_docs
    lengths = corpus.doc_lengths.astype(np.int64)
    starts = corpus.doc_offsets[:-1].astype(np.int64)
    width = max(int(lengths.max()), 1)
    slot = np.arange(width)[None, :]
    doc_valid = slot < lengths[:, None]
    doc_tokens = np.where(doc_valid, starts[:, None] + slot, n).astype(np.int32)
    doc_blocks, doc_block_valid = strided_blocks(d, params.num_blocks)
    token_blocks, token_block_valid = strided_blocks(n, params.num_blocks)
    v = corpus.num_words
    if _lists_words(params):
        word_ids = np.append(corpus.word_ids, v).astype(np.int32)
        block_words = block_word_lists(np.where(token_block_valid, word_ids[token_blocks], v), v)
    else:
        block_words = np.zeros((token_blocks.shape[0], 0), np.int32)
    return Data(
        word=to_device(np.append(corpus.word_ids, 0).astype(np.int32)),
        doc=to_device(np.append(corpus.doc_index, 0).astype(np.int32)),
        doc_start=to_device(starts.astype(np.int32)), doc_len=to_device(lengths.astype(np.int32)),
        doc_tokens=to_device(doc_tokens), doc_valid=to_device(doc_valid),
        doc_blocks=to_device(doc_blocks), doc_block_valid=to_device(doc_block_valid),
        token_blocks=to_device(token_blocks), token_block_valid=to_device(token_block_valid),
        word_freq=to_device(corpus.word_counts().astype(np.int32)),
        token_block_words=to_device(block_words),
    )


def _sizes(data: Data) -> tuple[int, int, int]:
    """(N tokens, D docs, V words), static."""
    return data.word.shape[0] - 1, data.doc_start.shape[0], data.word_freq.shape[0]


def state_from_assignments(z: Array, pseudo: Array, data: Data, params: Params,
                           real_tokens: Array | None = None, real_docs: Array | None = None) -> State:
    """Build the count tables for given topics z [N] and pseudo-documents `pseudo` [D].
    `real_tokens` [N], `real_docs` [D] bool: count only these (a padded shard's layout)."""
    n, d, v = _sizes(data)
    k, p = params.num_topics, params.num_pseudo_docs
    z = jnp.asarray(z, jnp.int32)
    pseudo = jnp.asarray(pseudo, jnp.int32)
    doc = data.doc[:n]
    w = real_tokens
    alpha, beta = learned_priors.initial_traced(params, k)
    return State(
        z=jnp.append(z, 0).astype(jnp.int32), pseudo=pseudo,
        pseudo_topic=count_table((p, k), pseudo[doc], z, weights=w),
        pseudo_docs=count_table((p,), pseudo, weights=real_docs),
        doc_topic=count_table((d, k), doc, z, weights=w),
        word_topic=count_table((v, k), data.word[:n], z, weights=w),
        topic=count_table((k,), z, weights=w), alpha=alpha, beta=beta)


def init(key: Array, data: Data, params: Params) -> State:
    """Uniform random topics and pseudo-documents (a seeded chain's seed words' tokens start in
    their topic, ``seed_words.initial_topics``, as LDA's)."""
    n, d, v = _sizes(data)
    kz, kl = jax.random.split(key)
    z = jax.random.randint(kz, (n,), 0, params.num_topics)
    start = seed_words.initial_topics(params, v)
    if start is not None:
        seeded = jnp.take(start, data.word[:n], mode="clip")
        z = jnp.where(seeded >= 0, seeded, z)
    return state_from_assignments(z, jax.random.randint(kl, (d,), 0, params.num_pseudo_docs),
                                  data, params)


# --------------------------------------------------------------------------------------------
# eq. (36): pseudo-document step


def _pseudo_logits(topics: Array, valid: Array, own: Array, own_rows: Array,
                   pseudo_topic: Array, pseudo_docs: Array, params: Params,
                   alpha: Array | float | None = None) -> Array:
    """Log of (36) for C documents against fixed counts: [C, P].

    topics, valid [C, L]: topics of each document's token slots. own [C]: the pseudo-document
    whose counts hold the document (its own counts are then excluded there), or -1 when the
    counts do not hold it (fold-in). own_rows [C, K]: the document's topic counts N_m^k.
    alpha: the alpha in use (``learned_priors.in_use``; None: ``params.alpha``); a vector [K]
    (asymmetric) smooths each token by its topic's alpha_k.
    """
    k, p = params.num_topics, params.num_pseudo_docs
    items, ranks, svalid = repeat_ranks(topics, valid, k)
    alpha = params.alpha if alpha is None else alpha
    smoothing = alpha if jnp.ndim(alpha) == 0 else alpha[items]               # [] or [C, L]
    total_smoothing = _total(alpha, k)
    totals = pseudo_topic.sum(1)                                               # N_l [P]
    rows = jnp.moveaxis(pseudo_topic[:, items], 0, -1)                         # [C, L, P]
    full = token_log_predictive(rows, ranks, totals[None, :], svalid, smoothing, total_smoothing)
    # the document's own pseudo-document, with the document taken out of its counts
    mine = jnp.maximum(own, 0)
    own_tok = (jnp.take_along_axis(pseudo_topic[mine], items, 1)
               - jnp.take_along_axis(own_rows, items, 1))                      # [C, L]
    own_total = totals[mine] - own_rows.sum(1)
    excluded = token_log_predictive(own_tok[..., None], ranks, own_total[:, None], svalid,
                                    smoothing, total_smoothing)[:, 0]
    is_own = jnp.arange(p)[None, :] == own[:, None]
    likelihood = jnp.where(is_own, excluded[:, None], full)
    prior = jnp.log(pseudo_docs[None, :].astype(jnp.float32) - is_own + params.lam)
    return prior + likelihood


def _draw_pseudo(u: Array, docs: Array, valid: Array, state: State, data: Data,
                 params: Params) -> Array:
    """Pseudo-documents of documents `docs` [C] drawn at once from (36) against `state`'s counts
    (each document excluding itself). Padding documents (valid False) draw garbage."""
    tok_valid = data.doc_valid[docs] & valid[:, None]
    topics = state.z[data.doc_tokens[docs]]
    logits = _pseudo_logits(topics, tok_valid, state.pseudo[docs], state.doc_topic[docs],
                            state.pseudo_topic, state.pseudo_docs, params, _priors(state, params)[0])
    return categorical_logits(u, logits)


def _move_docs(state: State, docs: Array, old: Array, new: Array, valid: Array,
               axis_name: str | None = None) -> State:
    """Documents `docs` change pseudo-document from `old` to `new` (padding: valid False).
    `axis_name` (a sharded sweep): the pseudo-document tables take every shard's moves."""
    w = valid.astype(jnp.int32)
    amount = state.doc_topic[docs] * w[:, None]
    pseudo = state.pseudo.at[docs].set(jnp.where(valid, new, old), mode="drop")
    old, new, amount, w = exchange(axis_name, old, new, amount, w)
    return state._replace(pseudo=pseudo, pseudo_topic=move_rows(state.pseudo_topic, old, new, amount),
                          pseudo_docs=move_rows(state.pseudo_docs, old, new, w))


def _doc_chunk(data: Data, params: Params) -> int:
    """Documents per chunk in (36): the working array is [chunk, L, P]."""
    return max(1, params.chunk_size // data.doc_tokens.shape[1])


# --------------------------------------------------------------------------------------------
# (T): topic step


def _draw_topics(u: Array, pos: Array, state: State, data: Data, params: Params, v: int,
                 prior: tuple[Array, Array] | None = None) -> Array:
    """Topics of tokens `pos` [C] drawn at once from (T) against `state`'s counts. `prior`: a
    seeded chain's (beta [V, K], its column sums) (``seed_words.prior``; word ids are global in
    every layout, sharded too)."""
    group = state.pseudo[data.doc[pos]]
    word = data.word[pos]
    alpha, beta = _priors(state, params)
    total = None
    if prior is not None:
        beta, total = jnp.take(prior[0], word, axis=0, mode="clip"), prior[1]
    return collapsed_topic_draw(u, state.pseudo_topic[group], state.word_topic[word], state.topic,
                                state.z[pos], alpha, beta, v, beta_total=total)


def _lists_words(params: Params) -> bool:
    """Whether :func:`prepare` lays out each token block's distinct words: the sparse draw may
    run (``draw="sparse"``, or "auto" on XLA:CPU from ``CPU_MIN_TOPICS``). A function of the
    params and the backend only, so every shard of a sharded fit agrees."""
    if params.sampler != "parallel" or params.seed_words or params.draw == "dense":
        return False
    return params.draw == "sparse" or (jax.default_backend() == "cpu"
                                       and params.num_topics >= CPU_MIN_TOPICS)


def uses_sparse(params: Params, data: Data) -> bool:
    """Whether the parallel kernel draws topics sparsely: ``draw="sparse"``, or "auto" on XLA:CPU
    when K >= ``CPU_MIN_TOPICS`` and a token block holds >= ``CPU_TOKENS_PER_GROUP`` tokens per
    pseudo-document (the per-block lists cost P K; the dense draw K per token).

    Args:
        params: the model's Params.
        data: the prepared (or padded shard) Data.

    Returns:
        bool. Raises ParameterError when ``draw="sparse"`` meets a Data prepared without the
        token blocks' words (prepared with other params).
    """
    if not _lists_words(params):
        return False
    if data.token_block_words.shape[1] == 0:
        raise ParameterError("this Data was prepared without the token blocks' words the sparse "
                             "draw reads: prepare it with the same params (draw='sparse')")
    return params.draw == "sparse" or (
        data.token_blocks.shape[1] >= CPU_TOKENS_PER_GROUP * params.num_pseudo_docs)


def _sparse_topics(u: Array, pos: Array, block_words: Array, state: State, data: Data,
                   params: Params, v: int) -> Array:
    """Topics of a token block's tokens `pos` [C] from (T) by the sparse split (``ops.sparse_draw``)
    against `state`'s counts; u [2, C]. Tokens of a pseudo-document with more than
    ``MAX_GROUP_TOPICS`` distinct topics draw densely (u[0]), in the same chunks."""
    alpha, beta = _priors(state, params)
    table = word_group_table(block_words, state.word_topic, state.topic, alpha, beta, v)
    size = min(params.num_topics, MAX_GROUP_TOPICS)
    topics, counts, overflow = group_topic_lists(state.pseudo_topic, size)
    chunk = sparse_chunk(params.chunk_size, size, table.shape[1])

    def draw(c):
        uc, p = c[0].T, c[1]
        group, word, old = state.pseudo[data.doc[p]], data.word[p], state.z[p]
        slot = jnp.searchsorted(block_words, word).astype(jnp.int32)
        new = sparse_topic_draw(uc, topics[group], state.pseudo_topic[group, old], word, slot, old,
                                state.word_topic, state.topic, table, alpha, beta, v,
                                member_counts=counts[group])
        return dense_where(overflow[group], new,
                           lambda: _draw_topics(uc[0], p, state, data, params, v))

    return chunked_map(draw, (jnp.moveaxis(u, 1, 0), pos), chunk)


def _move_tokens(state: State, pos: Array, data: Data, old: Array, new: Array, valid: Array,
                 axis_name: str | None = None) -> State:
    """Tokens `pos` change topic from `old` to `new` (padding slots: valid False). `axis_name`
    (a sharded sweep): the global tables take every shard's moves, doc_topic only its own."""
    w = valid.astype(jnp.int32)
    doc, word = data.doc[pos], data.word[pos]
    z = state.z.at[pos].set(jnp.where(valid, new, 0))
    doc_topic = move_counts(state.doc_topic, doc, old, new, w)
    group, word, old, new, w = exchange(axis_name, state.pseudo[doc], word, old, new, w)
    return state._replace(
        z=z, pseudo_topic=move_counts(state.pseudo_topic, group, old, new, w), doc_topic=doc_topic,
        word_topic=move_counts(state.word_topic, word, old, new, w),
        topic=move_counts(state.topic, None, old, new, w))


# --------------------------------------------------------------------------------------------
# kernels


def _sequential_sweep(key: Array, state: State, data: Data, params: Params) -> tuple[State, SweepInfo]:
    n, d, v = _sizes(data)
    kl, kz = jax.random.split(key)
    ul, uz = jax.random.uniform(kl, (d,)), jax.random.uniform(kz, (n,))
    one = jnp.ones((1,), bool)
    prior = seed_words.prior(params, v)

    def token(i, carry):
        st, changed = carry
        pos = i[None]
        old = st.z[pos]
        new = _draw_topics(uz[pos], pos, st, data, params, v, prior)
        return _move_tokens(st, pos, data, old, new, one), changed + (new[0] != old[0]).astype(jnp.int32)

    def document(m, carry):
        st, changed = carry
        docs = m[None]
        old = st.pseudo[docs]
        new = _draw_pseudo(ul[docs], docs, one, st, data, params)
        st = _move_docs(st, docs, old, new, one)
        start = data.doc_start[m]
        return jax.lax.fori_loop(start, start + data.doc_len[m], token, (st, changed))

    state, changed = jax.lax.fori_loop(0, d, document, (state, jnp.int32(0)))
    return state, SweepInfo(changed)


def _parallel_sweep(key: Array, state: State, data: Data, params: Params,
                    axis_name: str | None = None) -> tuple[State, SweepInfo]:
    _, _, v = _sizes(data)
    kl, kz = jax.random.split(key)
    doc_chunk = _doc_chunk(data, params)
    prior = seed_words.prior(params, v)

    def doc_block(carry, xs):
        st, changed = carry
        docs, valid, u = xs
        old = st.pseudo[docs]
        new = chunked_map(lambda c: _draw_pseudo(*c, st, data, params), (u, docs, valid), doc_chunk)
        return (_move_docs(st, docs, old, new, valid, axis_name), changed), None

    sparse = uses_sparse(params, data)

    def token_block(carry, xs):
        st, changed = carry
        pos, valid, u, block_words = xs
        old = st.z[pos]
        if sparse:
            new = _sparse_topics(u, pos, block_words, st, data, params, v)
        else:
            new = chunked_map(lambda c: _draw_topics(*c, st, data, params, v, prior), (u, pos),
                              params.chunk_size)
        st = _move_tokens(st, pos, data, old, new, valid, axis_name)
        return (st, changed + jnp.sum(valid & (new != old), dtype=jnp.int32)), None

    carry = (state, jnp.int32(0))
    carry, _ = jax.lax.scan(doc_block, carry, (data.doc_blocks, data.doc_block_valid,
                                               jax.random.uniform(kl, data.doc_blocks.shape)))
    # the sparse draw's two levels take two uniforms per token ([B, 2, C]); the dense one's
    # uniforms are those of the chains before the sparse draw existed
    shape = data.token_blocks.shape
    u = (jax.random.uniform(kz, (shape[0], 2, shape[1])) if sparse
         else jax.random.uniform(kz, shape))
    carry, _ = jax.lax.scan(token_block, carry, (data.token_blocks, data.token_block_valid, u,
                                                 data.token_block_words))
    state, changed = carry
    return state, SweepInfo(changed)


_KERNELS = {"sequential": _sequential_sweep, "parallel": _parallel_sweep}


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler``; pure and jit/vmap-able (params static).

    `axis_name`: inside ``shard_map`` over documents (``jaxtopics.distributed``), the mapped
    axis: the parallel kernel exchanges every block's moves of the global tables (pseudo-document
    tables, word-topic, topic totals) between the shards, so that both phases are the blocked
    sweeps whose block b is the union of the shards' blocks b."""
    if axis_name is None:
        return _KERNELS[params.sampler](key, state, data, params)
    return sharded_sweep(_parallel_sweep, key, state, data, params, axis_name)


# --------------------------------------------------------------------------------------------
# sharding hooks (``jaxtopics.distributed``)


def shard_sizes(data: Data, num_shards: int) -> dict[str, int]:
    """The sizes of a shard's layout: tokens, documents, longest document, both block layouts."""
    n, d, _ = _sizes(data)
    return {"tokens": n, "docs": d, "doc_width": data.doc_tokens.shape[1],
            "doc_blocks": data.doc_blocks.shape[0], "doc_block_width": data.doc_blocks.shape[1],
            "token_blocks": data.token_blocks.shape[0],
            "token_block_width": data.token_blocks.shape[1],
            "token_block_words": data.token_block_words.shape[1]}


def pad_shard(data: Data, sizes: dict[str, int]) -> Data:
    """A shard's Data padded to ``sizes``: the dummy token moves from n to n_max; padding tokens
    and documents are in no block; padding documents are empty; padding blocks list no word."""
    n, d, v = _sizes(data)
    n_max, d_max = sizes["tokens"], sizes["docs"]
    doc_tokens = np.where(np.asarray(data.doc_tokens) >= n, n_max, np.asarray(data.doc_tokens))
    doc_blocks, doc_block_valid = pad_blocks(data.doc_blocks, data.doc_block_valid, d, d_max,
                                             sizes["doc_blocks"], sizes["doc_block_width"])
    token_blocks, token_block_valid = pad_blocks(data.token_blocks, data.token_block_valid, n, n_max,
                                                 sizes["token_blocks"], sizes["token_block_width"])
    width = (d_max, sizes["doc_width"])
    return Data(word=pad_array(data.word, (n_max + 1,), rows=n),
                doc=pad_array(data.doc, (n_max + 1,), rows=n),
                doc_start=pad_array(data.doc_start, (d_max,)), doc_len=pad_array(data.doc_len, (d_max,)),
                doc_tokens=pad_array(doc_tokens.astype(np.int32), width, n_max),
                doc_valid=pad_array(data.doc_valid, width, False),
                doc_blocks=doc_blocks, doc_block_valid=doc_block_valid,
                token_blocks=token_blocks, token_block_valid=token_block_valid,
                word_freq=np.asarray(data.word_freq),
                token_block_words=pad_array(data.token_block_words,
                                            (sizes["token_blocks"], sizes["token_block_words"]),
                                            v))


def recount_shard(state: State, data: Data, params: Params, sizes: dict) -> State:
    """A shard's tables recounted from z and the pseudo-documents; padding tokens and documents
    get 0 and are counted nowhere."""
    n, d, _ = _sizes(data)
    real_tokens = jnp.arange(n) < sizes["tokens"]
    real_docs = jnp.arange(d) < sizes["docs"]
    new = state_from_assignments(jnp.where(real_tokens, state.z[:n], 0),
                                 jnp.where(real_docs, state.pseudo, 0), data, params,
                                 real_tokens=real_tokens, real_docs=real_docs)
    return new._replace(alpha=state.alpha, beta=state.beta)


# --------------------------------------------------------------------------------------------
# learned priors


def learn(state: State, data: Data, params: Params, t: Array,
          axis_name: str | None = None) -> State:
    """The state after sweep `t` (0-based) with its priors re-fitted where the chain learns them
    (``learned_priors.refit``: when s = t + 1 > burn_in and s is a multiple of optimize_every):
    alpha from the Dirichlet-multinomial evidence of the pseudo-document-topic rows N_l.
    (``pseudo_topic``), beta from that of the topics' word counts n_k. (``word_topic``); lam is
    fixed. Called by the driver after every sweep. `axis_name` (inside ``shard_map``) is
    accepted and not needed: both tables are global, whole on every shard (a pseudo-document's
    documents may live on any shard), so every shard fits the same priors without a psum."""
    del axis_name
    return learned_priors.refit(state, params, t, state.pseudo_topic, state.word_topic,
                                alpha_axis=-1, beta_axis=0)


# --------------------------------------------------------------------------------------------
# read-outs


def invariants(state: State, data: Data | None, params: Params) -> dict[str, Array]:
    """What the driver checks after every jitted chunk (``models.base.Invariants``): the count
    tables are non-negative, pseudo_topic, doc_topic and word_topic sum over their rows to
    topic, and (when `data` is given; None: a sharded state's global view) pseudo_docs sums to
    the D documents and topic to the N tokens."""
    from ..ops.counts import count_invariants
    known = data is not None
    return count_invariants(
        {"pseudo_topic": state.pseudo_topic, "pseudo_docs": state.pseudo_docs,
         "doc_topic": state.doc_topic, "word_topic": state.word_topic, "topic": state.topic},
        {"pseudo_topic: sums over pseudo-documents to topic": (state.pseudo_topic.sum(0), state.topic),
         "doc_topic: sums over documents to topic": (state.doc_topic.sum(0), state.topic),
         "word_topic: sums over words to topic": (state.word_topic.sum(0), state.topic),
         "pseudo_docs: sums to the documents": (state.pseudo_docs.sum(),
                                                data.doc_len.shape[0] if known else None),
         "topic: sums to the tokens": (state.topic.sum(), data.word.shape[0] - 1 if known else None)})


def log_joint(state: State, data: Data, params: Params) -> Array:
    """Collapsed log p(w, z, l) = log DirMult(n_. | lam) + sum_l log DirMult(N_l. | alpha)
    + sum_k log DirMult(n_k. | beta_k.) (the priors in use; beta_k. the symmetric beta, or topic
    k's row of a seeded prior)."""
    alpha, beta = _priors(state, params)
    prior = seed_words.prior(params, state.word_topic.shape[0])
    return (dirichlet_multinomial_log_evidence(state.pseudo_docs[None, :], params.lam)
            + dirichlet_multinomial_log_evidence(state.pseudo_topic, alpha)
            + dirichlet_multinomial_log_evidence(state.word_topic,
                                                 beta if prior is None else prior[0], axis=0))


def _theta(doc_rows: Array, pseudo_rows: Array, alpha: Array | float, k: int) -> Array:
    """theta of documents with topic counts `doc_rows` in pseudo-documents with `pseudo_rows`
    (`alpha` the alpha in use: a scalar, or [K])."""
    ka = _total(alpha, k)
    pseudo = (pseudo_rows + alpha) / (pseudo_rows.sum(-1, keepdims=True) + ka)
    return (doc_rows + ka * pseudo) / (doc_rows.sum(-1, keepdims=True) + ka)


def _word_prior(state: State, params: Params, beta: Array | float) -> tuple:
    """(the topic-word prior in use as phi reads it: `beta` or a seeded [K, V] prior, its total
    per topic: V beta or [K, 1] sum_w beta_kw)."""
    v = state.word_topic.shape[0]
    prior = seed_words.prior(params, v, beta)
    if prior is None:
        return beta, v * beta
    return prior[0].T, prior[1][:, None]


def estimate(state: State, params: Params) -> dict[str, Array]:
    """Point estimates.

    pseudo_doc_topic [P, K]: theta_l = (N_l^k + alpha) / (N_l + K alpha) (Zuo et al. 2016).
    theta [D, K] (``doc_topic``): a document's own topic shares shrunk toward its
    pseudo-document's, (N_m^k + K alpha theta_lk) / (N_m + K alpha) with l = l_m: the posterior
    mean of the document's topic proportions under a Dirichlet(K alpha theta_l) centred on its
    pseudo-document (theta_l itself for an empty document, the document's own shares for a long
    one). phi [K, V]: (n_k^w + beta) / (n_k + V beta) (seeded: (n_k^w + beta_kw) /
    (n_k + sum_w beta_kw)). pseudo_labels [D]: l. alpha, beta: the priors in use (alpha a float,
    [K] when learned asymmetric: then alpha_k and K alpha = sum_k alpha_k above; beta a float,
    the [K, V] prior when seeded).
    """
    alpha, beta = _priors(state, params)
    beta, total = _word_prior(state, params, beta)
    phi = (state.word_topic.T + beta) / (state.topic[:, None] + total)
    ka = _total(alpha, params.num_topics)
    pseudo = (state.pseudo_topic + alpha) / (state.pseudo_topic.sum(1, keepdims=True) + ka)
    return {"theta": _theta(state.doc_topic, state.pseudo_topic[state.pseudo], alpha,
                            params.num_topics), "phi": phi,
            "pseudo_doc_topic": pseudo, "pseudo_labels": state.pseudo, "alpha": alpha, "beta": beta}


def held_out_prior(state: State, params: Params):
    """Left-to-right pieces (``jaxtopics.evaluation``): a new short document first joins a
    pseudo-document l, p(l) = (M_l + lam) / (D + P lam) (eq. 36's first factor), and its tokens'
    topics are then a Polya urn started at the pseudo-document's counts, a_k = N_l^k + alpha;
    log phi = log (n_k^w + beta) / (n_k + V beta) (seeded: beta_kw and sum_w beta_kw). l is
    summed out exactly. alpha and beta: the priors in use (learned, where the chain learns
    them)."""
    from ..evaluation import HeldOutPrior

    alpha, beta = _priors(state, params)
    beta, total = _word_prior(state, params, beta)
    log_phi = (jnp.log(state.word_topic.T.astype(jnp.float32) + beta)
               - jnp.log(state.topic[:, None].astype(jnp.float32) + total))
    prior = state.pseudo_topic.astype(jnp.float32) + alpha                            # [P, K]
    docs = state.pseudo_docs.astype(jnp.float32)
    log_weight = jnp.log(docs + params.lam) - jnp.log(jnp.sum(docs) + docs.shape[0] * params.lam)
    return HeldOutPrior(log_phi, prior, log_weight)


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int) -> State:
    """The shape and dtype of every State array (checked when a model file is read)."""
    k, p = params.num_topics, params.num_pseudo_docs
    return State(z=array_spec(num_tokens + 1), pseudo=array_spec(num_docs),
                 pseudo_topic=array_spec(p, k), pseudo_docs=array_spec(p),
                 doc_topic=array_spec(num_docs, k), word_topic=array_spec(num_words, k),
                 topic=array_spec(k), alpha=array_spec(k, dtype=np.float32),
                 beta=array_spec(dtype=np.float32))


def check_state(state: State, params: Params) -> str | None:
    """What is out of range in a state read from a file (host arrays), or None: topics z in
    [0, K) with the dummy slot 0, pseudo-documents in [0, P), counts non-negative (``resume``
    recounts the tables from z and the pseudo-documents); the priors finite and positive, the
    Params' where not learned (``learned_priors.state_problem``)."""
    return (learned_priors.state_problem(state, params, params.num_topics)
            or latent_problem("z", state.z, params.num_topics, dummy_slot=True)
            or latent_problem("pseudo", state.pseudo, params.num_pseudo_docs)
            or count_problem(pseudo_topic=state.pseudo_topic, pseudo_docs=state.pseudo_docs,
                             doc_topic=state.doc_topic, word_topic=state.word_topic,
                             topic=state.topic))


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with its count tables recounted from z and l (after loading a file)."""
    return state_from_assignments(state.z[:-1], state.pseudo, data, params)._replace(
        alpha=state.alpha, beta=state.beta)


def assignments(state: State) -> Array:
    """Topic of every token, aligned with ``corpus.word_ids`` ([N] int32)."""
    return state.z[:-1]


@partial(jax.jit, static_argnums=(3, 4))    # one compiled program per shape: a transform in
                                             # a loop compiles once
def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50) -> Array:
    """theta [D_new, K] for unseen documents, the fitted counts held fixed.

    Each sweep draws every new document's pseudo-document from (36) against the fitted counts
    (the new documents are independent given them, so all at once), then the new tokens' topics
    in blocks from p(z_i = k) ∝ (N_l^k + N_m^k,-i + alpha) phi_kw (the document joins its
    pseudo-document). theta as in ``estimate``, averaged over the second half of the sweeps; a
    document without tokens gets the prior mean sum_l p(l) theta_l. The fitted priors in use.
    """
    n, d, v = _sizes(new_data)
    k = params.num_topics
    alpha, _ = _priors(state, params)
    if num_sweeps < 1:
        raise ParameterError(f"fold_in: num_sweeps must be >= 1, got {num_sweeps}")
    if v > state.word_topic.shape[0]:
        raise ParameterError("fold_in: new documents use word ids outside the fitted vocabulary")
    phi_vk = estimate(state, params)["phi"].T                               # [V, K]
    k0z, k0l = jax.random.split(jax.random.fold_in(key, 0))
    z0 = jnp.append(jax.random.randint(k0z, (n,), 0, k), 0)
    l0 = jax.random.randint(k0l, (d,), 0, params.num_pseudo_docs)
    ndk = count_table((d, k), new_data.doc[:n], z0[:n])
    no_own = jnp.full((d,), -1, jnp.int32)
    doc_chunk = _doc_chunk(new_data, params)

    def one_sweep(carry, t):
        z, labels, ndk, acc = carry
        kl, kz = jax.random.split(jax.random.fold_in(key, t + 1))

        def pseudo(c):
            u, docs, own = c
            logits = _pseudo_logits(z[new_data.doc_tokens[docs]], new_data.doc_valid[docs], own,
                                    ndk[docs], state.pseudo_topic, state.pseudo_docs, params, alpha)
            return categorical_logits(u, logits)

        labels = chunked_map(pseudo, (jax.random.uniform(kl, (d,)), jnp.arange(d), no_own), doc_chunk)

        def block(inner, xs):
            z, ndk = inner
            pos, valid, b = xs
            doc, word, old = new_data.doc[pos], new_data.word[pos], z[pos]
            u = jax.random.uniform(jax.random.fold_in(kz, b), pos.shape)

            def draw(c):
                uc, dc, wc, oc = c
                own = jax.nn.one_hot(oc, k, dtype=jnp.int32)
                rows = state.pseudo_topic[labels[dc]] + ndk[dc] - own
                return categorical(uc, (rows + alpha) * phi_vk[wc])

            new = chunked_map(draw, (u, doc, word, old), params.chunk_size)
            z = z.at[pos].set(jnp.where(valid, new, 0))
            return (z, move_counts(ndk, doc, old, new, valid.astype(jnp.int32))), None

        (z, ndk), _ = jax.lax.scan(block, (z, ndk), (new_data.token_blocks, new_data.token_block_valid,
                                                      jnp.arange(new_data.token_blocks.shape[0])))
        keep = (t >= num_sweeps // 2).astype(jnp.float32)
        theta = _theta(ndk, state.pseudo_topic[labels] + ndk, alpha, k)
        return (z, labels, ndk, acc + keep * theta), None

    (_, _, _, acc), _ = jax.lax.scan(one_sweep, (z0, l0, ndk, jnp.zeros((d, k), jnp.float32)),
                                     jnp.arange(num_sweeps))
    # a document without tokens: the prior mean, exactly (not a Monte Carlo average over its
    # pseudo-document draws): sum_l p(l) theta_l with p(l) ∝ m_l + lam, eq. (36) without tokens
    prior = state.pseudo_docs.astype(jnp.float32) + params.lam
    pseudo_theta = _theta(jnp.zeros_like(state.pseudo_topic), state.pseudo_topic, alpha, k)
    prior_mean = jnp.sum((prior / prior.sum())[:, None] * pseudo_theta, axis=0)
    empty = (ndk.sum(1) == 0)[:, None]
    return jnp.where(empty, prior_mean[None, :], acc / (num_sweeps - num_sweeps // 2))
