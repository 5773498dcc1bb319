"""Sentence-LDA: LDA in which all tokens of a sentence share one topic (Jo & Oh, WSDM 2011).

Equation numbers (10)-(12) are those of the TopicModel4J paper (Qiang et al. 2020), which
restates the model. Generative process (Jo & Oh 2011): phi_k ~ Dir(beta); per document m,
theta_m ~ Dir(alpha); per sentence s of m, z_ms ~ Mult(theta_m); every token of s ~ Mult(phi_z_ms).
The topic is drawn once per *sentence*, so integrating theta_m out gives a Dirichlet-multinomial
over the sentence topics of m, and the document factor of the collapsed conditional counts
sentences, not tokens (the TopicModel4J paper's text says "word tokens", which does not follow
from its own generative process; the exact-enumeration tests check the sentence count against the
enumerated joint). Collapsed conditional of sentence s of document m (eq. 10; note: the word
factor's denominator index i runs over the tokens of the sentence, not over the sentences):

    p(z_ms = k | z_-ms, w) ∝ (c_mk^-ms + alpha)
        * prod_{w in s} (n_kw^-ms + beta)^(N_ms^w)  /  (n_k^-ms + V beta)^(N_ms)                (10)

with x^(n) = x (x+1) ... (x+n-1) the rising factorial, evaluated in log space by
``ops.block_log_predictive`` (lgamma differences: a sentence of 10,000 tokens does not
underflow); c_mk = sentences of m with topic k; n_kw, n_k = tokens. Eq. (10)'s document
denominator (c_m^-ms + K alpha) is the same for every k and is dropped. Estimates (eq. 11, 12):
theta_mk = (c_mk + alpha) / (S_m + K alpha), phi_kw = (n_kw + beta) / (n_k + V beta).

Kernels (``Params.sampler``):

- ``"sequential"``: exact collapsed Gibbs, sentence by sentence in corpus order, draws from (10).
- ``"parallel"`` (default): blocked sweep. Sentences are dealt round-robin into ``num_blocks``
  blocks (``ops.strided_blocks``), so a block rarely holds two sentences of one document; the
  blocks are visited in turn, all sentences of a block draw at once from (10) against the counts
  at the block's start (each leaving out its own sentence), and the counts are refreshed exactly
  between blocks. With one sentence per block (num_blocks >= S) it is the sequential kernel.

Both kernels end every sweep with ``Params.split_merge_steps`` (default 1) split-merge moves
(``_reallocate``): all sentences of two topics are re-dealt between them one by one and the
result is accepted by Metropolis-Hastings, an exact move, so the sequential kernel stays exact
Gibbs plus an exact move. Why: single-sentence moves cannot split two planted topics merged into
one sampler topic (issue 35): a sentence leaves the merged topic only for a topic that holds
none of its words, a factor ~ (n_k + V beta)/(V beta) per token against it, so such chains
stay ~0.05-0.1 nats/token below the planted optimum whatever the kernel, block count or start
(scripts/slda_optima.py, two planted corpora of 2,400 and 3,200 sentences, 200 sweeps: 15 of
32 chains of the two kernels merged; 256 blocks instead of 64 changed nothing, a tomotopy-style
incremental start left 10 of 32; with one move per sweep 0 of 32). The move also swaps the
labels of two topics often (the first sentence dealt goes either way), which changes no
read-out but the topic order.

Counts are int32 tables: ``doc_topic`` [D, K] (sentences), ``word_topic`` [V, K] (tokens) and
``topic`` [K] (tokens).

Learned priors (``Params.optimize_alpha`` / ``optimize_beta``, as LDA's: ``jaxtopics.learned_priors``,
:func:`learn`): integrating theta_m out leaves, per document, a Dirichlet-multinomial over its
sentence topics (the first sum of ``log_joint``), so alpha maximises the Polya evidence of the
rows c_m. of ``doc_topic`` (sentences per topic, not tokens); beta that of the topics' word
counts n_k. (tokens), as in LDA. With alpha_k per topic (asymmetric) eq. (10)'s document factor
is (c_mk^-ms + alpha_k) and its dropped denominator c_m^-ms + sum_k alpha_k.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .. import learned_priors
from ..corpus import Corpus
from ..devices import to_device
from ..errors import CorpusError, ParameterError
from ..validate import ANY_LENGTH, MAX_BLOCKS, array_spec, check_int, count_problem, latent_problem
from ..ops import (
    block_log_predictive,
    categorical_logits,
    chunked_map,
    count_table,
    dirichlet_multinomial_log_evidence,
    exchange,
    grouped_counts,
    mh_accept,
    move_counts,
    pad_array,
    pad_blocks,
    shard_sum,
    shared_key,
    sharded_sweep,
    strided_blocks,
)
from .base import Sharding

__all__ = [
    "Params", "State", "Data", "SweepInfo", "SAMPLERS",
    "check_params", "check_state", "prepare", "init", "state_from_assignments", "sweep", "log_joint",
    "estimate", "fold_in", "assignments", "rebuild", "shard_sizes", "pad_shard", "recount_shard",
    "learn", "learns", "traced_priors",
]

SAMPLERS = ("parallel", "sequential")
#: ``jaxtopics.distributed`` can shard this model's ``parallel`` kernel over devices
SHARDING = Sharding(
    # per-shard State fields and their axis (word_topic and topic are the global tables)
    fields={"z": "sentences", "doc_topic": "docs", "token_sentence": "tokens"},
    # token_sentence holds positions along the sentences
    index_fields={"token_sentence": "sentences"},
    # the priors in use: settings, equal on every shard (never summed over shards)
    replicated=("alpha", "beta"),
)
#: Params fields newer than some model files, with the value those files ran with
PARAMS_ADDED_LATER = {"split_merge_steps": 0, **learned_priors.DEFAULTS}
#: State fields newer than some model files: the priors those chains ran with (their params')
STATE_ADDED_LATER = learned_priors.state_added_later(lambda params: params.num_topics)

_FLOAT32_RANGE = (1e-30, 1e30)
#: fold_in(key, _SPLIT_MERGE_STREAM): the key of a sweep's split-merge moves (the Gibbs part of
#: the sweep keeps `key` itself)
_SPLIT_MERGE_STREAM = 0x5D1A


class Params(NamedTuple):
    """Sentence-LDA hyper-parameters and kernel settings (hashable: static under jit).

    num_topics: K. alpha: symmetric document-topic Dirichlet (over sentence topics). beta:
    symmetric topic-word Dirichlet. sampler: "parallel" | "sequential". num_blocks: sentence
    blocks per parallel sweep (the staleness of a parallel sweep is ~1/num_blocks of the corpus).
    chunk_size: (sentence, distinct word) cells per chunk wherever a [sentences, words, K]
    working array is needed. split_merge_steps: exact split-merge moves of two topics at the
    end of every sweep, both kernels (module docstring; each costs a sequential pass over the
    two topics' sentences, ~2S/K; 0 = Gibbs moves of single sentences only, as before issue 35).
    optimize_alpha: None (default: alpha stays as given), "symmetric" or "asymmetric" (alpha_k
    per topic); optimize_beta: learn the symmetric beta. As LDA's (``jaxtopics.learned_priors``):
    after sweep s (from 1) with s > burn_in and s a multiple of optimize_every, alpha maximises
    the Dirichlet-multinomial evidence of the sentence-topic rows c_m. and beta that of the
    topics' word counts (:func:`learn`); optimizer "minka" (default) or "optax". `alpha` and
    `beta` are the starting values, the learned ones are chain state (``State.alpha``/``beta``).
    """

    num_topics: int
    alpha: float = 0.1
    beta: float = 0.01
    sampler: str = "parallel"
    num_blocks: int = 64
    chunk_size: int = 8192
    split_merge_steps: int = 1
    optimize_alpha: str | None = None
    optimize_beta: bool = False
    optimize_every: int = 10
    burn_in: int = 50
    optimizer: str = "minka"


class Data(NamedTuple):
    """Device layout of a corpus with sentences. Sentence arrays have one dummy row at index S
    (document 0, no words, length 0), the target of the padding slots of the blocks.

    sent_doc: [S+1] document of each sentence. The distinct words of each sentence
    (``ops.grouped_counts``) are split by multiplicity: once_words, once_counts [S+1, M1] the words
    that occur once (count 1), rep_words, rep_counts [S+1, M2] those repeated (count >= 2), each
    padded with word 0 and count 0. (A word seen once contributes log(n_kw + beta) to eq. (10),
    one log; only repeated words need the lgamma differences, which cost ~5x more, and 98 % of
    the distinct words of a news sentence occur once.) sent_len: [S+1] tokens per sentence.
    token_sentence: [N] sentence of each token (corpus order).
    doc_sentences: [D] sentences per document. word_freq: [V] corpus frequency of each word.
    blocks: [B, C] sentence indices per parallel block (S = padding); valid: [B, C] bool.
    """

    sent_doc: Array
    once_words: Array
    once_counts: Array
    rep_words: Array
    rep_counts: Array
    sent_len: Array
    token_sentence: Array
    doc_sentences: Array
    word_freq: Array
    blocks: Array
    valid: Array


class State(NamedTuple):
    """Chain state: z [S+1] int32 topic of each sentence (slot S is a dummy, always 0); the int32
    count tables doc_topic [D, K] (sentences), word_topic [V, K] and topic [K] (tokens),
    consistent with z; token_sentence [N] int32, the sentence of every token (constant, kept in
    the state so that token assignments can be read from a saved model without its corpus); the
    priors in use: alpha [K] float32 (all equal unless learned asymmetric) and beta [] float32,
    the Params' values unless the chain learns them."""

    z: Array
    doc_topic: Array
    word_topic: Array
    topic: Array
    token_sentence: Array
    alpha: Array
    beta: Array


class SweepInfo(NamedTuple):
    """Per-sweep diagnostics: changed = number of *tokens* whose topic changed in the sweep (the
    summed lengths of the sentences whose topic at the end differs from the start, split-merge
    moves included; the driver reports it as a fraction of tokens)."""

    changed: Array


def check_params(params: Params) -> Params:
    """Validate hyper-parameters; raises ParameterError naming the bad field."""
    k = params.num_topics
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ParameterError(f"num_topics must be a positive integer, got {k!r}")
    check_int(k, "num_topics", low=1)      # int32, as every model's K (past it: OverflowError in jit)
    for name in ("alpha", "beta"):
        v = getattr(params, name)
        if (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))
                or not np.isfinite(v) or v <= 0):
            raise ParameterError(f"{name} must be a finite number > 0, got {v!r}")
        if not _FLOAT32_RANGE[0] <= v <= _FLOAT32_RANGE[1]:
            raise ParameterError(f"{name} = {v!r} is outside the float32 range the sampler "
                                 f"computes in [{_FLOAT32_RANGE[0]:g}, {_FLOAT32_RANGE[1]:g}]")
    if params.sampler not in SAMPLERS:
        raise ParameterError(f"sampler must be one of {SAMPLERS}, got {params.sampler!r}")
    check_int(params.num_blocks, "num_blocks", low=1, high=MAX_BLOCKS)
    check_int(params.chunk_size, "chunk_size", low=1)
    check_int(params.split_merge_steps, "split_merge_steps", low=0)
    return params._replace(**learned_priors.check(params))


learns = learned_priors.learns
_priors = learned_priors.in_use


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """The learned priors the trace records ({} when the chain learns none)."""
    return learned_priors.traced(state, params)


def _total(alpha: Array | float, k: int) -> Array | float:
    """sum_k alpha_k: K alpha for a scalar alpha (a Python float stays one)."""
    return k * alpha if jnp.ndim(alpha) == 0 else jnp.sum(alpha)


def prepare(corpus: Corpus, params: Params) -> Data:
    """Lay the corpus out for sentence sweeps: distinct words per sentence, blocks of sentences.

    Raises CorpusError when the corpus has no sentence boundaries."""
    check_params(params)              # the functional core validates too
    if corpus.sentence_offsets is None:
        raise CorpusError(
            "Sentence-LDA needs a corpus with sentence boundaries, and this one has none: build it "
            "with Corpus.from_texts(texts, sentences=True), Corpus.from_text_file(path, "
            "sentences=True) or Corpus.from_token_lists(docs, sentences=True) with each document "
            "a list of sentences (on the command line: a text or jsonl input)")
    offsets = np.asarray(corpus.sentence_offsets, np.int64)
    s = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    words, counts = grouped_counts(corpus.word_ids, offsets)
    once_words, once_counts = _columns_where(words, counts, counts == 1)
    rep_words, rep_counts = _columns_where(words, counts, counts >= 2)
    sent_doc = np.searchsorted(corpus.doc_offsets, offsets[:-1], side="right") - 1
    blocks, valid = strided_blocks(s, params.num_blocks)
    return Data(
        sent_doc=to_device(np.append(sent_doc, 0).astype(np.int32)),
        once_words=to_device(once_words), once_counts=to_device(once_counts),
        rep_words=to_device(rep_words), rep_counts=to_device(rep_counts),
        sent_len=to_device(np.append(lengths, 0).astype(np.int32)),
        token_sentence=to_device(np.repeat(np.arange(s, dtype=np.int32), lengths)),
        doc_sentences=to_device(np.bincount(sent_doc, minlength=corpus.num_docs).astype(np.int32)),
        word_freq=to_device(np.bincount(corpus.word_ids, minlength=corpus.num_words).astype(np.int32)),
        blocks=to_device(blocks), valid=to_device(valid),
    )


def _columns_where(words: np.ndarray, counts: np.ndarray, keep: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The (word, count) cells of each row where `keep`, packed left and padded (word 0, count 0)
    to the widest row (at least 1 column), plus one all-padding row at the end (the dummy
    sentence)."""
    width = max(int(keep.sum(1).max(initial=0)), 1)
    rows, cols = np.nonzero(keep)
    slot = np.cumsum(keep, axis=1)[rows, cols] - 1
    out_w = np.zeros((words.shape[0] + 1, width), np.int32)
    out_c = np.zeros((words.shape[0] + 1, width), np.int32)
    out_w[rows, slot] = words[rows, cols]
    out_c[rows, slot] = counts[rows, cols]
    return out_w, out_c


class _Sentences(NamedTuple):
    """Inputs of a batch of sentences: doc [C], once/rep words and counts [C, M1] / [C, M2],
    length [C] (see Data)."""

    doc: Array
    once_words: Array
    once_counts: Array
    rep_words: Array
    rep_counts: Array
    length: Array

    @property
    def words(self) -> Array:
        """All distinct words [C, M1+M2] (with ``counts``)."""
        return jnp.concatenate([self.once_words, self.rep_words], axis=-1)

    @property
    def counts(self) -> Array:
        return jnp.concatenate([self.once_counts, self.rep_counts], axis=-1)


def _sentence_inputs(data: Data, pos: Array) -> _Sentences:
    """The inputs of the sentences `pos` (any shape)."""
    return _Sentences(data.sent_doc[pos], data.once_words[pos], data.once_counts[pos],
                      data.rep_words[pos], data.rep_counts[pos], data.sent_len[pos])


def _sizes(data: Data) -> tuple[int, int, int]:
    """(S sentences, D documents, V words), static."""
    return data.sent_doc.shape[0] - 1, data.doc_sentences.shape[0], data.word_freq.shape[0]


def state_from_assignments(z: Array, data: Data, params: Params, real: Array | None = None) -> State:
    """Build the count tables for given sentence topics z [S] (corpus order). `real` [S] bool:
    count only these sentences (a padded shard's layout: padding sentences have no words)."""
    s, d, v = _sizes(data)
    k = params.num_topics
    sent = _sentence_inputs(data, jnp.arange(s))
    m = sent.words.shape[1]
    z = jnp.asarray(z, jnp.int32)
    alpha, beta = learned_priors.initial_traced(params, k)
    return State(
        z=jnp.append(z, 0).astype(jnp.int32),
        doc_topic=count_table((d, k), data.sent_doc[:s], z, weights=real),
        word_topic=count_table((v, k), sent.words.reshape(-1), jnp.repeat(z, m),
                               weights=sent.counts.reshape(-1)),
        topic=count_table((k,), z, weights=data.sent_len[:s]),
        token_sentence=jnp.array(data.token_sentence, copy=True),   # donated with the state
        alpha=alpha, beta=beta,
    )


def init(key: Array, data: Data, params: Params) -> State:
    """Initial state: a uniform random topic for every sentence."""
    s, _, _ = _sizes(data)
    return state_from_assignments(jax.random.randint(key, (s,), 0, params.num_topics), data, params)


def _log_weights(sent: _Sentences, old: Array, state: State, params: Params, v: int,
                 exclude_own: bool = True) -> Array:
    """log of eq. (10) [C, K] for a batch of C sentences against the counts of `state`, each
    sentence's own counts (at topic `old` [C]) left out when `exclude_own`.

    Words seen once in the sentence contribute log(n_kw^-s + beta) (the rising factorial of one
    factor); repeated words and the denominator go through ``ops.block_log_predictive``."""
    own = ((jnp.arange(params.num_topics)[None, :] == old[:, None]) & exclude_own).astype(jnp.int32)
    alpha, beta = _priors(state, params)

    def rows(words, counts):                        # n_kw^-s [C, M, K]
        return state.word_topic[words] - counts[:, :, None] * own[:, None, :]

    doc_rows = state.doc_topic[sent.doc] - own                                 # [C, K] sentences
    once = jnp.einsum("cm,cmk->ck", sent.once_counts.astype(jnp.float32),
                      jnp.log(rows(sent.once_words, sent.once_counts).astype(jnp.float32)
                              + beta))
    totals = state.topic[None, :] - sent.length[:, None] * own                 # [C, K] tokens
    repeated = block_log_predictive(rows(sent.rep_words, sent.rep_counts), sent.rep_counts,
                                    totals, sent.length, beta, v * beta)
    return jnp.log(doc_rows.astype(jnp.float32) + alpha) + once + repeated


def _apply_moves(state: State, pos: Array, sent: _Sentences, old: Array, new: Array,
                 valid: Array, axis_name: str | None = None) -> State:
    """Move sentences `pos` (with their words) from topics `old` to `new`; padding slots have
    valid=False and move nothing. `axis_name` (a sharded sweep): the word-topic and topic moves
    of every shard are applied (``ops.exchange``), the document-topic moves stay local."""
    weight = valid.astype(jnp.int32)
    m = sent.words.shape[-1]
    words, w_old, w_new, word_weight, length = exchange(
        axis_name, sent.words, old, new, sent.counts * weight[:, None], sent.length * weight)
    return State(
        z=state.z.at[pos].set(jnp.where(valid, new, 0)),
        doc_topic=move_counts(state.doc_topic, sent.doc, old, new, weight),
        word_topic=move_counts(state.word_topic, words.reshape(-1), jnp.repeat(w_old, m),
                               jnp.repeat(w_new, m), word_weight.reshape(-1)),
        topic=move_counts(state.topic, None, w_old, w_new, length),
        token_sentence=state.token_sentence, alpha=state.alpha, beta=state.beta,
    )


# --------------------------------------------------------------------------------------------
# kernels


def _sequential_sweep(key: Array, state: State, data: Data, params: Params) -> tuple[State, SweepInfo]:
    s, _, v = _sizes(data)
    u = jax.random.uniform(key, (s,))

    def step(i, carry):
        st, changed = carry
        pos = i[None]
        sent = _sentence_inputs(data, pos)
        old = st.z[pos]
        new = categorical_logits(u[pos], _log_weights(sent, old, st, params, v))
        st = _apply_moves(st, pos, sent, old, new, jnp.ones((1,), bool))
        return st, changed + jnp.where(new[0] != old[0], sent.length[0], 0)

    state, changed = jax.lax.fori_loop(0, s, step, (state, jnp.int32(0)))
    return state, SweepInfo(changed)


def _parallel_sweep(key: Array, state: State, data: Data, params: Params,
                    axis_name: str | None = None) -> tuple[State, SweepInfo]:
    _, _, v = _sizes(data)
    rows = _chunk_rows(data, params)
    block_u = jax.random.uniform(key, data.blocks.shape)

    def block(carry, xs):
        st, changed = carry
        pos, valid, u = xs
        sent = _sentence_inputs(data, pos)
        old = st.z[pos]
        new = chunked_map(lambda c: categorical_logits(c[0], _log_weights(c[1], c[2], st, params, v)),
                          (u, sent, old), rows)
        st = _apply_moves(st, pos, sent, old, new, valid, axis_name)
        return (st, changed + jnp.sum(jnp.where(valid & (new != old), sent.length, 0))), None

    (state, changed), _ = jax.lax.scan(block, (state, jnp.int32(0)),
                                       (data.blocks, data.valid, block_u))
    return state, SweepInfo(changed)


def _chunk_rows(data: Data, params: Params) -> int:
    """Sentences per chunk: ``chunk_size`` (sentence, distinct word) cells."""
    return max(1, params.chunk_size // (data.once_words.shape[1] + data.rep_words.shape[1]))


_KERNELS = {"sequential": _sequential_sweep, "parallel": _parallel_sweep}


# --------------------------------------------------------------------------------------------
# split-merge: exact Metropolis-Hastings reallocation of the sentences of two topics


def _reallocate(key: Array, state: State, data: Data, params: Params,
                axis_name: str | None = None) -> tuple[State, Array]:
    """One exact Metropolis-Hastings move that re-deals all sentences of two topics a, b between
    them (a sequentially-allocated split-merge move, Dahl 2003's SAMS for a fixed K).

    Pair: a = the topic of a uniformly drawn sentence, b one of the other topics with weight
    1 / (S_b + 1) (S_k: sentences of topic k; an empty topic is the likeliest partner of a
    merged one); the probability of picking {a, b} (`_log_pair_prob`) changes with S_a, S_b
    and enters the acceptance ratio as q_pair(z') / q_pair(z). Proposal: the
    sentences of a and b, in a uniformly random order, are dealt one by one to a or b from
    empty tables, each drawn from eq. (10) restricted to {a, b} given those dealt before it;
    q(z') is the product of these draws' probabilities. The order is independent of the state,
    so the reverse move's q(z) is the product along the same order with the present labels
    forced. Because eq. (10) in sequence is the chain rule of the collapsed joint (the
    document denominator c_m + K alpha is the same on both paths), p(z') / p(z) is the ratio
    of the products of the unnormalised weights, and the acceptance ratio
    p(z') q(z) / (p(z) q(z')) = prod_i W'_i / prod_i W_i (times the pair ratio) with
    W_i = w_ia + w_ib the sum of the two weights at step i of each path. Moving two merged
    topics apart into an empty one is thus one move, where single-sentence Gibbs moves would
    have to pass a sentence into a topic that holds none of its words (a factor ~ (V beta /
    (n_k + V beta))^-N_s against staying: never, in practice).

    `axis_name` (a sharded sweep): the two topics' sentences of every shard are gathered and
    every shard deals all of them alike (shared key), keeping the global tables equal; each
    shard keeps its own sentences' topics and document rows. Returns (state, accepted)."""
    s, d, v = _sizes(data)
    k = params.num_topics
    shard = 0 if axis_name is None else jax.lax.axis_index(axis_name)
    k_pair, k_b, k_order, k_draw, k_acc = jax.random.split(shared_key(key, axis_name), 5)
    z = state.z[:s]
    sizes = shard_sum(state.doc_topic.sum(0), axis_name)                  # sentences per topic
    a = jax.random.categorical(k_pair, jnp.log(sizes.astype(jnp.float32)))
    small = 1.0 / (sizes.astype(jnp.float32) + 1.0)                        # favours empty topics
    b = jax.random.categorical(k_b, jnp.where(jnp.arange(k) == a, -jnp.inf, jnp.log(small)))
    rest = jnp.sum(small) - small[a] - small[b]                  # the other topics' weights
    member = (data.sent_len[:s] > 0) & ((z == a) | (z == b))
    prio = jnp.where(member, jax.random.uniform(jax.random.fold_in(k_order, shard), (s,)), 2.0)
    cur = (z == b).astype(jnp.int32)                                       # label 0 = a, 1 = b
    doc = data.sent_doc[:s] + shard * d                                    # over all shards
    gathered = exchange(axis_name, prio, cur, doc, data.once_words[:s], data.once_counts[:s],
                        data.rep_words[:s], data.rep_counts[:s], data.sent_len[:s])
    order = jnp.argsort(gathered[0])                      # members first, in a random order
    prio, cur, doc, ow, oc, rw, rc, ln = (x[order] for x in gathered)
    count = jnp.sum(prio < 1.5)
    u = jax.random.uniform(k_draw, prio.shape)
    alpha, beta = _priors(state, params)
    if jnp.ndim(alpha):                              # asymmetric: the pair's alpha_a, alpha_b
        alpha = alpha[jnp.stack([a, b])]

    def weights(tables, i):
        wt, tt, dt = tables
        once = oc[i].astype(jnp.float32) @ jnp.log(wt[ow[i]].astype(jnp.float32) + beta)
        rep = block_log_predictive(wt[rw[i]], rc[i], tt, ln[i], beta, v * beta)
        return jnp.log(dt[doc[i]].astype(jnp.float32) + alpha) + once + rep

    def add(tables, i, label):
        wt, tt, dt = tables
        m = ow.shape[1] + rw.shape[1]
        words = jnp.concatenate([ow[i], rw[i]])
        counts = jnp.concatenate([oc[i], rc[i]])
        return (wt.at[words, jnp.full((m,), label)].add(counts), tt.at[label].add(ln[i]),
                dt.at[doc[i], label].add(1))

    def step(i, carry):
        prop, pres, labels, log_ratio = carry
        lp, lc = weights(prop, i), weights(pres, i)
        norm_p = jax.nn.logsumexp(lp)
        new = (u[i] < jnp.exp(lp[1] - norm_p)).astype(jnp.int32)
        return (add(prop, i, new), add(pres, i, cur[i]), labels.at[i].set(new),
                log_ratio + (norm_p - jax.nn.logsumexp(lc)))

    empty = (jnp.zeros((v, 2), jnp.int32), jnp.zeros((2,), jnp.int32),
             jnp.zeros((doc.shape[0] // s * d, 2), jnp.int32))
    (wt, tt, dt), _, labels, log_ratio = jax.lax.fori_loop(
        0, count, step, (empty, empty, jnp.zeros_like(cur), jnp.float32(0)))
    new_b = jnp.sum(labels)                          # sentences dealt to b (all shards')
    log_ratio += (_log_pair_prob(count - new_b, new_b, rest)
                  - _log_pair_prob(sizes[a], sizes[b], rest))
    accept = mh_accept(jax.random.uniform(k_acc), jnp.exp(log_ratio))
    mine = jax.lax.dynamic_slice_in_dim(jnp.zeros_like(labels).at[order].set(labels), shard * s, s)
    new_z = jnp.where(member & accept, jnp.where(mine == 1, b, a), z)
    pair = jnp.stack([a, b])
    rows = jax.lax.dynamic_slice_in_dim(dt, shard * d, d)
    state = State(
        z=state.z.at[:s].set(new_z),
        doc_topic=jnp.where(accept, state.doc_topic.at[:, pair].set(rows), state.doc_topic),
        word_topic=jnp.where(accept, state.word_topic.at[:, pair].set(wt), state.word_topic),
        topic=jnp.where(accept, state.topic.at[pair].set(tt), state.topic),
        token_sentence=state.token_sentence, alpha=state.alpha, beta=state.beta)
    return state, accept


def _log_pair_prob(size_a: Array, size_b: Array, rest: Array) -> Array:
    """log of S times the probability that `_reallocate` picks the pair {a, b} of topics with
    size_a and size_b sentences (the other topics' weights 1/(S_k + 1) summing to `rest`):
    a from a uniform sentence, b with weight 1/(S_b + 1) among the others, or the reverse."""
    sa, sb = size_a.astype(jnp.float32), size_b.astype(jnp.float32)
    wa, wb = 1.0 / (sa + 1.0), 1.0 / (sb + 1.0)
    return jnp.log(sa * wb / (rest + wb) + sb * wa / (rest + wa))


def _split_merge(key: Array, state: State, data: Data, params: Params,
                 axis_name: str | None = None) -> State:
    """``params.split_merge_steps`` moves of `_reallocate` (keys fold_in(key, i))."""
    return jax.lax.fori_loop(
        0, params.split_merge_steps,
        lambda i, st: _reallocate(jax.random.fold_in(key, i), st, data, params, axis_name)[0], state)


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler`` over all sentences, then
    ``params.split_merge_steps`` split-merge moves; pure and jit/vmap-able.

    `axis_name`: inside ``shard_map`` over documents (``jaxtopics.distributed``), the mapped
    axis: the parallel kernel exchanges every block's word-topic and topic moves between the
    shards (the blocked sweep whose block b is the union of the shards' blocks b)."""
    if axis_name is None:
        return _with_split_merge(_KERNELS[params.sampler], key, state, data, params)
    return sharded_sweep(partial(_with_split_merge, _parallel_sweep), key, state, data, params,
                         axis_name)


def _with_split_merge(kernel, key: Array, state: State, data: Data, params: Params,
                      axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """The Gibbs sweep `kernel` (key `key`), then ``params.split_merge_steps`` split-merge moves
    (key ``fold_in(key, _SPLIT_MERGE_STREAM)``); ``changed``: the tokens whose topic differs
    from the sweep's start."""
    start = state.z
    state, info = (kernel(key, state, data, params) if axis_name is None
                   else kernel(key, state, data, params, axis_name))
    if params.split_merge_steps == 0 or params.num_topics < 2:
        return state, info
    state = _split_merge(jax.random.fold_in(key, _SPLIT_MERGE_STREAM), state, data, params,
                         axis_name)
    return state, SweepInfo(jnp.sum(jnp.where(state.z != start, data.sent_len, 0)))


# --------------------------------------------------------------------------------------------
# sharding hooks (``jaxtopics.distributed``)


def shard_sizes(data: Data, num_shards: int) -> dict[str, int]:
    """The sizes of a shard's layout: sentences, documents, tokens, word slots, blocks."""
    s, d, _ = _sizes(data)
    b, c = data.blocks.shape
    return {"sentences": s, "docs": d, "tokens": data.token_sentence.shape[0],
            "once_width": data.once_words.shape[1], "rep_width": data.rep_words.shape[1],
            "blocks": b, "block_width": c}


def pad_shard(data: Data, sizes: dict[str, int]) -> Data:
    """A shard's Data padded to ``sizes``: padding sentences (s..s_max-1) have no words, length
    0 and are in no block; the dummy row moves to s_max; padding tokens point at it."""
    s = data.sent_doc.shape[0] - 1
    s_max = sizes["sentences"]

    def rows(a, width=None):
        return pad_array(a, (s_max + 1,) + (() if width is None else (sizes[width],)), rows=s)

    blocks, valid = pad_blocks(data.blocks, data.valid, s, s_max, sizes["blocks"], sizes["block_width"])
    return Data(sent_doc=rows(data.sent_doc), once_words=rows(data.once_words, "once_width"),
                once_counts=rows(data.once_counts, "once_width"),
                rep_words=rows(data.rep_words, "rep_width"), rep_counts=rows(data.rep_counts, "rep_width"),
                sent_len=rows(data.sent_len),
                token_sentence=pad_array(data.token_sentence, (sizes["tokens"],), s_max),
                doc_sentences=pad_array(data.doc_sentences, (sizes["docs"],)),
                word_freq=np.asarray(data.word_freq), blocks=blocks, valid=valid)


def recount_shard(state: State, data: Data, params: Params, sizes: dict) -> State:
    """A shard's tables recounted from z; padding sentences (>= sizes["sentences"]) get topic 0
    and are counted nowhere."""
    s = data.sent_doc.shape[0] - 1
    real = jnp.arange(s) < sizes["sentences"]
    new = state_from_assignments(jnp.where(real, state.z[:s], 0), data, params, real=real)
    return new._replace(alpha=state.alpha, beta=state.beta)


# --------------------------------------------------------------------------------------------
# learned priors


def learn(state: State, data: Data, params: Params, t: Array,
          axis_name: str | None = None) -> State:
    """The state after sweep `t` (0-based) with its priors re-fitted where the chain learns them
    (``learned_priors.refit``: when s = t + 1 > burn_in and s is a multiple of optimize_every):
    alpha from the Dirichlet-multinomial evidence of the sentence-topic rows c_m. (``doc_topic``:
    each sentence is one draw from theta_m, the first sum of :func:`log_joint`), beta from that
    of the topics' word counts n_k. (``word_topic``). Called by the driver after every sweep.
    `axis_name`: inside ``shard_map`` over documents, the documents' statistics are summed over
    the shards; word_topic is whole on every shard, so every shard computes the same priors."""
    return learned_priors.refit(state, params, t, state.doc_topic, state.word_topic,
                                alpha_axis=-1, beta_axis=0, axis_name=axis_name)


# --------------------------------------------------------------------------------------------
# read-outs


def invariants(state: State, data: Data | None, params: Params) -> dict[str, Array]:
    """What the driver checks after every jitted chunk (``models.base.Invariants``): the count
    tables are non-negative, word_topic sums over its rows to topic, and (when `data` is given;
    None: a sharded state's global view) doc_topic sums to the S sentences, topic to the N
    tokens."""
    from ..ops.counts import count_invariants, table_total
    known = data is not None
    return count_invariants(
        {"doc_topic": state.doc_topic, "word_topic": state.word_topic, "topic": state.topic},
        {"word_topic: sums over words to topic": (state.word_topic.sum(0), state.topic),
         "doc_topic: sums to the sentences": (table_total(state.doc_topic),
                                              data.sent_len.shape[0] - 1 if known else None),
         "topic: sums to the tokens": (state.topic.sum(),
                                       data.token_sentence.shape[0] if known else None)})


def log_joint(state: State, data: Data, params: Params) -> Array:
    """Collapsed log p(w, z) = sum_m log DirMult(c_m. | alpha) + sum_k log DirMult(n_k. | beta)
    (c_m.: the sentence topics of document m; n_k.: the tokens of topic k; the priors in use)."""
    alpha, beta = _priors(state, params)
    return (dirichlet_multinomial_log_evidence(state.doc_topic, alpha)
            + dirichlet_multinomial_log_evidence(state.word_topic, beta, axis=0))


def estimate(state: State, params: Params) -> dict[str, Array]:
    """Point estimates (eq. 11, 12) theta_mk = (c_mk + alpha_k) / (S_m + sum_k alpha_k) over
    sentence topics, phi_kw = (n_kw + beta) / (n_k + V beta), and ``sentence_topics`` [S] (int32).
    Returns {"theta": [D, K], "phi": [K, V], "sentence_topics": [S], "alpha": the alpha in use
    (a float, [K] when learned asymmetric), "beta": the beta in use}."""
    k = params.num_topics
    v = state.word_topic.shape[0]
    alpha, beta = _priors(state, params)
    nd = state.doc_topic.sum(1, keepdims=True)
    theta = (state.doc_topic + alpha) / (nd + _total(alpha, k))
    phi = (state.word_topic.T + beta) / (state.topic[:, None] + v * beta)
    return {"theta": theta, "phi": phi, "sentence_topics": state.z[:-1], "alpha": alpha,
            "beta": beta}


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int) -> State:
    """The shape and dtype of every State array (checked when a model file is read); the
    sentence count S is not recorded in the file."""
    k = params.num_topics
    return State(z=array_spec(ANY_LENGTH), doc_topic=array_spec(num_docs, k),
                 word_topic=array_spec(num_words, k), topic=array_spec(k),
                 token_sentence=array_spec(num_tokens), alpha=array_spec(k, dtype=np.float32),
                 beta=array_spec(dtype=np.float32))


def check_state(state: State, params: Params) -> str | None:
    """What is out of range in a state read from a file (host arrays), or None: sentence topics
    z in [0, K) with the dummy slot 0, counts non-negative
    (``resume`` recounts the tables from z), and the tokens' sentences rise from 0 in steps of
    0 or 1 to the last sentence, S - 1 (no sentence is empty), so that z holds S + 1 entries;
    the priors are finite and positive, the Params' where not learned
    (``learned_priors.state_problem``)."""
    problem = learned_priors.state_problem(state, params, params.num_topics)
    if problem:
        return problem
    ts = np.asarray(state.token_sentence)
    steps = np.diff(ts)
    if ts.size and (ts[0] != 0 or (steps < 0).any() or (steps > 1).any()):
        return "token_sentence must rise from 0 in steps of 0 or 1 (sentences in token order)"
    sentences = int(ts[-1]) + 1 if ts.size else 0
    if np.asarray(state.z).shape[0] != sentences + 1:
        return (f"z holds {np.asarray(state.z).shape[0]} entries for the {sentences} sentences of "
                f"token_sentence (expected {sentences + 1}: one per sentence and a dummy slot)")
    return (latent_problem("z", state.z, params.num_topics, dummy_slot=True)
            or count_problem(doc_topic=state.doc_topic, word_topic=state.word_topic,
                             topic=state.topic))


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with its count tables recounted from the sentence topics z (after loading)."""
    return state_from_assignments(state.z[:-1], data, params)._replace(alpha=state.alpha,
                                                                       beta=state.beta)


def assignments(state: State) -> Array:
    """Topic of every token (its sentence's topic), aligned with ``corpus.word_ids`` ([N] int32)."""
    return state.z[state.token_sentence]


@partial(jax.jit, static_argnums=(3, 4))    # one compiled program per shape: a transform in
                                             # a loop compiles once
def fold_in(key: Array, state: State, new_data: Data, params: Params, num_sweeps: int = 50) -> Array:
    """theta [D_new, K] for unseen documents (with sentences), topics held fixed at the fitted phi.

    Blocked Gibbs over the new sentences' topics with
    p(z_ms = k) ∝ (c_mk^-ms + alpha_k) prod_{w in s} phi_kw^(N_ms^w) (the fitted priors in use);
    theta is averaged over the second half of the sweeps (the first half is burn-in).
    """
    s, d, v = _sizes(new_data)
    k = params.num_topics
    alpha, _ = _priors(state, params)
    if num_sweeps < 1:
        raise ParameterError(f"fold_in: num_sweeps must be >= 1, got {num_sweeps}")
    if v > state.word_topic.shape[0]:
        raise ParameterError("fold_in: new documents use word ids outside the fitted vocabulary")
    log_phi = jnp.log(estimate(state, params)["phi"]).T                    # [V_fit, K]
    # log p(sentence | topic k) with phi fixed, [S+1, K], made once
    loglik = chunked_map(
        lambda c: jnp.einsum("cm,cmk->ck", c.counts.astype(jnp.float32), log_phi[c.words]),
        _sentence_inputs(new_data, jnp.arange(s + 1)), _chunk_rows(new_data, params))
    z0 = jnp.append(jax.random.randint(jax.random.fold_in(key, 0), (s,), 0, k), 0)
    ndk = count_table((d, k), new_data.sent_doc[:s], z0[:s])

    def one_sweep(carry, t):
        z, ndk, acc = carry
        u_all = jax.random.uniform(jax.random.fold_in(key, t + 1), new_data.blocks.shape)

        def block(inner, xs):
            z, ndk = inner
            pos, valid, u = xs
            doc, old = new_data.sent_doc[pos], z[pos]
            own = (jnp.arange(k)[None, :] == old[:, None]).astype(jnp.int32)
            logits = jnp.log((ndk[doc] - own).astype(jnp.float32) + alpha) + loglik[pos]
            new = categorical_logits(u, logits)
            z = z.at[pos].set(jnp.where(valid, new, 0))
            return (z, move_counts(ndk, doc, old, new, valid.astype(jnp.int32))), None

        (z, ndk), _ = jax.lax.scan(block, (z, ndk), (new_data.blocks, new_data.valid, u_all))
        keep = (t >= num_sweeps // 2).astype(jnp.float32)
        theta = (ndk + alpha) / (ndk.sum(1, keepdims=True) + _total(alpha, k))
        return (z, ndk, acc + keep * theta), None

    (_, _, acc), _ = jax.lax.scan(one_sweep, (z0, ndk, jnp.zeros((d, k), jnp.float32)),
                                  jnp.arange(num_sweeps))
    return acc / (num_sweeps - num_sweeps // 2)


#: held-out likelihood (``jaxtopics.evaluation``): left-to-right over sentences, each sentence's
#: tokens sharing one topic, log p(sentence | k) = sum_i log phi_k,w_i
HELD_OUT_UNITS = "sentences"
