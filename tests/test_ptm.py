"""PTM (jaxtopics.models.ptm): exact enumeration of both kernels, counts, planted recovery,
facade (reproducibility, resume, read-outs), bad input, CLI.

Every statistical assertion has a false-alarm rate <= FAMILY_ALPHA (1e-3) split over its
statistics; tolerances are derived from the number of draws, not from the observed values.
"""

from __future__ import annotations

import functools
import itertools
import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import normalized_mutual_info_score

import jaxtopics as jt
from jaxtopics import Corpus
from jaxtopics.errors import ParameterError
from jaxtopics.models import ptm
from jaxtopics.ops import token_log_predictive

from enumeration_stats import pooled_chisquare_p as _pooled_chisquare_p, tv as _tv, tv_bound as _tv_bound

FAMILY_ALPHA = 1e-3


# ------------------------------------------------------------------------------------------
# exact enumeration: reference posterior over (l, z) (numpy float64, independent of the package)


def _log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


def _dirmult(rows: np.ndarray, a: float) -> float:
    """sum over rows of log prod_k a^(c_k) / (K a)^(sum_k c_k), a direct product (no lgamma)."""
    rows = np.atleast_2d(rows)
    return sum(sum(_log_rising(a, c) for c in row) - _log_rising(rows.shape[1] * a, row.sum())
               for row in rows)


class Enumerated:
    """A tiny corpus with every joint state (l, z) listed and its exact posterior probability.

    State vector s = (l_0 .. l_{D-1}, z_0 .. z_{N-1}); state index = mixed radix, s[0] most
    significant."""

    def __init__(self, docs, k, p, alpha, beta, lam):
        self.k, self.p, self.alpha, self.beta, self.lam = k, p, alpha, beta, lam
        self.word = np.concatenate([np.asarray(d, np.int32) for d in docs])
        offsets = np.cumsum([0] + [len(d) for d in docs])
        self.num_words = int(self.word.max()) + 1
        self.corpus = Corpus.from_arrays(self.word, offsets, [f"w{v}" for v in range(self.num_words)])
        self.doc = self.corpus.doc_index
        self.d, self.n = len(docs), self.word.size
        self.radix = (p,) * self.d + (k,) * self.n
        self.states = np.array(list(itertools.product(*[range(r) for r in self.radix])), np.int32)
        # sequential scan order: each document's l, then its tokens' z
        self.sequential_sites = [s for m in range(self.d)
                                 for s in [m] + [self.d + i for i in range(offsets[m], offsets[m + 1])]]

    def log_joint_np(self, s, alpha=None) -> float:
        a = self.alpha if alpha is None else alpha
        pseudo, z = s[:self.d], s[self.d:]
        nl = np.bincount(pseudo, minlength=self.p)
        nlk = np.zeros((self.p, self.k), np.int64)
        nkw = np.zeros((self.k, self.num_words), np.int64)
        np.add.at(nlk, (pseudo[self.doc], z), 1)
        np.add.at(nkw, (z, self.word), 1)
        return _dirmult(nl, self.lam) + _dirmult(nlk, a) + _dirmult(nkw, self.beta)

    def log_joints_np(self, alpha=None) -> np.ndarray:
        return np.array([self.log_joint_np(s, alpha) for s in self.states])

    @staticmethod
    def posterior(log_joints: np.ndarray) -> np.ndarray:
        lj = np.asarray(log_joints, np.float64)
        p = np.exp(lj - lj.max())
        return p / p.sum()

    def index(self, s: np.ndarray) -> np.ndarray:
        return np.ravel_multi_index(tuple(np.asarray(s).T), self.radix)

    def site_step(self, log_joints: np.ndarray, site: int) -> np.ndarray:
        """[S, S] transition matrix of a Gibbs update of one variable."""
        r = self.radix[site]
        alts = np.repeat(self.states[:, None, :], r, axis=1)
        alts[:, :, site] = np.arange(r)
        idx = self.index(alts.reshape(-1, len(self.radix))).reshape(-1, r)
        lj = log_joints[idx]
        w = np.exp(lj - lj.max(1, keepdims=True))
        step = np.zeros((len(self.states),) * 2)
        np.put_along_axis(step, idx, w / w.sum(1, keepdims=True), axis=1)
        return step

    def scan_matrix(self, log_joints: np.ndarray, sites) -> np.ndarray:
        total = np.eye(len(self.states))
        for site in sites:
            total = total @ self.site_step(log_joints, site)
        return total

    def synchronous_matrix(self, log_joints: np.ndarray, sites) -> np.ndarray:
        """All `sites` drawn at once from their conditionals given the same state."""
        conds = {}
        for site in sites:
            r = self.radix[site]
            alts = np.repeat(self.states[:, None, :], r, axis=1)
            alts[:, :, site] = np.arange(r)
            lj = log_joints[self.index(alts.reshape(-1, len(self.radix)))].reshape(-1, r)
            w = np.exp(lj - lj.max(1, keepdims=True))
            conds[site] = w / w.sum(1, keepdims=True)
        others = [i for i in range(len(self.radix)) if i not in sites]
        same = (self.states[:, None, others] == self.states[None, :, others]).all(-1)
        prob = np.ones((len(self.states),) * 2)
        for site in sites:
            prob *= conds[site][:, self.states[:, site]]
        return prob * same


# 4 documents (one empty: it moves by the prior term alone), N = 4 tokens, K = P = 2:
# 2^4 pseudo-document states x 2^4 topic states = 256 joint states.
CASE = dict(docs=[[0, 0], [0], [1], []], k=2, p=2, alpha=0.3, beta=0.2, lam=0.5)
CHAINS = 200_000
# Sweeps per chain from the uniform random init: the scans are within TV 1e-6 of the posterior
# after this many sweeps (test_enumeration_sweeps_suffice computes it from transition matrices).
SWEEPS = 20
KERNELS = {
    "sequential": dict(sampler="sequential"),
    # one document and one token per block: every l, then every z, each from its conditional
    "parallel-exact": dict(sampler="parallel", num_blocks=64),
    # negative control: one block = all l's at once, then all z's at once (not exact)
    "parallel-sync": dict(sampler="parallel", num_blocks=1),
    # the exact kernel with the sparse draw (ops.sparse_draw; each pseudo-document's distinct
    # topics listed): the same law
    "parallel-sparse": dict(sampler="parallel", num_blocks=64, draw="sparse"),
}


@functools.lru_cache(maxsize=None)
def _case() -> Enumerated:
    return Enumerated(**CASE)


@functools.lru_cache(maxsize=None)
def _truth() -> np.ndarray:
    """log joints from ptm.log_joint (float32) on every state."""
    e = _case()
    params = ptm.Params(e.k, e.p, alpha=e.alpha, beta=e.beta, lam=e.lam)
    data = ptm.prepare(e.corpus, params)
    s = jnp.asarray(e.states)
    lj = jax.jit(jax.vmap(lambda s: ptm.log_joint(
        ptm.state_from_assignments(s[e.d:], s[:e.d], data, params), data, params)))(s)
    return np.asarray(lj, np.float64)


def _final_states(kernel: str, num_chains: int, seed: int) -> np.ndarray:
    """Joint state indices of independent chains after SWEEPS sweeps from random inits."""
    e = _case()
    params = ptm.check_params(ptm.Params(e.k, e.p, alpha=e.alpha, beta=e.beta, lam=e.lam,
                                         **KERNELS[kernel]))
    data = ptm.prepare(e.corpus, params)
    k_init, k_run = jax.random.split(jax.random.key(seed))

    def chain(ki, kr):
        st = ptm.init(ki, data, params)
        return jax.lax.fori_loop(0, SWEEPS, lambda t, st: ptm.sweep(
            jax.random.fold_in(kr, t), st, data, params)[0], st)

    final = jax.jit(jax.vmap(chain))(jax.random.split(k_init, num_chains),
                                     jax.random.split(k_run, num_chains))
    _assert_consistent(final, params, data, batched=True)
    s = np.concatenate([np.asarray(final.pseudo), np.asarray(final.z)[:, :e.n]], axis=1)
    return np.bincount(e.index(s), minlength=len(e.states))


@functools.lru_cache(maxsize=None)
def _empirical(kernel: str) -> np.ndarray:
    return _final_states(kernel, CHAINS if kernel != "parallel-sync" else 20_000,
                         seed=list(KERNELS).index(kernel))


def test_log_joint_matches_numpy_formula() -> None:
    e = _case()
    ref = e.log_joints_np()
    np.testing.assert_allclose(_truth(), ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(e.posterior(_truth()), e.posterior(ref), rtol=1e-3, atol=1e-7)


def test_enumeration_sweeps_suffice() -> None:
    """Design check: both exact scans leave the posterior invariant and reach it (TV < 1e-6,
    far below sampling error) from the uniform init within SWEEPS sweeps."""
    e = _case()
    lj = e.log_joints_np()
    post = e.posterior(lj)
    start = np.full(len(post), 1.0 / len(post))
    all_l, all_z = list(range(e.d)), list(range(e.d, e.d + e.n))
    for sites in (e.sequential_sites, all_l + all_z):
        m = e.scan_matrix(lj, sites)
        np.testing.assert_allclose(m.sum(1), 1.0, atol=1e-12)
        assert _tv(post @ m, post) < 1e-12
        assert _tv(start @ np.linalg.matrix_power(m, SWEEPS), post) < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["sequential", "parallel-exact", "parallel-sparse"])
def test_enumeration_matches_exact_posterior(kernel: str) -> None:
    e = _case()
    post = e.posterior(_truth())
    counts = _empirical(kernel)
    n = int(counts.sum())
    tv = _tv(counts / n, post)
    bound = _tv_bound(post, n, FAMILY_ALPHA / 2)
    p_chi2 = _pooled_chisquare_p(counts, post)
    assert bound <= 0.02, "test design: too few chains for TV resolution 0.02"
    assert tv < bound and p_chi2 > FAMILY_ALPHA / 2, (
        f"{kernel}: TV={tv:.4f} (bound {bound:.4f}), chi-square p={p_chi2:.3g}, "
        f"{n} chains x {SWEEPS} sweeps")


@pytest.mark.slow
def test_negative_control_synchronous_kernel_is_rejected() -> None:
    """Power: one block (all pseudo-documents at once, then all topics at once) has another
    stationary law. The test rejects it against the posterior and accepts it against its own
    exact SWEEPS-step law (so the machinery measures what the kernel does)."""
    e = _case()
    lj = e.log_joints_np()
    post = e.posterior(lj)
    counts = _empirical("parallel-sync")
    n = int(counts.sum())
    sync = (e.synchronous_matrix(lj, list(range(e.d)))
            @ e.synchronous_matrix(lj, list(range(e.d, e.d + e.n))))
    np.testing.assert_allclose(sync.sum(1), 1.0, atol=1e-12)
    law = np.full(len(post), 1.0 / len(post)) @ np.linalg.matrix_power(sync, SWEEPS)
    bound = _tv_bound(post, n, FAMILY_ALPHA / 2)
    assert _tv(law, post) > 3 * bound
    assert _tv(counts / n, post) > bound
    assert _pooled_chisquare_p(counts, post) < 1e-12
    assert _tv(counts / n, law) < _tv_bound(law, n, FAMILY_ALPHA / 2)
    assert _pooled_chisquare_p(counts, law) > FAMILY_ALPHA / 2


@pytest.mark.slow
def test_negative_control_seed_typo_is_rejected(monkeypatch) -> None:
    """Power: eq. (36) with the seed's "+ j + 1" typo (the j-th repeat of a topic adds j + 1
    instead of j - 1) in the otherwise exact sequential kernel is rejected."""
    e = _case()
    post = e.posterior(_truth())

    def typo(rows, ranks, totals, valid, smoothing, total_smoothing):
        return token_log_predictive(rows, ranks + 2, totals, valid, smoothing, total_smoothing)

    monkeypatch.setattr(ptm, "token_log_predictive", typo)
    counts = _final_states("sequential", 20_000, seed=99)
    n = int(counts.sum())
    assert _tv(counts / n, post) > 3 * _tv_bound(post, n, FAMILY_ALPHA / 2)     # measured TV 0.26
    assert _pooled_chisquare_p(counts, post) < 1e-12


# ------------------------------------------------------------------------------------------
# count invariants


def _assert_consistent(st: ptm.State, params: ptm.Params, data: ptm.Data, batched: bool) -> None:
    n = data.word.shape[0] - 1
    z_all = np.asarray(st.z)
    z, pseudo = z_all[..., :n], np.asarray(st.pseudo)
    assert z_all.dtype == np.int32 and pseudo.dtype == np.int32
    assert (z >= 0).all() and (z < params.num_topics).all()
    assert (pseudo >= 0).all() and (pseudo < params.num_pseudo_docs).all()
    assert (z_all[..., n] == 0).all(), "dummy slot z[N] must stay 0"
    rebuild = functools.partial(ptm.state_from_assignments, data=data, params=params)
    ref = jax.vmap(rebuild)(jnp.asarray(z), jnp.asarray(pseudo)) if batched else rebuild(z, pseudo)
    for name in ("pseudo_topic", "pseudo_docs", "doc_topic", "word_topic", "topic"):
        got = np.asarray(getattr(st, name))
        assert got.dtype == np.int32 and (got >= 0).all(), name
        np.testing.assert_array_equal(got, np.asarray(getattr(ref, name)), err_msg=name)


@functools.lru_cache(maxsize=None)
def _medium_corpus() -> Corpus:
    """12 documents (one empty, one of 300 tokens), 25 words of which 3 unused."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 12, size=12)
    lengths[4] = 0
    lengths[7] = 300
    v = 25
    words = rng.integers(0, v - 3, size=int(lengths.sum())).astype(np.int32)
    return Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(lengths)]),
                              [f"w{i}" for i in range(v)])


MEDIUM_KERNELS = {
    "sequential": dict(sampler="sequential"),
    "parallel-7": dict(sampler="parallel", num_blocks=7, chunk_size=5),   # chunked, ragged tails
    "parallel-1": dict(sampler="parallel", num_blocks=1),
    "parallel-default": dict(sampler="parallel"),
    "parallel-sparse-7": dict(sampler="parallel", num_blocks=7, chunk_size=5, draw="sparse"),
}


@pytest.mark.parametrize("kernel", list(MEDIUM_KERNELS))
def test_counts_consistent_and_info_counts_changes(kernel: str) -> None:
    params = ptm.check_params(ptm.Params(4, 3, alpha=0.2, beta=0.05, lam=0.3, **MEDIUM_KERNELS[kernel]))
    data = ptm.prepare(_medium_corpus(), params)

    @jax.jit
    def run(key, state):
        def body(st, t):
            new, info = ptm.sweep(jax.random.fold_in(key, t), st, data, params)
            moved = jnp.sum(new.z != st.z)              # token topics (not pseudo-documents)
            return new, (info.changed, moved.astype(jnp.int32))
        return jax.lax.scan(body, state, jnp.arange(3))

    state = ptm.init(jax.random.key(1), data, params)
    _assert_consistent(state, params, data, batched=False)
    final, (changed, moved) = run(jax.random.key(2), state)
    _assert_consistent(final, params, data, batched=False)
    np.testing.assert_array_equal(np.asarray(changed), np.asarray(moved))
    assert int(changed[0]) > 0
    again, _ = run(jax.random.key(2), state)                  # reproducible from the key
    for x, y in zip(final, again):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _eq36_reference(state: ptm.State, corpus: Corpus, params: ptm.Params, m: int) -> np.ndarray:
    """Normalised log p(l_m = l | rest) from eq. (36) in float64 (math.lgamma), numpy counts."""
    k, p, a = params.num_topics, params.num_pseudo_docs, params.alpha
    z = np.asarray(state.z)[:-1]
    labels = np.asarray(state.pseudo)
    nlk = np.zeros((p, k), np.int64)
    np.add.at(nlk, (labels[corpus.doc_index], z), 1)
    nl = np.bincount(labels, minlength=p)
    mine = np.bincount(z[corpus.doc_offsets[m]:corpus.doc_offsets[m + 1]], minlength=k)
    nlk[labels[m]] -= mine
    nl[labels[m]] -= 1
    out = np.array([math.log(nl[j] + params.lam)
                     + sum(math.lgamma(nlk[j, t] + a + mine[t]) - math.lgamma(nlk[j, t] + a)
                           for t in range(k))
                     - math.lgamma(nlk[j].sum() + k * a + mine.sum()) + math.lgamma(nlk[j].sum() + k * a)
                     for j in range(p)])
    return out - np.logaddexp.reduce(out)


def test_pseudo_document_logits_match_eq36() -> None:
    """The pseudo-document step's log weights equal eq. (36) (own document excluded) computed in
    float64, for every document, including an empty one and a 10,000-token one (no underflow)."""
    rng = np.random.default_rng(3)
    lengths = np.array([3, 0, 10_000, 7, 1, 12])
    words = rng.integers(0, 30, size=int(lengths.sum())).astype(np.int32)
    corpus = Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(lengths)]),
                                [f"w{i}" for i in range(30)])
    params = ptm.check_params(ptm.Params(5, 4, alpha=0.1, lam=0.2))
    data = ptm.prepare(corpus, params)
    state = ptm.init(jax.random.key(4), data, params)
    logits = ptm._pseudo_logits(state.z[data.doc_tokens], data.doc_valid, state.pseudo, state.doc_topic,
                                state.pseudo_topic, state.pseudo_docs, params)
    logits = np.asarray(logits, np.float64)
    assert np.isfinite(logits).all()
    for m in range(corpus.num_docs):
        got = logits[m] - np.logaddexp.reduce(logits[m])
        # float32 sums of up to 10,000 logs: absolute error ~ 1e-7 * 10,000 * |log term|
        np.testing.assert_allclose(got, _eq36_reference(state, corpus, params, m), atol=2e-2 if
                                   lengths[m] > 100 else 1e-4, err_msg=f"document {m}")


# ------------------------------------------------------------------------------------------
# planted recovery


def _planted(seed: int = 0, num_docs: int = 1000, k: int = 5, v: int = 100, mean_len: int = 12):
    """Short documents cut from 10 long pseudo-documents: pseudo-document l mixes two of the K=5
    topics half and half (all 10 pairs once), so every topic appears with four different partners
    (identifiable) and every pseudo-document has its own pair. Topic t puts 0.9 of its mass on 20
    head words of its own. Returns (corpus, phi [K, V], theta [P, K], labels [D])."""
    rng = np.random.default_rng(seed)
    head = v // k
    phi = np.full((k, v), 0.1 / v)
    for t in range(k):
        phi[t, t * head:(t + 1) * head] += 0.9 * rng.dirichlet(np.ones(head))
    pairs = list(itertools.combinations(range(k), 2))
    theta = np.zeros((len(pairs), k))
    for j, pair in enumerate(pairs):
        theta[j, list(pair)] = 0.5
    labels = rng.integers(0, len(pairs), num_docs)
    lengths = np.maximum(rng.poisson(mean_len, num_docs), 2)
    z = np.concatenate([rng.choice(k, size=n, p=theta[j]) for j, n in zip(labels, lengths)])
    words = (phi[z].cumsum(1) > rng.random((z.size, 1))).argmax(1).astype(np.int32)
    corpus = Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(lengths)]),
                                [f"w{i}" for i in range(v)])
    return corpus, phi, theta, labels


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def _matched(phi_est: np.ndarray, phi_true: np.ndarray) -> np.ndarray:
    c = _cosines(phi_est, phi_true)
    r, col = linear_sum_assignment(-c)
    return c[r, col]


@pytest.mark.slow
def test_planted_pseudo_documents_and_topics_are_recovered() -> None:
    """The parallel kernel recovers the planted topics and the documents' pseudo-documents.

    References: the oracle NMI of each document's MAP pseudo-document given the TRUE phi and
    theta (~0.95: a short document drawn mostly from one topic of its pair is ambiguous); a
    posterior sample's labels are draws, not MAP (oracle draws measured 0.93-0.95, fits 0.94-0.95).
    Topics: matched cosine to the true phi (fits 0.994-0.998); a lost or merged topic drops its
    cosine below 0.8, and merged pseudo-documents cost >= 0.1 of NMI (measured: 0.80-0.82). As
    for LDA, Gibbs can sit in a mode with two topics merged, so 4 chains run and the highest log
    joint is judged.
    """
    corpus, phi, theta, labels = _planted()
    ll = np.stack([np.log(theta @ phi[:, corpus.doc(m)]).sum(1) for m in range(corpus.num_docs)])
    oracle_nmi = normalized_mutual_info_score(labels, ll.argmax(1))
    params = ptm.check_params(ptm.Params(5, 10, alpha=0.1, beta=0.01, lam=0.1))
    data = ptm.prepare(corpus, params)

    @jax.jit
    def chain(key):
        st = ptm.init(jax.random.fold_in(key, 0), data, params)
        st = jax.lax.fori_loop(0, 150, lambda t, st: ptm.sweep(jax.random.fold_in(key, t + 1), st,
                                                                data, params)[0], st)
        return st, ptm.log_joint(st, data, params)

    runs = [chain(jax.random.key(20 + i)) for i in range(4)]
    best, _ = max(runs, key=lambda r: float(r[1]))
    _assert_consistent(best, params, data, batched=False)
    est = ptm.estimate(best, params)
    cos = _matched(np.asarray(est["phi"], np.float64), phi)
    fit_nmi = normalized_mutual_info_score(labels, np.asarray(est["pseudo_labels"]))
    assert oracle_nmi > 0.9
    assert cos.min() > 0.95, cos
    assert fit_nmi > oracle_nmi - 0.05, (fit_nmi, oracle_nmi)
    # theta_l of the recovered pseudo-documents: each puts ~1/2 on two topics
    top2 = np.sort(np.asarray(est["pseudo_doc_topic"]), axis=1)[:, -2:].sum(1)
    assert np.median(top2) > 0.9, top2


# ------------------------------------------------------------------------------------------
# parallel vs sequential: tests/test_ptm_quality.py (chains of both kernels from a common
# burned-in state, a two-sided bar from their standard error, the one-block negative control)


# ------------------------------------------------------------------------------------------
# facade: reproducibility, resume, read-outs


def _same_state(a: jt.FittedModel, b: jt.FittedModel) -> None:
    for x, y in zip(a.state, b.state):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("sampler", ["parallel", "sequential"])
def test_reproducible_and_resume_equals_uninterrupted(small_corpus, tmp_path, sampler):
    """Same seed => bitwise equal; fit 20 + save + load + resume 30 == fit 50 straight."""
    make = lambda: jt.PTM(num_topics=4, num_pseudo_docs=6, lam=0.3, sampler=sampler)
    straight = make().fit(small_corpus, num_sweeps=50, seed=3, eval_every=10, progress=False)
    again = make().fit(small_corpus, num_sweeps=50, seed=3, eval_every=25, progress=False)
    other = make().fit(small_corpus, num_sweeps=50, seed=4, eval_every=25, progress=False)
    _same_state(straight, again)
    assert not np.array_equal(straight.assignments, other.assignments)
    first = make().fit(small_corpus, num_sweeps=20, seed=3, eval_every=10, progress=False)
    first.save(tmp_path / "m.jtm")
    loaded = jt.load(tmp_path / "m.jtm")
    assert loaded.params == first.params and loaded.model == "ptm"
    np.testing.assert_array_equal(loaded.pseudo_labels, first.pseudo_labels)
    np.testing.assert_array_equal(loaded.pseudo_doc_topic, first.pseudo_doc_topic)
    np.testing.assert_array_equal(loaded.doc_topic, first.doc_topic)
    loaded.resume(small_corpus, num_sweeps=30, eval_every=10, progress=False)
    _same_state(straight, loaded)
    assert loaded.sweeps_done == 50
    assert [p[:3] for p in loaded.trace] == [p[:3] for p in straight.trace]


def test_read_outs_and_empty_document(tmp_path):
    """doc_topic / pseudo_doc_topic / pseudo_labels / topic_word shapes and normalisation; an
    empty document is accepted and reads its pseudo-document's theta; transform, summary."""
    corpus = _medium_corpus()
    m = jt.PTM(num_topics=4, num_pseudo_docs=3).fit(corpus, num_sweeps=10, seed=0, progress=False)
    d, k, p = corpus.num_docs, 4, 3
    assert m.doc_topic.shape == (d, k) and m.topic_word.shape == (k, corpus.num_words)
    assert m.pseudo_doc_topic.shape == (p, k) and m.pseudo_labels.shape == (d,)
    for x in (m.doc_topic, m.topic_word, m.pseudo_doc_topic):
        np.testing.assert_allclose(x.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(m.pseudo_labels, np.asarray(m.state.pseudo))
    assert set(m.pseudo_labels.tolist()) <= set(range(p))
    np.testing.assert_allclose(m.doc_topic[4], m.pseudo_doc_topic[m.pseudo_labels[4]], rtol=1e-6)
    assert m.num_topics == k and "pseudo_labels" in dir(m)
    assert m.summary().startswith("<PTM K=4")
    theta = m.transform(corpus, num_sweeps=2)
    assert theta.shape == (d, k) and np.allclose(theta.sum(1), 1.0, atol=1e-5)
    assert np.isfinite(m.log_joint_per_token())
    # a new document without tokens gets the prior mean sum_l p(l) theta_l, p(l) ∝ m_l + lam,
    # whatever the seed and its position (it was a Monte Carlo average of pseudo-document draws)
    weights = np.asarray(m.state.pseudo_docs, np.float64) + m.params.lam
    prior_mean = (weights / weights.sum()) @ m.pseudo_doc_topic
    np.testing.assert_allclose(theta[4], prior_mean, rtol=1e-5)
    for seed in (0, 1):
        new = jt.Corpus.from_token_lists([[], [], [corpus.vocab[0]]])
        empty = m.transform(new, num_sweeps=4, seed=seed)
        np.testing.assert_allclose(empty[:2], [prior_mean, prior_mean], rtol=1e-5)


# ------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("kwargs,field", [
    (dict(num_pseudo_docs=0), "num_pseudo_docs"),
    (dict(num_pseudo_docs=-3), "num_pseudo_docs"),
    (dict(num_pseudo_docs=True), "num_pseudo_docs"),
    (dict(num_pseudo_docs=2.5), "num_pseudo_docs"),
    (dict(num_pseudo_docs=2**31), "num_pseudo_docs"),      # review: an OverflowError in fit
    (dict(num_topics=99999999999), "num_topics"),
    (dict(num_topics=0), "num_topics"),
    (dict(num_topics=False), "num_topics"),
    (dict(lam=0.0), "lam"),
    (dict(lam=-0.1), "lam"),
    (dict(lam=float("nan")), "lam"),
    (dict(lam=float("inf")), "lam"),
    (dict(lam=1e-40), "lam"),
    (dict(lam="x"), "lam"),
    (dict(alpha=0.0), "alpha"),
    (dict(alpha=float("nan")), "alpha"),
    (dict(beta=-1.0), "beta"),
    (dict(beta=1e31), "beta"),
    (dict(sampler="uncollapsed"), "sampler"),
    (dict(num_blocks=0), "num_blocks"),
    (dict(chunk_size=True), "chunk_size"),
    (dict(draw="fast"), "draw"),
    (dict(draw="sparse", sampler="sequential"), "draw"),
    (dict(draw="sparse", seed_words={0: ["w0"]}), "draw"),
])
def test_bad_parameters_raise_naming_the_field(kwargs, field):
    args = dict(num_topics=3, num_pseudo_docs=4)
    args.update(kwargs)
    with pytest.raises(ParameterError, match=field):
        jt.PTM(**args)


# ------------------------------------------------------------------------------------------
# CLI


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_cli_fit_and_show(tmp_path):
    src = tmp_path / "short.txt"
    src.write_text("\n".join(["apples pears fruit juice", "cat mat sat hat", "", "mice rats cats chase",
                               "fruit salad apples"] * 8), encoding="utf-8")
    out = tmp_path / "run"
    r = _cli("fit", "--model", "ptm", "--num-topics", "3", "--num-pseudo-docs", "4", "--lam", "0.2",
             "--sweeps", "10", "--eval-every", "5", "--input", str(src), "--out", str(out),
             "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "PTM(num_topics=3, num_pseudo_docs=4" in r.stdout and "lam=0.2" in r.stdout
    assert "corpus: 40 documents" in r.stdout and "log-likelihood trace" in r.stdout
    shown = _cli("show", str(out / "model.jtm"))
    assert shown.returncode == 0 and "<PTM K=3" in shown.stdout
    bad = _cli("fit", "--model", "ptm", "--num-pseudo-docs", "0", "--sweeps", "1", "--input", str(src),
               "--out", str(tmp_path / "bad"), "--no-progress")
    assert bad.returncode == 2 and "--num-pseudo-docs" in bad.stderr and "Traceback" not in bad.stderr
    other = _cli("fit", "--model", "lda", "--num-pseudo-docs", "4", "--sweeps", "1", "--input",
                 str(src), "--out", str(tmp_path / "lda"), "--no-progress")
    assert other.returncode == 2 and "--num-pseudo-docs" in other.stderr
