"""DP-MRM: Dirichlet process with mixed random measures (Kim, Kim & Oh, ICML 2012).

A topic model for multi-label documents. Every label k has its own random measure over topics,
G_k ~ DP(gamma, Dir(beta)); document j with label set label(j) (r_jk = 1 for its labels) mixes the
measures of its labels, psi_j ~ Dir(eta r_j), G_j ~ DP(alpha, sum_k psi_jk G_k); every token
draws a topic from G_j and its word from that topic. In the Chinese-restaurant-franchise form
token i of document j sits at a table t_ji; table t carries a label k_jt in label(j) and a dish
l_jt, one of label k's topics. Collapsing G_k, psi_j, G_j and the topics gives the
Gibbs conditionals, with n_jt tokens at table t of document j, m_jk tables of j with label k
(m_j = sum_k m_jk), m_kl tables of label k eating topic l (m_k = sum_l m_kl), f_kl(x) the Polya
predictive of words x under topic (k, l) (1/V per token for a new topic):

    table of token i:   p(t_ji = t) ∝ n_jt^-ji f_{k_jt l_jt}(x_ji)                        (existing)
                        p(t_ji = new, k, l) ∝ alpha (m_jk + eta) / (m_j + |label(j)| eta)
                            * {m_kl / (m_k + gamma), gamma / (m_k + gamma) for l = new} f_kl(x_ji)
    label and topic of a table (the paper's eq. 9-10, corrected here: the likelihood is of the
    block of the table's tokens x_jt, not x_ji, and with the r_jk mask the paper's eq. 9-10 omit):
                        p(k_jt = k, l_jt = l) ∝ r_jk (m_jk^-jt + eta)
                            * {m_kl^-jt, gamma for l = new} / (m_k^-jt + gamma) f_kl^-jt(x_jt)

p(k_jt = k) is zero when label k is not on document j (r_jk = 0): a correction made here, since
a table of document j can only carry one of j's labels, which eq. 9-10 as printed do not enforce.
The multi-token f_kl(x_jt) is a ratio of rising factorials evaluated in log space, one log
per token (``_table_step``): a table of 10,000 tokens does not underflow. Topics are global
slots, each owned by one label (``topic_label``); the pair (k, l) of the paper is a slot whose owner is k.

The collapsed log joint (``log_joint``) is the product of a CRP(alpha) over the tables of every
document, a Polya(eta) urn over the labels of every document's tables (restricted to label(j)),
a CRP(gamma) over the topics of every label's tables and a Polya(beta) over each topic's words.

Concentrations (``Params.resample_concentrations``; Gamma(a, b) priors, a = ``prior_shape``,
b = ``prior_rate``): in that joint alpha enters only through the documents' CRPs and gamma only
through the labels' CRPs, so (Antoniak 1974), with n_j tokens and m_j tables of document j
(m = sum_j m_j), m_k tables of label k and K_k topics it owns (K = sum_k K_k),

    p(alpha | ...) ∝ Gamma(alpha; a, b) alpha^m prod_j Gamma(alpha) / Gamma(alpha + n_j)
    p(gamma | ...) ∝ Gamma(gamma; a, b) gamma^K prod_k Gamma(gamma) / Gamma(gamma + m_k),

each the conditional of a concentration shared by independent CRPs, drawn after every sweep
with the auxiliary variables of Teh et al. (2006, appendix A; ``ops.concentration_groups``):

    (A) groups = documents: w_j ~ Beta(alpha + 1, n_j), s_j ~ Bernoulli(n_j / (n_j + alpha))
        (n_j > 0), alpha ~ Gamma(a + m - sum_j s_j, b - sum_j log w_j)
    (G) groups = labels (a label's customers are its tables, its tables its topics):
        v_k ~ Beta(gamma + 1, m_k), u_k ~ Bernoulli(m_k / (m_k + gamma)) (m_k > 0),
        gamma ~ Gamma(a + K - sum_k u_k, b - sum_k log v_k).

alpha and gamma are then chain state (``State.alpha``, ``State.gamma``; the Params' values are
their starts) and the read-outs use the current ones; without resampling the kernels read the
Params' values, and the chain is bitwise the one before the option existed.

Kernels (``Params.sampler``); both visit documents, and within a document its tokens (table
step) then its tables (label-and-topic step):

- ``"sequential"``: exact collapsed Gibbs, document by document in corpus order. A document's
  steps run on a *view* of the global counts (its own words' rows of the word-topic table, the
  topic and label totals, over the topics its labels own: every other topic has weight zero;
  ``dpmrm_views``) that is exact throughout; topics it opens live in private slots of the
  view and get global slots when the document is written back (slot identity is irrelevant to
  the partition, so this is exact).
- ``"parallel"`` (default): documents are dealt round-robin into ``num_blocks`` blocks
  (``ops.strided_blocks``); the documents of a block run their document steps at once (vmap),
  each on a view of the counts at the block's start plus its own moves, and the counts are
  refreshed exactly between blocks (the moves of a block are summed; each document only removes
  its own tokens and tables, so counts stay exact and non-negative). What it approximates: a
  document does not see the other documents of its block move within the block (as LDA's
  blocked sweep), and topics opened in a block are private to the document that opened them
  until the block ends, when a sequential pass gives each one a free global slot (two documents
  of a block cannot open one shared new topic). With one document per block
  (``num_blocks >= D``) it is the sequential kernel, bit for bit.

Sharded (``jaxtopics.distributed``: ``sweep(..., axis_name=)``, the ``parallel`` kernel only):
every device holds a contiguous range of documents with their latents and per-document tables
(``SHARDING.fields``: token tables, table sizes, table topics, m_jk, label ids) and a copy of the
global tables (word-topic n_klw, topic totals n_kl, m_kl, m_k, slot owners). The devices visit
their blocks in step; each runs its documents of block b as above, then the block's moves are
exchanged (``ops.exchange``: the documents' count changes of every topic slot, private topics
included, in one packed all-gather of int32) and every device runs the same write-back over all
of them in shard order, then position (``_write_back``): the summed changes of the global slots,
then the private topics given free global slots in that order. So the copies of the global
tables stay bitwise equal, a slot is opened once, and a sweep on P devices is the one-device
blocked sweep whose block b is the union of the devices' blocks b (same staleness, same
quality); each device writes back only its own documents. A sweep that needs a slot it does not
have, on any device, reports ``overflow`` on every device (the driver grows and redoes it).
One device is the one-device kernel, bit for bit.

Capacities are static shapes with active masks: topic slots (``word_topic`` columns, active
where ``topic_tables > 0``) and table slots per document (active where ``table_size > 0``). A
sweep that needs a slot it does not have reports ``SweepInfo.overflow``; the driver discards it,
calls ``grow`` (double and re-pad, outside jit) and redoes it with the same key: never a silent cap.

Read-outs (``estimate``) are over the active topics, ordered by label then slot. The document-
topic estimate is the paper's perplexity theta corrected here: the paper's (section 4.3)
theta_jkl = (n_jkl + alpha m_kl / (m_k + gamma)) / (n_jk + alpha) is normalised within one label
and so overstates a multi-label document's probabilities; evaluating the posterior of G_j gives

    theta_jkl = (n_jkl + alpha (m_jk + eta) / (m_j + |label(j)| eta) * m_kl / (m_k + gamma))
                / (n_j + alpha),                                                 r_jk = 1,

and the new-topic mass of label k, theta_jk,new = alpha (m_jk + eta) / (m_j + |label(j)| eta)
* gamma / (m_k + gamma) / (n_j + alpha), with psi_new = 1/V for held-out likelihoods (the sum
over l includes a new topic). (The new-topic term that matches the paper's per-label theta would
be alpha gamma / ((n_jk + alpha)(m_k + gamma)); with the corrected theta the term carries the same
label weight and 1/(n_j + alpha), so that theta over all (k, l) and the new topics sums to 1.)
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
from ..devices import to_device
from ..errors import ParameterError
from ..validate import (ANY_LENGTH, MAX_BLOCKS, array_spec, check_int, count_problem, latent_problem,
                        same_length)
from ..ops import (
    categorical,
    categorical_logits,
    concentration_groups,
    count_table,
    dirichlet_multinomial_log_evidence,
    log_rising_factorial,
    shard_sum,
    shared_key,
    strided_blocks,
)
from .base import Sharding
#: which corpora DP-MRM accepts (label sets, every label used): one concept, its own module
from .dpmrm_corpus import check_label_sets, check_training_corpus

__all__ = [
    "Params", "State", "Data", "SweepInfo", "SAMPLERS",
    "check_params", "check_state", "check_label_sets", "check_training_corpus", "prepare", "init",
    "state_from_assignments",
    "sweep", "grow", "log_joint", "estimate", "fold_in", "held_out_log_likelihood",
    "held_out_doc_log_likelihood",
    "assignments", "rebuild", "check_shard_params", "shard_sizes", "pad_shard", "recount_shard",
    "resample_concentrations", "traced_priors",
]

SAMPLERS = ("parallel", "sequential")
#: ``jaxtopics.distributed`` can shard this model's ``parallel`` kernel over devices
SHARDING = Sharding(
    # per-shard State fields and the axis of a shard's layout they run along; topic_label,
    # topic_tables, label_tables, word_topic and topic are the global tables
    fields={"table": "tokens", "token_doc": "tokens", "dish": "docs", "table_size": "docs",
            "doc_label_tables": "docs", "doc_labels": "docs"},
    # token_doc holds positions along the documents
    index_fields={"token_doc": "docs"},
    # the owner label of a slot is no count: a shard's part is the label where its tables use
    # the slot, 0 elsewhere, and the shards' parts combine by their largest value (not their sum)
    max_fields=("topic_label",),
    # the concentrations (sampled with ``resample_concentrations``): equal on every shard
    replicated=("alpha", "gamma"),
)
#: ``log_joint`` reads the state only (``data`` may be None)
LOG_JOINT_USES_DATA = False
#: parameters added after model files were written, with the values those chains ran with
PARAMS_ADDED_LATER = dict(sampled_concentrations.PARAMS_ADDED_LATER)
#: State fields added after model files were written: the Params' values they ran with
STATE_ADDED_LATER = sampled_concentrations.state_added_later(("alpha", "gamma"))

_FLOAT32_RANGE = (1e-30, 1e30)


class Params(NamedTuple):
    """DP-MRM hyper-parameters and kernel settings (hashable: static under jit).

    alpha: concentration of every document's DP (over tables). beta: symmetric topic-word
    Dirichlet. gamma: concentration of every label's DP over topics (gamma_k = gamma).
    eta: symmetric Dirichlet over the labels of a document (label mixing weights psi_j).
    sampler: "parallel" | "sequential". num_blocks: document blocks per parallel sweep.
    topic_capacity, table_capacity: topic slots and table slots per document of the initial
    state (0 = automatic); grown by doubling when a sweep needs more (never a cap).
    initial_topics: topics per label in the initial state (see ``init``). Like every Gibbs
    sampler of a DP mixture, the chain removes surplus topics (their tables drift to the big
    topics) far more readily than it splits a topic that mixes two, so start at or above the
    number of topics a label is expected to need.
    chunk_size: tokens per chunk when held-out likelihoods are evaluated.
    resample_concentrations: draw alpha and gamma after every sweep ((A), (G) of the module
    docstring; Gamma(prior_shape, prior_rate) priors); alpha and gamma are then the starts.
    """

    alpha: float = 1.0
    beta: float = 0.05
    gamma: float = 1.0
    eta: float = 1.0
    sampler: str = "parallel"
    num_blocks: int = 64
    topic_capacity: int = 0
    table_capacity: int = 0
    initial_topics: int = 4
    chunk_size: int = 8192
    resample_concentrations: bool = False
    prior_shape: float = 1.0
    prior_rate: float = 1.0


class Data(NamedTuple):
    """Device layout of a multi-label corpus. Document arrays have one dummy row at index D (no
    tokens, label 0), the target of the padding slots of the blocks.

    word, doc, slot: [N] word, document and distinct-word slot (index into the document's
    ``doc_words`` row) of every token. doc_start, doc_len: [D+1] token slice of each document.
    doc_words: [D+1, M] distinct words of each document (padded with word 0).
    doc_labels: [D+1, R] label ids of each document (padded with 0), label_mask: [D+1, R].
    label_docs: [L] documents per label. word_freq: [V] corpus frequency of each word.
    token_offsets: [Lmax] = arange(longest document). blocks: [B, C] document indices per
    parallel block (D = padding); valid: [B, C] bool.
    """

    word: Array
    doc: Array
    slot: Array
    doc_start: Array
    doc_len: Array
    doc_words: Array
    doc_labels: Array
    label_mask: Array
    label_docs: Array
    word_freq: Array
    token_offsets: Array
    blocks: Array
    valid: Array


class State(NamedTuple):
    """Chain state (int32). Latents: table [N] (table slot of each token in its document), dish
    [D+1, T] (topic slot of each table; 0 where the table is empty), topic_label [C] (label owning
    each topic slot; 0 where the slot is free). Counts consistent with them: table_size [D+1, T]
    (n_jt), doc_label_tables [D+1, R] (m_jk over the document's label slots), topic_tables [C]
    (m_kl), label_tables [L] (m_k), word_topic [V, C] (n_klw), topic [C] (n_kl). Constants kept so
    that read-outs need no corpus: token_doc [N], doc_labels [D+1, R] (-1 on padding).
    T and C (the capacities) are the shapes, grown by ``grow``. alpha, gamma: float32 scalars,
    the concentrations in use (the Params' values unless sampled)."""

    table: Array
    dish: Array
    topic_label: Array
    table_size: Array
    doc_label_tables: Array
    topic_tables: Array
    label_tables: Array
    word_topic: Array
    topic: Array
    token_doc: Array
    doc_labels: Array
    alpha: Array
    gamma: Array


class SweepInfo(NamedTuple):
    """Per-sweep diagnostics: changed = tokens whose topic changed (int32); overflow = the sweep
    needed a topic or table slot the state does not have (the driver grows and redoes it);
    num_topics = active topics after the sweep."""

    changed: Array
    overflow: Array
    num_topics: Array


def check_params(params: Params) -> Params:
    """Validate hyper-parameters; raises ParameterError naming the bad field."""
    for name in ("alpha", "beta", "gamma", "eta"):
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
    if (isinstance(params.initial_topics, (int, np.integer)) and not isinstance(params.initial_topics, bool)
            and params.initial_topics > 2**20):
        raise ParameterError(f"initial_topics must be an integer <= {2**20}, "
                             f"got {params.initial_topics}")
    for name, low in (("topic_capacity", 0), ("table_capacity", 0),
                      ("initial_topics", 1), ("chunk_size", 1)):
        v = getattr(params, name)
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < low:
            raise ParameterError(f"{name} must be an integer >= {low}, got {v!r}")
        if v >= 2**30:
            raise ParameterError(f"{name} = {v} is too large (< 2^30)")
    sampled_concentrations.check(params)
    return params


def _check_capacity(num_labels: int, num_tokens: int, params: Params) -> None:
    """The topic slots of the initial state (labels x initial_topics, doubled for room unless
    topic_capacity is set) must be int32 indices, and (beyond the default 4 per label) no more
    than the tokens that can fill them: a topic holds at least one token, so more initial
    topics only cost memory and time (slots grow on demand anyway). ParameterError otherwise."""
    per_label = params.initial_topics
    slots = max(params.topic_capacity or 2 * num_labels * per_label, num_labels * per_label)
    if slots > 2**30:
        raise ParameterError(
            f"DP-MRM's initial state needs {slots} topic slots ({num_labels} labels x "
            f"initial_topics={per_label}{'' if params.topic_capacity else ', doubled for room'}), "
            f"more than the int32 counts can index (2^30): lower initial_topics")
    if num_labels * per_label > max(num_tokens, 4 * num_labels):
        most = max(4, num_tokens // max(num_labels, 1))
        raise ParameterError(
            f"initial_topics={per_label} gives {num_labels * per_label} initial topics "
            f"({num_labels} labels x {per_label}) for a corpus of {num_tokens} tokens, which can "
            f"fill at most {num_tokens} of them: lower initial_topics (at most {most} here; "
            f"topics are added as the chain needs them)")


def prepare(corpus: Corpus, params: Params) -> Data:
    """Lay the corpus out for document sweeps: token slots, distinct words and label sets of
    every document, document blocks. Raises CorpusError when the corpus has no label sets."""
    check_label_sets(corpus)
    _check_capacity(len(corpus.label_names), corpus.num_tokens, params)
    n, d, v = corpus.num_tokens, corpus.num_docs, corpus.num_words
    doc = corpus.doc_index.astype(np.int64)
    words = corpus.word_ids.astype(np.int64)
    keys, inverse = np.unique(doc * v + words, return_inverse=True)
    key_doc = keys // v
    per_doc = np.bincount(key_doc, minlength=d)
    first = np.concatenate([[0], np.cumsum(per_doc)[:-1]])
    slot = inverse.reshape(-1) - first[doc]
    m = max(int(per_doc.max()), 1)
    doc_words = np.zeros((d + 1, m), np.int32)
    doc_words[key_doc, np.arange(keys.shape[0]) - first[key_doc]] = keys % v
    counts = np.diff(corpus.label_offsets)
    r = int(counts.max())
    doc_labels = np.zeros((d + 1, r), np.int32)
    label_mask = np.zeros((d + 1, r), bool)
    rows = np.repeat(np.arange(d), counts)
    cols = np.arange(corpus.label_ids.shape[0]) - np.repeat(corpus.label_offsets[:-1], counts)
    doc_labels[rows, cols] = corpus.label_ids
    label_mask[rows, cols] = True
    label_mask[d, 0] = True                              # the dummy document: label 0, no tokens
    lengths = corpus.doc_lengths
    blocks, valid = strided_blocks(d, params.num_blocks)
    i32 = lambda x: to_device(np.asarray(x).astype(np.int32))
    return Data(
        word=i32(words), doc=i32(doc), slot=i32(slot),
        doc_start=i32(np.append(corpus.doc_offsets[:-1], n)), doc_len=i32(np.append(lengths, 0)),
        doc_words=to_device(doc_words), doc_labels=to_device(doc_labels),
        label_mask=to_device(label_mask),
        label_docs=i32(np.bincount(corpus.label_ids, minlength=len(corpus.label_names))),
        word_freq=i32(np.bincount(corpus.word_ids, minlength=v)),
        token_offsets=i32(np.arange(max(int(lengths.max()), 1))),
        blocks=to_device(blocks), valid=to_device(valid),
    )


def _sizes(data: Data) -> tuple[int, int, int, int, int]:
    """(N tokens, D docs, V words, L labels, R label slots per document), static."""
    return (data.word.shape[0], data.doc_start.shape[0] - 1, data.word_freq.shape[0],
            data.label_docs.shape[0], data.doc_labels.shape[1])


def _table_cap(data: Data) -> int:
    """Table slots a document can ever need: its tokens (at least its label slots for init).
    Static; also of the shards' layouts stacked (``distributed.ShardedData.data``)."""
    return max(data.token_offsets.shape[-1], data.doc_labels.shape[-1])


def _doc_label_ids(data: Data) -> Array:
    """[D+1, R] label id of each label slot of each document, -1 on padding and on the dummy
    row (the State's ``doc_labels``)."""
    d = data.doc_start.shape[0] - 1
    return jnp.where(data.label_mask, data.doc_labels, -1).at[d].set(-1)


@jax.jit
def state_from_assignments(table: Array, dish: Array, topic_label: Array, data: Data,
                           real: Array | None = None, alpha: Array | float = float("nan"),
                           gamma: Array | float = float("nan")) -> State:
    """Build a consistent state from the latents: the table of every token [N], the topic slot of
    every table [D+1, T] and the label of every topic slot [C] (values on empty tables / free
    slots are ignored and set to 0). Capacities are the shapes of `dish` and `topic_label`.
    `real` [N] bool (default all): the tokens to count (a shard's padding tokens are not).
    `alpha`, `gamma`: the State's concentrations (NaN unless given: a chain that does not sample
    them reads the Params', ``_in_use``)."""
    n, d, v, num_labels, _ = _sizes(data)
    t_cap, c_cap = dish.shape[1], topic_label.shape[0]
    table = jnp.asarray(table, jnp.int32)
    size = count_table((d + 1, t_cap), data.doc, table, weights=real)
    active = size > 0
    dish = jnp.where(active, jnp.asarray(dish, jnp.int32), 0)
    topic_tables = count_table((c_cap,), dish.reshape(-1), weights=active.reshape(-1))
    topic_label = jnp.where(topic_tables > 0, jnp.asarray(topic_label, jnp.int32), 0)
    table_label = topic_label[dish]                                                    # [D+1, T]
    match = ((table_label[:, :, None] == data.doc_labels[:, None, :]) & data.label_mask[:, None, :]
             & active[:, :, None])
    tok_topic = dish[data.doc, table]
    return State(
        table=table, dish=dish, topic_label=topic_label, table_size=size,
        doc_label_tables=jnp.sum(match, axis=1, dtype=jnp.int32),
        topic_tables=topic_tables,
        label_tables=count_table((num_labels,), topic_label, weights=topic_tables),
        word_topic=count_table((v, c_cap), data.word, tok_topic, weights=real),
        topic=count_table((c_cap,), tok_topic, weights=real),
        token_doc=data.doc,
        doc_labels=_doc_label_ids(data),
        alpha=jnp.asarray(alpha, jnp.float32), gamma=jnp.asarray(gamma, jnp.float32),
    )


def _in_use(state: State, params: Params) -> tuple:
    """(alpha, gamma) the kernels and read-outs use: the State's when sampled, else the Params'
    Python floats (a static branch: the chain without sampling is the one before it existed)."""
    return tuple(sampled_concentrations.in_use(state, params, n) for n in ("alpha", "gamma"))


def _params_in_use(state: State, params: Params) -> Params:
    """Host side: `params` with the concentrations in use as Python floats (read-outs)."""
    alpha, gamma = _in_use(state, params)
    return params._replace(alpha=float(alpha), gamma=float(gamma))


#: table slots per document to start with (automatic table_capacity), at most the longest
#: document's tokens. With 8, Tweet's first sweep overflowed them and the sweep was compiled
#: again for 16 (~5 s on a 2-core CPU); unused slots cost little, as the table loop stops at a
#: block's last used slot (sweeps with 16 and 20 slots on Tweet: no difference measurable)
_INITIAL_TABLES = 32


@partial(jax.jit, static_argnums=(2,))     # one compilation, not one per eager op
def init(key: Array, data: Data, params: Params) -> State:
    """Initial state, LDA-like: every label owns ``initial_topics`` topics (slots label * I + i);
    every token draws one of its document's labels and one of that label's topics uniformly, and
    the tokens of a document that drew the same topic share one table. Tokens then move between
    their document's tables (one per topic it uses) as LDA tokens move between topics, while the
    table and topic steps open, merge and close tables and topics."""
    n, d, _, num_labels, r = _sizes(data)
    per_label = params.initial_topics
    c_cap = max(params.topic_capacity or 2 * num_labels * per_label, num_labels * per_label)
    # a document uses at most min(its tokens, its labels x initial_topics) tables
    t_cap = min(max(params.table_capacity or _INITIAL_TABLES, r * per_label), _table_cap(data))
    k_label, k_topic = jax.random.split(key)
    per_doc = jnp.sum(data.label_mask, axis=1)[data.doc]
    slot = jnp.minimum((jax.random.uniform(k_label, (n,)) * per_doc).astype(jnp.int32), per_doc - 1)
    topic = (data.doc_labels[data.doc, slot] * per_label
             + jnp.minimum((jax.random.uniform(k_topic, (n,)) * per_label).astype(jnp.int32),
                           per_label - 1))
    # table of each token: rank of its topic among the topics its document uses
    order = jnp.lexsort((topic, data.doc))
    s_doc, s_topic = data.doc[order], topic[order]
    new = jnp.concatenate([jnp.ones((1,), bool),
                           (s_doc[1:] != s_doc[:-1]) | (s_topic[1:] != s_topic[:-1])])
    group = jnp.cumsum(new.astype(jnp.int32)) - 1
    first = jax.ops.segment_min(group, s_doc, num_segments=d + 1)
    table = jnp.zeros((n,), jnp.int32).at[order].set(group - first[s_doc])
    dish = jnp.zeros((d + 1, t_cap), jnp.int32).at[data.doc, table].set(topic)
    return state_from_assignments(table, dish, jnp.arange(c_cap, dtype=jnp.int32) // per_label, data,
                                  alpha=params.alpha, gamma=params.gamma)


def grow(state: State, data: Data, params: Params) -> State:
    """Double the topic capacity, the table capacity, or both, and re-pad (host side).

    The sweep that overflowed is discarded, so which capacity ran out is not known here: each
    capacity at least half in use is doubled, and both when neither is (a redo that overflows
    again grows again, so the chain always gets the room it needs). Tables never exceed the
    longest document's tokens, so the table capacity stops there. `data`: the layout of
    ``prepare``, or a sharded one (``distributed.ShardedData``, the state then its global view)."""
    data = getattr(data, "data", data)            # the shards' layouts stacked: same maxima
    t_cap, c_cap = state.dish.shape[1], state.topic.shape[0]
    tables_used = int(jnp.max(jnp.sum(state.table_size > 0, axis=1)))
    topics_used = int(jnp.sum(state.topic_tables > 0))
    width = label_width(c_cap, state.label_tables.shape[0])
    can_t = t_cap < _table_cap(data)
    grow_t = can_t and 2 * tables_used >= t_cap
    # a label near its view's width (dpmrm_views.label_width grows with C)
    grow_c = 2 * topics_used >= c_cap or 2 * int(label_topics(state, width)[1]) > width
    if not (grow_t or grow_c):
        grow_t, grow_c = can_t, True
    new_t = min(2 * t_cap, _table_cap(data)) if grow_t else t_cap
    new_c = 2 * c_cap if grow_c else c_cap

    def pad(x, size):
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, size - x.shape[-1])])

    return state._replace(
        dish=pad(state.dish, new_t), table_size=pad(state.table_size, new_t),
        topic_label=pad(state.topic_label, new_c), topic_tables=pad(state.topic_tables, new_c),
        word_topic=pad(state.word_topic, new_c), topic=pad(state.topic, new_c))


# --------------------------------------------------------------------------------------------
# the document step: tokens, then tables, of one document on a view of the global counts


class _Doc(NamedTuple):
    """Per-document inputs (batched over a block's documents: leading axis B).
    pos [Lmax]: token positions (N on padding); inside [Lmax]; slot [Lmax]: distinct-word slot
    of each token; length []; words [M]; labels [R] (0 on padding); mask [R]."""

    pos: Array
    inside: Array
    slot: Array
    length: Array
    words: Array
    labels: Array
    mask: Array


class _Local(NamedTuple):
    """A document's own latents and counts: tab [Lmax] table of each token, size [T] n_jt,
    dish [T] topic of each table (a view column), mjr [R] tables per label slot (m_jk)."""

    tab: Array
    size: Array
    dish: Array
    mjr: Array


class _View(NamedTuple):
    """The global counts a document's steps read, kept exact under its own moves: wt [M, C+P]
    (word-topic rows of the document's distinct words), nt, mt, tl [C+P] (tokens, tables and
    owner label of every topic), ml [L] (tables per label). Columns C.. are P private slots for
    the topics the document opens (given global slots when it is written back)."""

    wt: Array
    nt: Array
    mt: Array
    tl: Array
    ml: Array


def _doc_inputs(data: Data, idx: Array) -> _Doc:
    n = data.word.shape[0]
    pos = data.doc_start[idx][:, None] + data.token_offsets[None, :]
    inside = data.token_offsets[None, :] < data.doc_len[idx][:, None]
    pos = jnp.where(inside, pos, n)
    slot = jnp.where(inside, data.slot[jnp.minimum(pos, n - 1)], 0)
    return _Doc(pos, inside, slot, data.doc_len[idx], data.doc_words[idx], data.doc_labels[idx],
                data.label_mask[idx])


def _label_slot(doc: _Doc, label: Array) -> Array:
    """[R] int32 one-hot of `label`'s slot in the document's label set (zeros if absent)."""
    return ((doc.labels == label) & doc.mask).astype(jnp.int32)


def _label_weight(doc: _Doc, tl: Array, per_slot: Array, fill) -> Array:
    """[C+P]: per_slot[r] for the topics owned by the document's label r, `fill` elsewhere."""
    match = (doc.labels[:, None] == tl[None, :]) & doc.mask[:, None]
    return jnp.max(jnp.where(match, per_slot[:, None], fill), axis=0)


def _token_step(doc: _Doc, loc: _Local, view: _View, u: Array, i: Array, params: Params,
                v: int, c_glob: int, conc: tuple) -> tuple[_Local, _View, Array]:
    """Gibbs step of token i's table (and, for a new table, its label and topic) in one draw
    over [existing tables | new table on topic c | new table on a new topic of label r];
    `conc` = (alpha, gamma) in use (``_in_use``)."""
    (a, g), b, e = conc, params.beta, params.eta
    t_cap, cv = loc.size.shape[0], view.nt.shape[0]
    valid = (i < doc.length).astype(jnp.int32)
    s, t0 = doc.slot[i], loc.tab[i]
    c0 = loc.dish[t0]
    # remove the token (and its table if that empties it)
    size = loc.size.at[t0].add(-valid)
    gone = valid * (size[t0] == 0).astype(jnp.int32)
    wt = view.wt.at[s, c0].add(-valid)
    nt = view.nt.at[c0].add(-valid)
    mt = view.mt.at[c0].add(-gone)
    ml = view.ml.at[view.tl[c0]].add(-gone)
    mjr = loc.mjr - gone * _label_slot(doc, view.tl[c0])
    # weights
    f = (wt[s].astype(jnp.float32) + b) / (nt.astype(jnp.float32) + v * b)               # [Cv]
    prior = (jnp.where(doc.mask, mjr + e, 0.0)
             / (jnp.sum(mjr) + jnp.sum(doc.mask) * e))                                    # [R]
    lab = _label_weight(doc, view.tl, prior, 0.0)                                        # [Cv]
    w_table = size.astype(jnp.float32) * f[loc.dish]
    w_topic = a * lab * mt / (ml[view.tl].astype(jnp.float32) + g) * f
    w_new = a * prior * g / (ml[doc.labels].astype(jnp.float32) + g) / v
    choice = categorical(u[None], jnp.concatenate([w_table, w_topic, w_new])[None])[0]
    # the draw
    old_table = choice < t_cap
    new_topic = choice >= t_cap + cv
    free = size == 0
    t = jnp.where(old_table, choice, jnp.argmax(free)).astype(jnp.int32)
    overflow = (valid > 0) & ~old_table & ~jnp.any(free)
    opened = valid * (~old_table).astype(jnp.int32)
    private = jnp.argmax((mt == 0) & (jnp.arange(cv) >= c_glob)).astype(jnp.int32)
    r_new = jnp.clip(choice - t_cap - cv, 0, doc.labels.shape[0] - 1)
    c = jnp.where(old_table, loc.dish[t], jnp.where(new_topic, private, choice - t_cap))
    tl = view.tl.at[c].set(jnp.where(new_topic & (valid > 0), doc.labels[r_new], view.tl[c]))
    # the new table (if any) joins topic c, then the token joins table t
    dish = loc.dish.at[t].set(jnp.where(opened > 0, c, loc.dish[t]))
    mt = mt.at[c].add(opened)
    ml = ml.at[tl[c]].add(opened)
    mjr = mjr + opened * _label_slot(doc, tl[c])
    size = size.at[t].add(valid)
    wt = wt.at[s, c].add(valid)
    nt = nt.at[c].add(valid)
    tab = loc.tab.at[i].set(jnp.where(valid > 0, t, loc.tab[i]))
    return _Local(tab, size, dish, mjr), _View(wt, nt, mt, tl, ml), overflow


def _table_step(doc: _Doc, loc: _Local, view: _View, logd: Array, counts: Array, prev: Array,
                rank: Array, u: Array, t: Array, params: Params, v: int, c_glob: int,
                conc: tuple) -> tuple[_Local, _View, Array]:
    """Gibbs step of the label and topic of table t (skipped when the table is empty): the
    table's tokens move as one block, log weights log r_jk (m_jk^-jt + eta) + log {m_kl^-jt,
    gamma} - log(m_k^-jt + gamma) + log f_kl^-jt(x_jt).

    f_kl(x_jt), the Polya predictive of the block, is a sum of one log per token (exactly the
    rising-factorial ratio, in log space: no underflow however large the table):
    log f_c(x_jt) = sum_{i in t} log(n_c,w_i + beta + prev_i) - log(n_c + V beta + rank_i), with
    prev_i / rank_i the table's earlier tokens of the same word / of any word. `logd` [Lmax, C+P]
    holds these per-token terms for every token and topic against the current view counts; a
    table move changes two topics, so only their two columns are recomputed (O(Lmax) logs per
    step instead of O(Lmax C) or O(M C) lgammas). `counts` [T, M]: each table's tokens per
    distinct word of the document."""
    (_, g), b, e = conc, params.beta, params.eta
    cv = view.nt.shape[0]
    n = loc.size[t]
    act = (n > 0).astype(jnp.int32)
    cnt = counts[t]
    c0 = loc.dish[t]
    member = ((loc.tab == t) & doc.inside).astype(jnp.float32)                           # [Lmax]
    wt = view.wt.at[:, c0].add(-cnt * act)
    nt = view.nt.at[c0].add(-n * act)
    mt = view.mt.at[c0].add(-act)
    ml = view.ml.at[view.tl[c0]].add(-act)
    mjr = loc.mjr - act * _label_slot(doc, view.tl[c0])
    logd = logd.at[:, c0].set(_log_column(doc, wt, nt, prev, rank, c0, b, v))
    log_prior = jnp.where(doc.mask, jnp.log(mjr.astype(jnp.float32) + e), -jnp.inf)        # [R]
    lab = _label_weight(doc, view.tl, log_prior, -jnp.inf)                                 # [Cv]
    pred = jnp.sum(member[:, None] * logd, axis=0)                                          # [Cv]
    logit_topic = jnp.where(
        (mt > 0) & (lab > -jnp.inf),
        lab + jnp.log(mt.astype(jnp.float32)) - jnp.log(ml[view.tl].astype(jnp.float32) + g) + pred,
        -jnp.inf)
    empty = jnp.sum(member * (jnp.log(b + prev.astype(jnp.float32))
                              - jnp.log(v * b + rank.astype(jnp.float32))))
    logit_new = log_prior + jnp.log(g) - jnp.log(ml[doc.labels].astype(jnp.float32) + g) + empty
    choice = categorical_logits(u[None], jnp.concatenate([logit_topic, logit_new])[None])[0]
    new_topic = (choice >= cv) & (act > 0)
    private = jnp.argmax((mt == 0) & (jnp.arange(cv) >= c_glob)).astype(jnp.int32)
    r_new = jnp.clip(choice - cv, 0, doc.labels.shape[0] - 1)
    c = jnp.where(act > 0, jnp.where(new_topic, private, choice), c0).astype(jnp.int32)
    tl = view.tl.at[c].set(jnp.where(new_topic, doc.labels[r_new], view.tl[c]))
    wt = wt.at[:, c].add(cnt * act)
    nt = nt.at[c].add(n * act)
    mt = mt.at[c].add(act)
    ml = ml.at[tl[c]].add(act)
    mjr = mjr + act * _label_slot(doc, tl[c])
    logd = logd.at[:, c].set(_log_column(doc, wt, nt, prev, rank, c, b, v))
    return loc._replace(dish=loc.dish.at[t].set(c), mjr=mjr), _View(wt, nt, mt, tl, ml), logd


def _log_column(doc: _Doc, wt: Array, nt: Array, prev: Array, rank: Array, c: Array, b: float,
                v: int) -> Array:
    """[Lmax] per-token log predictive terms of topic c (see ``_table_step``)."""
    return (jnp.log(wt[doc.slot, c].astype(jnp.float32) + b + prev.astype(jnp.float32))
            - jnp.log(nt[c].astype(jnp.float32) + v * b + rank.astype(jnp.float32)))


def _log_terms(doc: _Doc, view: _View, prev: Array, rank: Array, b: float, v: int) -> Array:
    """[Lmax, C+P] per-token log predictive terms of every topic (see ``_table_step``)."""
    return (jnp.log(view.wt[doc.slot].astype(jnp.float32) + b + prev[:, None].astype(jnp.float32))
            - jnp.log(view.nt[None, :].astype(jnp.float32) + v * b + rank[:, None].astype(jnp.float32)))


def _table_ranks(doc: _Doc, tab: Array) -> tuple[Array, Array]:
    """(prev, rank) [Lmax] of every token within its table: earlier tokens of the table with the
    same word, and with any word, in one fixed order of the table's tokens (the Polya predictive
    of a block does not depend on the order). One sort, O(Lmax log Lmax)."""
    n = tab.shape[0]
    idx = jnp.arange(n, dtype=jnp.int32)
    key = jnp.where(doc.inside, tab, jnp.iinfo(jnp.int32).max)
    s_tab, s_slot, s_idx = jax.lax.sort((key, doc.slot, idx), num_keys=3)
    first = jnp.ones((1,), bool)
    new_table = jnp.concatenate([first, s_tab[1:] != s_tab[:-1]])
    new_word = new_table | jnp.concatenate([first, s_slot[1:] != s_slot[:-1]])
    rank = idx - jax.lax.cummax(jnp.where(new_table, idx, 0))
    prev = idx - jax.lax.cummax(jnp.where(new_word, idx, 0))
    zeros = jnp.zeros((n,), jnp.int32)
    return zeros.at[s_idx].set(prev), zeros.at[s_idx].set(rank)


def _table_counts(doc: _Doc, loc: _Local) -> Array:
    """[T, M] tokens of each table per distinct word of the document."""
    t_cap, m = loc.size.shape[0], doc.words.shape[0]
    return jnp.zeros((t_cap, m), jnp.int32).at[loc.tab, doc.slot].add(doc.inside.astype(jnp.int32))


def _update_docs(docs: _Doc, locs: _Local, views: _View, u_tok: Array, u_tab: Array,
                 params: Params, v: int, c_glob: int, conc: tuple | None = None
                 ) -> tuple[_Local, _View, Array]:
    """One document step (every token's table, then every table's label and topic) for each of
    a batch of documents, each on its own view. The loops run outside the vmap (their bounds are
    the block's longest document and the table capacity) so masking a finished document costs
    a few scalar updates, not a select of its whole view. `conc`: (alpha, gamma) in use
    (default the Params')."""
    conc = (params.alpha, params.gamma) if conc is None else conc
    token = jax.vmap(partial(_token_step, params=params, v=v, c_glob=c_glob, conc=conc),
                     in_axes=(0, 0, 0, 0, None))
    table = jax.vmap(partial(_table_step, params=params, v=v, c_glob=c_glob, conc=conc),
                     in_axes=(0, 0, 0, 0, 0, 0, 0, 0, None))

    def token_body(i, carry):
        locs, views, overflow = carry
        locs, views, o = token(docs, locs, views, u_tok[:, i], i)
        return locs, views, overflow | o

    overflow = jnp.zeros(docs.length.shape, bool)
    locs, views, overflow = jax.lax.fori_loop(0, jnp.max(docs.length), token_body,
                                              (locs, views, overflow))
    counts = jax.vmap(_table_counts)(docs, locs)
    prev, rank = jax.vmap(_table_ranks)(docs, locs.tab)
    logd = jax.vmap(partial(_log_terms, b=params.beta, v=v))(docs, views, prev, rank)

    def table_body(t, carry):
        locs, views, logd = carry
        return table(docs, locs, views, logd, counts, prev, rank, u_tab[:, t], t)

    # table slots past the block's last non-empty one stay empty: their steps are no-ops
    used = jnp.max(jnp.where(locs.size > 0, jnp.arange(locs.size.shape[1]) + 1, 0))
    locs, views, _ = jax.lax.fori_loop(0, used, table_body, (locs, views, logd))
    return locs, views, overflow


def _blocked_sweep(key: Array, state: State, data: Data, params: Params, blocks: Array,
                   valid: Array, axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """Blocks of documents in turn; a block's documents step at once on views of the counts at
    the block's start (one document per block: exact Gibbs). Uniforms: one per token (its table
    draw) and one per table slot of each document (its label-and-topic draw), whatever the
    blocking, so the one-document-per-block sweep is the same whatever B.

    Sharded (`axis_name`): block b is the union of the shards' blocks b (``_write_back``); the
    info (tokens changed, overflow on any shard) is the whole sweep's, equal on every shard."""
    n, _, v, _, _ = _sizes(data)
    c_glob, t_cap = state.topic.shape[0], state.dish.shape[1]
    if params.resample_concentrations:          # static: without it, the key is the sweep's
        key, k_conc = jax.random.split(key)
    k_tok, k_tab = jax.random.split(key)
    u_tok = jax.random.uniform(k_tok, (n,))
    u_tab = jax.random.uniform(k_tab, state.dish.shape)
    conc = _in_use(state, params)

    width = label_width(c_glob, state.label_tables.shape[0])

    def block(carry, xs):
        st, changed, overflow = carry
        idx, ok = xs
        idx = jnp.where(ok, idx, data.doc_start.shape[0] - 1)
        docs = _doc_inputs(data, idx)
        # each document sees its labels' topics only (dpmrm_views): a label owning more topics
        # than the view has columns for overflows the sweep (redone after ``grow``)
        slots, most = label_topics(st, width)
        cols = document_columns(slots, docs, c_glob)
        loc, view = gather(st, docs, idx, t_cap, cols)
        new_loc, new_view, over = _update_docs(
            docs, loc, view, u_tok[jnp.minimum(docs.pos, n - 1)], u_tab[idx], params, v,
            cols.shape[1], conc)
        st, moved, lost = write_back(st, idx, docs, cols, loc, view, new_loc, new_view,
                                     axis_name)
        return (st, changed + moved, overflow | jnp.any(over) | lost | (most > width)), None

    (state, changed, overflow), _ = jax.lax.scan(
        block, (state, jnp.int32(0), jnp.bool_(False)), (blocks, valid))
    # a table overflow of one shard is the whole sweep's
    changed, over = shard_sum(jnp.stack([changed, overflow.astype(jnp.int32)]), axis_name)
    overflow = over > 0
    if params.resample_concentrations:
        state = resample_concentrations(k_conc, state, data, params, axis_name)
    return state, SweepInfo(changed, overflow, jnp.sum(state.topic_tables > 0, dtype=jnp.int32))


def resample_concentrations(key: Array, state: State, data: Data, params: Params,
                            axis_name: str | None = None) -> State:
    """The state with alpha and gamma drawn by (A) and (G) (module docstring) given its tables:
    alpha from the documents' n_j and the m tables of all documents, gamma from the labels' m_k
    and the K active topics. Sharded: each shard draws the auxiliaries of its own documents
    (`key`), their sums are summed over the shards; alpha's draw and all of gamma's (its
    groups, the labels, are global tables) use a key equal on every shard."""
    a, b = params.prior_shape, params.prior_rate
    shared = shared_key(key, axis_name)
    k_alpha, _ = jax.random.split(key)
    s_alpha, s_gamma = jax.random.split(shared)
    alpha = concentration_groups(k_alpha, state.alpha, data.doc_len, jnp.sum(state.label_tables),
                                 a, b, axis_name=axis_name, shared=s_alpha)
    gamma = concentration_groups(s_gamma, state.gamma, state.label_tables,
                                 jnp.sum(state.topic_tables > 0), a, b)
    return state._replace(alpha=alpha, gamma=gamma)


def traced_priors(state: State, params: Params) -> dict[str, Array]:
    """{"alpha", "gamma": the current values} when sampled (``resample_concentrations``), else {}."""
    return sampled_concentrations.traced(state, params, ("alpha", "gamma"))


def _sequential_sweep(key: Array, state: State, data: Data, params: Params) -> tuple[State, SweepInfo]:
    d = data.doc_start.shape[0] - 1
    return _blocked_sweep(key, state, data, params, jnp.arange(d, dtype=jnp.int32)[:, None],
                          jnp.ones((d, 1), bool))


def _parallel_sweep(key: Array, state: State, data: Data, params: Params) -> tuple[State, SweepInfo]:
    return _blocked_sweep(key, state, data, params, data.blocks, data.valid)


_KERNELS = {"sequential": _sequential_sweep, "parallel": _parallel_sweep}


def sweep(key: Array, state: State, data: Data, params: Params,
          axis_name: str | None = None) -> tuple[State, SweepInfo]:
    """One sweep of the kernel ``params.sampler`` over all documents; pure and jit/vmap-able.
    ``info.overflow`` says the sweep needed more capacity (see ``grow``).

    `axis_name`: inside ``shard_map`` over documents (``jaxtopics.distributed``), the mapped
    axis: the parallel kernel with every block's moves exchanged between the shards (module
    docstring); the info is the whole sweep's, equal on every shard."""
    if axis_name is None:
        return _KERNELS[params.sampler](key, state, data, params)
    check_shard_params(params)
    # the label ids are constants of the layout (a state split by ``distributed.shard_state``
    # has 0, not -1, on its padding and dummy rows)
    state = state._replace(doc_labels=_doc_label_ids(data))
    return _blocked_sweep(key, state, data, params, data.blocks, data.valid, axis_name)


# --------------------------------------------------------------------------------------------
# read-outs


def invariants(state: State, data: Data | None, params: Params) -> dict[str, Array]:
    """What the driver checks after every jitted chunk (``models.base.Invariants``): the count
    tables are non-negative, word_topic sums over its rows to topic, table_size and topic sum
    to the N tokens (when `data` is given; None: a sharded state's global view: to each other),
    and topic_tables, label_tables and doc_label_tables each sum to the occupied tables."""
    from ..ops.counts import count_invariants, table_total
    tables = table_total((state.table_size > 0).astype(jnp.int32))
    tokens = state.topic.sum()
    return count_invariants(
        {name: getattr(state, name) for name in ("table_size", "doc_label_tables", "topic_tables",
                                                 "label_tables", "word_topic", "topic")},
        {"word_topic: sums over words to topic": (state.word_topic.sum(0), state.topic),
         "topic: sums to the tokens": (tokens, None if data is None else data.word.shape[0]),
         "table_size: sums to the tokens": (table_total(state.table_size), tokens),
         "topic_tables: sums to the occupied tables": (state.topic_tables.sum(), tables),
         "label_tables: sums to the occupied tables": (state.label_tables.sum(), tables),
         "doc_label_tables: sums to the occupied tables": (table_total(state.doc_label_tables),
                                                           tables)})


@partial(jax.jit, static_argnums=(2,))
def log_joint(state: State, data: Data | None, params: Params) -> Array:
    """Collapsed log p(x, t, k, l): per document a CRP(alpha) over its tables and a Polya(eta)
    urn over its tables' labels (restricted to its label set), per label a CRP(gamma) over its
    tables' topics, per topic a Polya(beta) over its words. From the state alone (`data` is
    unused: a document's length is the sum of its tables, its label set its ``doc_labels``), so
    it also scores the shards' tables stacked (empty padding rows add 0)."""
    (a, g), e = _in_use(state, params), params.eta
    f32 = jnp.float32
    size, active = state.table_size, state.table_size > 0
    num_tables = jnp.sum(active, axis=1)
    crp_docs = (jnp.sum(num_tables) * jnp.log(f32(a))
                + jnp.sum(jnp.where(active, jax.scipy.special.gammaln(size.astype(f32)), 0.0))
                - jnp.sum(log_rising_factorial(f32(a), jnp.sum(size, axis=1))))
    label_mask = state.doc_labels >= 0
    per_doc = jnp.sum(label_mask, axis=1)
    labels = (jnp.sum(jnp.where(label_mask, log_rising_factorial(f32(e), state.doc_label_tables), 0.0))
              - jnp.sum(log_rising_factorial(per_doc * f32(e), num_tables)))
    mt = state.topic_tables
    crp_labels = (jnp.sum(mt > 0) * jnp.log(f32(g))
                  + jnp.sum(jnp.where(mt > 0, jax.scipy.special.gammaln(mt.astype(f32)), 0.0))
                  - jnp.sum(log_rising_factorial(f32(g), state.label_tables)))
    words = dirichlet_multinomial_log_evidence(state.word_topic, params.beta, axis=0)
    return crp_docs + labels + crp_labels + words


def state_shapes(params: Params, num_tokens: int, num_docs: int, num_words: int,
                 num_labels: int = ANY_LENGTH) -> State:
    """The shape and dtype of every State array (checked when a model file is read); the topic
    slots C, the table slots T and the label slots R of a document are capacities (grown by
    ``grow``, or set by the data); L = `num_labels`, the file's label names."""
    c, t, r = same_length(0), same_length(1), same_length(2)
    d1 = num_docs + 1 if num_docs >= 0 else ANY_LENGTH
    topics, tables, labels = array_spec(c), array_spec(d1, t), array_spec(d1, r)
    return State(table=array_spec(num_tokens), dish=tables, topic_label=topics, table_size=tables,
                 doc_label_tables=labels, topic_tables=topics, label_tables=array_spec(num_labels),
                 word_topic=array_spec(num_words, c), topic=topics,
                 token_doc=array_spec(num_tokens), doc_labels=labels,
                 alpha=array_spec(dtype=np.float32), gamma=array_spec(dtype=np.float32))


def check_state(state: State, params: Params) -> str | None:
    """What is out of range in a state read from a file (host arrays), or None: table slots in
    [0, T), topic slots in [0, C), owner labels in [0, L), the tokens' documents in [0, D],
    label ids in [-1, L) (-1: padding), counts non-negative (``resume`` recounts the tables);
    alpha and gamma finite positive float32 scalars, the Params' values unless sampled."""
    d1, t_cap = np.shape(state.dish)
    c_cap, num_labels = np.shape(state.topic)[0], np.shape(state.label_tables)[0]
    return (sampled_concentrations.state_problem(state, params, ("alpha", "gamma"))
            or latent_problem("table", state.table, t_cap)
            or latent_problem("dish", state.dish, c_cap)
            or latent_problem("topic_label", state.topic_label, num_labels)
            or latent_problem("token_doc", state.token_doc, d1)
            or latent_problem("doc_labels", state.doc_labels, num_labels, low=-1)
            or count_problem(table_size=state.table_size, doc_label_tables=state.doc_label_tables,
                             topic_tables=state.topic_tables, label_tables=state.label_tables,
                             word_topic=state.word_topic, topic=state.topic))


def rebuild(state: State, data: Data, params: Params) -> State:
    """The state with its count tables recounted from the latents (after loading a file)."""
    return state_from_assignments(state.table, state.dish, state.topic_label, data,
                                  alpha=state.alpha, gamma=state.gamma)


#: held-out methods (``jaxtopics.evaluation``): the corrected theta (module docstring) is the
#: default
HELD_OUT_METHODS = ("corrected_theta", "completion")
DEFAULT_HELD_OUT_METHOD = "corrected_theta"


# one concept per module, each re-exported here (the model contract and the tests read them from
# this module): the sharding hooks (dpmrm_shards), the read-outs over the active topics
# (dpmrm_readouts) and the held-out documents (fold-in, held-out likelihood; dpmrm_held_out)
from .dpmrm_shards import (  # noqa: E402,F401
    check_shard_params, pad_shard, recount_shard, shard_sizes)
from .dpmrm_readouts import (  # noqa: E402,F401
    _active_order, _distributions, _label_weights, assignments, estimate)
from .dpmrm_views import (  # noqa: E402
    document_columns, gather, label_topics, label_width, write_back)
from . import dpmrm_held_out as _held_out  # noqa: E402
from .dpmrm_held_out import (  # noqa: E402,F401
    fold_in, held_out_doc_log_likelihood, held_out_log_likelihood)

_fold_in = _held_out._fold_in      # tests reach the private fold-in through this module
