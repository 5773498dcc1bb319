"""Correctness of the DP-MRM kernels (jaxtopics.models.dpmrm), the bar of DESIGN.md "How to test
a sampler".

1. Exact enumeration. On a multi-label corpus small enough to list every latent configuration
   of the Chinese restaurant franchise (the partition of each document's tokens into tables, the
   label of every table, the partition of every label's tables into topics), the exact posterior
   is computed here by brute force in numpy float64 from the generative process (CRP(alpha) per
   document, Polya(eta) over each document's table labels restricted to its label set,
   CRP(gamma) per label, Polya(beta) per topic), independently of the package. Many independent
   chains (vmap) of the sequential kernel must follow it:
   - from exact posterior draws, after 2 sweeps (invariance, with a check that chains move);
   - from the package's own initial state, after enough sweeps to forget it (convergence);
   both on the full configuration, and on its marginal, the partition of the tokens into
   (labelled) topics.
   Negative control: the same kernel without the r_j mask (every document may use every label,
   the paper's (m_jk + eta)/(m_j + K eta)) is rejected, while its draws match its own exact law.
2. The parallel kernel with one document per block is the sequential kernel, bit for bit.
3. Count tables stay consistent with the latents through sweeps, growth and rebuild.

Every statistical assertion has a false-alarm rate <= FAMILY_ALPHA (1e-3) split over its
statistics; tolerances are derived from the number of chains, not from the observed values.
"""

from __future__ import annotations

import functools
import itertools
import math
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxtopics import Corpus
from jaxtopics.models import dpmrm
from enumeration_stats import pooled_chisquare_p as _pooled_chisquare_p, tv as _tv, tv_bound as _tv_bound

FAMILY_ALPHA = 1e-3


# ------------------------------------------------------------------------------------------
# exact enumeration: reference posterior (numpy float64, independent of the package)


def _set_partitions(n: int):
    """Every set partition of n items as a restricted growth string (block ids by first use)."""
    if n == 0:
        yield ()
        return

    def rec(prefix, m):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for b in range(m + 1):
            yield from rec(prefix + [b], max(m, b + 1))

    yield from rec([0], 1)


def _canonical(blocks) -> tuple[int, ...]:
    """Relabel block ids by first appearance (the restricted growth string of a partition)."""
    ids: dict = {}
    return tuple(ids.setdefault(b, len(ids)) for b in blocks)


def _log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


class Enumerated:
    """A tiny multi-label corpus; every CRF configuration listed with its exact posterior.

    A configuration is (per document: (table partition of its tokens as a restricted growth
    string, label of each table), per label: partition of its tables into topics, the tables
    taken in (document, table) order). `topic_key` maps it to the partition of the corpus's
    tokens into topics (ids by first appearance) with each topic's label.
    """

    def __init__(self, docs, label_sets, alpha, beta, gamma, eta, all_labels=False):
        self.alpha, self.beta, self.gamma, self.eta = alpha, beta, gamma, eta
        self.corpus = Corpus.from_token_lists([[f"w{w}" for w in d] for d in docs],
                                              labels=[[f"L{k}" for k in s] for s in label_sets])
        self.num_labels = len(self.corpus.label_names)
        self.v = self.corpus.num_words
        self.docs = [[self.corpus.vocab.index(f"w{w}") for w in d] for d in docs]
        names = self.corpus.label_names
        # the label sets the model sees (all labels everywhere: the model without the r_j mask)
        self.label_sets = [list(range(self.num_labels)) if all_labels
                           else [names.index(f"L{k}") for k in s] for s in label_sets]
        self.configs = self._enumerate()
        self.index = {c: i for i, c in enumerate(self.configs)}
        self.log_joints = np.array([self.log_joint(c) for c in self.configs])
        self.topic_keys = [self.topic_key(c) for c in self.configs]
        self.topic_index = {k: i for i, k in enumerate(dict.fromkeys(self.topic_keys))}

    def _enumerate(self):
        per_doc = []
        for toks, labels in zip(self.docs, self.label_sets):
            options = []
            for part in _set_partitions(len(toks)):
                for lab in itertools.product(labels, repeat=max(part, default=-1) + 1):
                    options.append((part, lab))
            per_doc.append(options)
        out = []
        for combo in itertools.product(*per_doc):
            tables = [lab for _, labs in combo for lab in labs]
            per_label = [sum(1 for x in tables if x == k) for k in range(self.num_labels)]
            for parts in itertools.product(*(list(_set_partitions(m)) for m in per_label)):
                out.append((combo, parts))
        return out

    def _topics(self, config):
        """Topic (label, block) of every table, tables in (document, table) order."""
        combo, parts = config
        seen = [0] * self.num_labels
        out = []
        for _, labs in combo:
            for lab in labs:
                out.append((lab, parts[lab][seen[lab]]))
                seen[lab] += 1
        return out

    def log_joint(self, config) -> float:
        combo, parts = config
        a, b, g, e = self.alpha, self.beta, self.gamma, self.eta
        total = 0.0
        for j, (part, labs) in enumerate(combo):
            sizes = np.bincount(part, minlength=len(labs)) if part else np.zeros(0, int)
            total += (len(labs) * math.log(a) + sum(math.lgamma(s) for s in sizes)
                      - _log_rising(a, len(part)))
            total += (sum(_log_rising(e, sum(1 for x in labs if x == k)) for k in self.label_sets[j])
                      - _log_rising(len(self.label_sets[j]) * e, len(labs)))
        for part in parts:
            if part:
                sizes = np.bincount(part)
                total += (len(sizes) * math.log(g) + sum(math.lgamma(s) for s in sizes)
                          - _log_rising(g, len(part)))
        words: dict = {}
        topics = self._topics(config)
        first = 0
        for j, (part, labs) in enumerate(combo):
            for i, w in enumerate(self.docs[j]):
                words.setdefault(topics[first + part[i]], np.zeros(self.v, int))[w] += 1
            first += len(labs)
        for counts in words.values():
            total += sum(_log_rising(b, c) for c in counts) - _log_rising(self.v * b, counts.sum())
        return total

    def topic_key(self, config):
        combo, _ = config
        topics = self._topics(config)
        tokens, first = [], 0
        for j, (part, labs) in enumerate(combo):
            tokens.extend(topics[first + t] for t in part)
            first += len(labs)
        ids = _canonical(tokens)
        labels = tuple(dict.fromkeys((i, t[0]) for i, t in zip(ids, tokens)))
        return ids, tuple(lab for _, lab in labels)

    @staticmethod
    def posterior(log_joints: np.ndarray) -> np.ndarray:
        lj = np.asarray(log_joints, np.float64)
        p = np.exp(lj - lj.max())
        return p / p.sum()

    def topic_posterior(self, probs: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.topic_index))
        np.add.at(out, [self.topic_index[k] for k in self.topic_keys], probs)
        return out

    # -- sampler states <-> configurations --------------------------------------------------

    def arrays(self, config, table_cap: int, topic_cap: int):
        """(table [N], dish [D+1, T], topic_label [C]) of a configuration (topics in slots
        0, 1, ... in order of first use)."""
        combo, _ = config
        topics = self._topics(config)
        slots = {t: i for i, t in enumerate(dict.fromkeys(topics))}
        table = np.concatenate([np.asarray(part, np.int32) for part, _ in combo])
        dish = np.zeros((len(combo) + 1, table_cap), np.int32)
        topic_label = np.zeros(topic_cap, np.int32)
        first = 0
        for j, (_, labs) in enumerate(combo):
            for t in range(len(labs)):
                dish[j, t] = slots[topics[first + t]]
            first += len(labs)
        for t, s in slots.items():
            topic_label[s] = t[0]
        return table, dish, topic_label

    def config_of(self, table, dish, topic_label):
        """The configuration of one sampler state (None if the enumeration lacks it)."""
        combo = []
        per_label_tables: list[list[int]] = [[] for _ in range(self.num_labels)]
        first = 0
        for j, toks in enumerate(self.docs):
            own = table[first:first + len(toks)]
            first += len(toks)
            order = list(dict.fromkeys(int(t) for t in own))
            part = tuple(order.index(int(t)) for t in own)
            labs = tuple(int(topic_label[dish[j, t]]) for t in order)
            combo.append((part, labs))
            for t, lab in zip(order, labs):
                per_label_tables[lab].append(int(dish[j, t]))
        config = (tuple(combo), tuple(_canonical(s) for s in per_label_tables))
        return self.index.get(config)


def _case(name: str, all_labels: bool = False) -> Enumerated:
    return _cached_case(name, all_labels)


CASES = {
    # 3 documents, labels {A}, {A, B}, {B}; 5 tokens over 2 words, a word repeated inside the
    # multi-label document (so a table can hold a word twice): 76 configurations
    "two-labels": dict(docs=[[0, 1], [0, 0], [1]], label_sets=[["A"], ["A", "B"], ["B"]],
                       alpha=1.0, beta=0.5, gamma=1.0, eta=0.5),
}
CHAINS = 100_000
NEGATIVE_CHAINS = 20_000
TOPIC_CAP = 8


@functools.lru_cache(maxsize=None)
def _cached_case(name: str, all_labels: bool) -> Enumerated:
    c = CASES[name]
    return Enumerated(c["docs"], c["label_sets"], c["alpha"], c["beta"], c["gamma"], c["eta"],
                      all_labels=all_labels)


def _params(e: Enumerated, **kw) -> dpmrm.Params:
    return dpmrm.Params(alpha=e.alpha, beta=e.beta, gamma=e.gamma, eta=e.eta,
                        topic_capacity=TOPIC_CAP, **{"sampler": "sequential", **kw})


def _corpus_without_mask(e: Enumerated) -> Corpus:
    """The same documents with every label on every document: DP-MRM without the r_j mask."""
    c = e.corpus
    every = [list(c.label_names)] * c.num_docs
    return Corpus.from_arrays(c.word_ids, c.doc_offsets, c.vocab, labels=every,
                              label_names=c.label_names)


@functools.lru_cache(maxsize=None)
def _runner(params: dpmrm.Params):
    """Independent chains (vmapped) continuing from `starts` for a traced number of sweeps: one
    compilation serves every test of a parameter set."""
    def chain(key, state, data, num_sweeps):
        def body(t, st):
            return dpmrm.sweep(jax.random.fold_in(key, t), st, data, params)[0]
        return jax.lax.fori_loop(0, num_sweeps, body, state)

    return jax.jit(jax.vmap(chain, in_axes=(0, 0, None, None)))


def _run(params, data, starts, keys, num_sweeps: int):
    return _runner(params)(keys, starts, data, jnp.int32(num_sweeps))


def _counts(e: Enumerated, final) -> tuple[np.ndarray, np.ndarray, int]:
    """(configuration counts, topic-partition counts, draws outside the enumeration)."""
    table, dish, label = (np.asarray(x) for x in (final.table, final.dish, final.topic_label))
    configs = np.zeros(len(e.configs), np.int64)
    outside = 0
    for i in range(table.shape[0]):
        k = e.config_of(table[i], dish[i], label[i])
        if k is None:
            outside += 1
        else:
            configs[k] += 1
    topics = np.zeros(len(e.topic_index), np.int64)
    np.add.at(topics, [e.topic_index[k] for k in e.topic_keys], configs)
    return configs, topics, outside


@functools.lru_cache(maxsize=None)
def _chains(case: str, start: str, num_sweeps: int, num_chains: int, all_labels: bool = False):
    e = _case(case)
    corpus = _corpus_without_mask(e) if all_labels else e.corpus
    params = _params(e)
    data = dpmrm.prepare(corpus, params)
    seed = zlib.crc32(f"{case}/{start}/{all_labels}/{num_sweeps}".encode())
    k_start, k_run = jax.random.split(jax.random.key(seed))
    keys = jax.random.split(k_run, num_chains)
    if start == "posterior":      # exact posterior draws of the (masked) model
        post = e.posterior(e.log_joints)
        draws = np.random.default_rng(0).choice(len(post), size=num_chains, p=post)
        t_cap = dpmrm._table_cap(data)
        arrays = [e.arrays(c, t_cap, TOPIC_CAP) for c in e.configs]
        table, dish, label = (jnp.asarray(np.stack([a[i] for a in arrays])[draws]) for i in range(3))
        starts = jax.jit(jax.vmap(functools.partial(dpmrm.state_from_assignments, data=data)))(
            table, dish, label)
    else:
        starts = jax.jit(jax.vmap(functools.partial(dpmrm.init, data=data, params=params)))(
            jax.random.split(k_start, num_chains))
    final = _run(params, data, starts, keys, num_sweeps)
    return _counts(e, final), (starts if start == "posterior" else None), final


def test_enumeration_reference() -> None:
    """The reference is what it claims: the configurations are distinct, their probabilities
    sum to 1, the package's log joint equals the numpy formula on every configuration (so the
    two implement the same generative process), and every configuration maps back to itself."""
    e = _case("two-labels")
    assert len(e.configs) == 76 and len(e.index) == 76
    assert len(e.topic_index) < len(e.configs)
    params = _params(e)
    data = dpmrm.prepare(e.corpus, params)
    t_cap = dpmrm._table_cap(data)
    arrays = [e.arrays(c, t_cap, TOPIC_CAP) for c in e.configs]
    for i, (table, dish, label) in enumerate(arrays):
        assert e.config_of(table, dish, label) == i
    stack = [jnp.asarray(np.stack([a[i] for a in arrays])) for i in range(3)]
    lj = jax.jit(jax.vmap(lambda t, d, lab: dpmrm.log_joint(
        dpmrm.state_from_assignments(t, d, lab, data), data, params)))(*stack)
    np.testing.assert_allclose(np.asarray(lj, np.float64), e.log_joints, rtol=1e-5, atol=1e-4)


def _assert_matches(counts, probs, outside, what, delta=FAMILY_ALPHA / 4):
    n = int(counts.sum()) + outside
    bound = _tv_bound(probs, n, delta)
    tv = _tv(np.append(counts, outside) / n, np.append(probs, 0.0))
    p_chi2 = _pooled_chisquare_p(np.append(counts, outside), np.append(probs, 0.0))
    assert bound <= 0.02, f"test design: too few chains for TV resolution 0.02 (bound {bound:.4f})"
    assert tv < bound and p_chi2 > delta, (
        f"{what}: TV={tv:.4f} (bound {bound:.4f}), chi-square p={p_chi2:.3g}, {outside} outside")


@pytest.mark.slow
def test_sequential_leaves_the_posterior_invariant() -> None:
    """Chains started at exact posterior draws stay at the posterior after 2 sweeps: on the full
    configuration and on the partition of tokens into topics; and they move (a kernel that did
    nothing would pass the distribution check)."""
    e = _case("two-labels")
    post = e.posterior(e.log_joints)
    (configs, topics, outside), starts, final = _chains("two-labels", "posterior", 2, CHAINS)
    _assert_matches(configs, post, outside, "configurations")
    _assert_matches(topics, e.topic_posterior(post), outside, "topic partitions")
    before, after = ([e.config_of(*x) for x in zip(*(np.asarray(y)[:2000] for y in (
        st.table, st.dish, st.topic_label)))] for st in (starts, final))
    moved = np.mean(np.asarray(before) != np.asarray(after))
    assert moved > 0.3, moved


@pytest.mark.slow
def test_sequential_converges_from_init() -> None:
    """Chains from ``dpmrm.init`` (one table per label per document, one topic per label) reach
    the posterior after 12 sweeps (configurations and topic partitions)."""
    e = _case("two-labels")
    post = e.posterior(e.log_joints)
    (configs, topics, outside), _, _ = _chains("two-labels", "init", 12, CHAINS)
    _assert_matches(configs, post, outside, "configurations")
    _assert_matches(topics, e.topic_posterior(post), outside, "topic partitions")


@pytest.mark.slow
def test_negative_control_without_label_mask_is_rejected() -> None:
    """DP-MRM without the r_j mask (every document may use every label's topics) is rejected
    against the posterior (it puts tokens on topics of labels their document does not carry),
    while its draws match its own exact law (so the test measures what the kernel does)."""
    e = _case("two-labels")
    wrong = _case("two-labels", all_labels=True)
    post = e.posterior(e.log_joints)
    (configs, topics, outside), _, _ = _chains("two-labels", "init", 12, NEGATIVE_CHAINS,
                                               all_labels=True)
    n = int(configs.sum()) + outside
    assert outside / n > 0.2                                      # the mask's zero-mass states
    p_chi2 = _pooled_chisquare_p(np.append(configs, outside), np.append(post, 0.0))
    tv = _tv(np.append(configs, outside) / n, np.append(post, 0.0))
    assert p_chi2 < 1e-12 and tv > 10 * _tv_bound(post, n, 1e-3), tv
    # against the unmasked model's own posterior: its configurations are a superset
    own = wrong.posterior(wrong.log_joints)
    wrong_counts, _, wrong_outside = _counts(wrong, _chains("two-labels", "init", 12, NEGATIVE_CHAINS,
                                                            all_labels=True)[2])
    assert wrong_outside == 0
    bound = _tv_bound(own, n, FAMILY_ALPHA / 4)
    assert _tv(wrong_counts / n, own) < bound, (_tv(wrong_counts / n, own), bound)
    assert _pooled_chisquare_p(wrong_counts, own) > FAMILY_ALPHA / 4


# ------------------------------------------------------------------------------------------
# the table's Polya predictive, one log per token


@pytest.mark.parametrize("length,words,tables", [(40, 6, 5), (10_000, 3, 2)])
def test_table_predictive_is_the_rising_factorial_ratio(length, words, tables) -> None:
    """The table step's per-token form (ranks from ``_table_ranks``, terms from ``_log_terms``)
    equals the lgamma form of the Polya predictive (``ops.block_log_predictive``) of each table's
    word counts, for every topic, including words repeated inside a table; and in float64 for a
    10,000-token table, where the product of its factors would underflow any float."""
    from scipy.special import gammaln

    from jaxtopics.ops import block_log_predictive

    rng = np.random.default_rng(length)
    m, cv, lmax = words, 7, length + 3
    slot = np.zeros(lmax, np.int32)
    slot[:length] = rng.integers(0, m, size=length)
    tab = np.zeros(lmax, np.int32)
    tab[:length] = rng.integers(0, tables, size=length)
    inside = np.arange(lmax) < length
    doc = dpmrm._Doc(pos=jnp.zeros(lmax, jnp.int32), inside=jnp.asarray(inside),
                     slot=jnp.asarray(slot), length=jnp.int32(length),
                     words=jnp.arange(m, dtype=jnp.int32), labels=jnp.zeros(1, jnp.int32),
                     mask=jnp.ones(1, bool))
    wt = rng.integers(0, 50, size=(m, cv)).astype(np.int32)
    nt = (wt.sum(0) + rng.integers(0, 100, size=cv)).astype(np.int32)
    view = dpmrm._View(jnp.asarray(wt), jnp.asarray(nt), jnp.ones(cv, jnp.int32),
                       jnp.zeros(cv, jnp.int32), jnp.ones(1, jnp.int32))
    beta, v = 0.3, 50
    prev, rank = dpmrm._table_ranks(doc, jnp.asarray(tab))
    logd = np.asarray(dpmrm._log_terms(doc, view, prev, rank, beta, v), np.float64)
    for t in range(tables):
        member = inside & (tab == t)
        counts = np.bincount(slot[member], minlength=m)
        got = (logd * member[:, None]).sum(0)
        ref = block_log_predictive(jnp.asarray(wt), jnp.asarray(counts), jnp.asarray(nt),
                                   jnp.int32(member.sum()), beta, v * beta)
        np.testing.assert_allclose(got, np.asarray(ref), rtol=2e-5, atol=1e-3)
        exact = ((gammaln(wt + beta + counts[:, None]) - gammaln(wt + beta)).sum(0)
                 - (gammaln(nt + v * beta + member.sum()) - gammaln(nt + v * beta)))
        np.testing.assert_allclose(got, exact, rtol=1e-5)
        if length > 1000:
            assert np.all(exact < -1e3)          # exp() of it is 0 in float64: logs are needed
