"""Correctness of the LDA kernels (jaxtopics.models.lda), the bar of DESIGN.md "How to test a sampler".

1. Exact enumeration: on corpora small enough to list all K^N topic assignments, the final states
   of many independent chains (vmap) must follow the exact collapsed posterior p(z | w), for every
   kernel that claims exactness (sequential, uncollapsed, parallel with one token per block, with
   and without MH). A negative control shows that the test rejects a wrong sampler.
2. Count tables stay consistent with z; runs are reproducible from their key.
3. Planted topics of a synthetic corpus are recovered (Hungarian matching).

Every statistical assertion has a false-alarm rate <= FAMILY_ALPHA (1e-3) split over its
statistics; tolerances are derived from the number of draws, not from the observed values.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from jaxtopics import Corpus
from jaxtopics.datasets import synthetic_lda
from jaxtopics.models import lda, lda_exchange
from enumeration_stats import pooled_chisquare_p as _pooled_chisquare_p, tv as _tv, tv_bound as _tv_bound

FAMILY_ALPHA = 1e-3


# ------------------------------------------------------------------------------------------
# exact enumeration: reference posterior (numpy float64, independent of the package)


def _log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


def _np_log_joint(z, doc, word, num_docs, num_words, k, alpha, beta) -> float:
    """Collapsed log p(w, z) as a direct product of rising factorials (no lgamma):
    prod_d [prod_k alpha^(n_dk) / (K alpha)^(n_d)] * prod_k [prod_w beta^(n_kw) / (V beta)^(n_k)]."""
    ndk = np.zeros((num_docs, k), np.int64)
    nkw = np.zeros((k, num_words), np.int64)
    np.add.at(ndk, (doc, z), 1)
    np.add.at(nkw, (z, word), 1)
    total = 0.0
    for row in ndk:
        total += sum(_log_rising(alpha, c) for c in row) - _log_rising(k * alpha, row.sum())
    for row in nkw:
        total += sum(_log_rising(beta, c) for c in row) - _log_rising(num_words * beta, row.sum())
    return total


class Enumerated:
    """A tiny corpus with every assignment z listed and its exact posterior probability."""

    def __init__(self, docs, k, alpha, beta):
        self.k, self.alpha, self.beta = k, alpha, beta
        self.word = np.concatenate([np.asarray(d, np.int32) for d in docs])
        offsets = np.cumsum([0] + [len(d) for d in docs])
        self.num_words = int(self.word.max()) + 1
        self.corpus = Corpus.from_arrays(self.word, offsets,
                                         [f"w{v}" for v in range(self.num_words)])
        self.doc = self.corpus.doc_index
        self.n = self.word.size
        self.num_docs = len(docs)
        # state s <-> z via np.ravel_multi_index(z, (K,)*N): z[0] is the most significant digit
        self.states = np.array(list(itertools.product(range(k), repeat=self.n)), np.int32)

    def log_joints_np(self, alpha=None) -> np.ndarray:
        a = self.alpha if alpha is None else alpha
        return np.array([_np_log_joint(z, self.doc, self.word, self.num_docs, self.num_words,
                                       self.k, a, self.beta) for z in self.states])

    def posterior(self, log_joints: np.ndarray) -> np.ndarray:
        lj = np.asarray(log_joints, np.float64)
        p = np.exp(lj - lj.max())
        return p / p.sum()

    def index(self, z: np.ndarray) -> np.ndarray:
        return np.ravel_multi_index(tuple(np.asarray(z).T), (self.k,) * self.n)

    def site_conditionals(self, log_joints: np.ndarray) -> np.ndarray:
        """[N, S, K] p(z_i = k | z_-i) from the joint table (numpy, exact)."""
        out = np.empty((self.n, len(self.states), self.k))
        for i in range(self.n):
            z = np.repeat(self.states[:, None, :], self.k, axis=1)          # [S, K, N]
            z[:, :, i] = np.arange(self.k)
            lj = log_joints[self.index(z.reshape(-1, self.n))].reshape(-1, self.k)
            w = np.exp(lj - lj.max(1, keepdims=True))
            out[i] = w / w.sum(1, keepdims=True)
        return out

    def gibbs_sweep_matrix(self, log_joints: np.ndarray) -> np.ndarray:
        """Transition matrix of one systematic-scan Gibbs sweep in token order 0..N-1."""
        cond = self.site_conditionals(log_joints)
        s = len(self.states)
        total = np.eye(s)
        for i in range(self.n):
            step = np.zeros((s, s))
            for t in range(self.k):
                z = self.states.copy()
                z[:, i] = t
                step[np.arange(s), self.index(z)] = cond[i, :, t]
            total = total @ step
        return total

    def synchronous_sweep_matrix(self, log_joints: np.ndarray) -> np.ndarray:
        """All tokens drawn at once from their conditionals given the same z (one block)."""
        cond = self.site_conditionals(log_joints)
        p = np.ones((len(self.states), len(self.states)))
        for i in range(self.n):
            p *= cond[i][:, self.states[:, i]]
        return p


# Two cases: K=2 with N=7 tokens (128 states) and K=3 with N=5 (243 states); repeated words
# within and across documents. Chain counts make the TV bound of the cheap kernels <= 0.02; the
# uncollapsed kernel draws O(V K + D K) gamma variates per sweep (~1 us each on CPU), so it runs
# fewer chains and its TV bound (derived the same way) is looser; the chi-square test is the
# sharper of the two statistics in every case.
CASES = {
    "K2N7": dict(docs=[[0, 0, 1, 2], [1, 1, 2]], k=2, alpha=0.3, beta=0.2, chains=100_000),
    "K3N5": dict(docs=[[0, 1, 0], [2, 1]], k=3, alpha=0.3, beta=0.2, chains=200_000),
}
# K2N7 runs enough uncollapsed chains for the TV bound to reach 0.02 (the issue's bar); K3N5's
# 243 states would need ~160k (a minute of gamma draws), so there the derived bound applies.
UNCOLLAPSED_CHAINS = {"K2N7": 84_000, "K3N5": 40_000}
# Sweeps per chain from a uniform random init. Exact systematic-scan Gibbs is within TV 1e-8 of
# the posterior after 25 (K2N7) / 15 (K3N5) sweeps (test_enumeration_sweeps_suffice computes it).
# Computed offline from transition matrices: an exact MH-within-Gibbs with the same doc/word
# proposals (own token excluded from the proposal counts) is within TV 5e-8 / 2e-13; the
# uncollapsed kernel's z-chain (matrix estimated by Monte Carlo over theta, phi; second
# eigenvalue 0.94 / 0.90, the slowest here) is within 1.5e-3 / 3e-4, 10x below sampling noise.
SWEEPS = {"K2N7": 25, "K3N5": 15}

KERNELS = {
    "sequential": dict(sampler="sequential"),
    "uncollapsed": dict(sampler="uncollapsed"),
    # num_blocks = N ("tokens", set per case): one token per block, so the block-start counts are
    # the current counts (more blocks would only add empty ones: 64 made these runs ~10x longer)
    "parallel-gibbs": dict(sampler="parallel", mh_steps=0, num_blocks="tokens"),
    "parallel-mh": dict(sampler="parallel", mh_steps=2, num_blocks="tokens"),
    # negative control: one block holding every token = fully synchronous update (not exact)
    "parallel-sync": dict(sampler="parallel", mh_steps=0, num_blocks=1),
    # the exact parallel kernel with the sparse draw (ops.sparse_draw): the same law
    "parallel-sparse": dict(sampler="parallel", mh_steps=0, num_blocks="tokens", draw="sparse"),
}


@functools.lru_cache(maxsize=None)
def _case(name: str) -> Enumerated:
    c = CASES[name]
    return Enumerated(c["docs"], c["k"], c["alpha"], c["beta"])


def _multi_sweep(params: lda.Params, num_sweeps: int):
    def run(key, state, data):
        def body(t, st):
            return lda.sweep(jax.random.fold_in(key, t), st, data, params)[0]
        return jax.lax.fori_loop(0, num_sweeps, body, state)
    return run


@functools.lru_cache(maxsize=None)
def _chains(case: str, kernel: str, num_chains: int | None = None):
    """Final states (numpy) of independent chains, each from its own random init."""
    e = _case(case)
    c = CASES[case]
    settings = {**KERNELS[kernel]}
    if settings.get("num_blocks") == "tokens":
        settings["num_blocks"] = e.n
    params = lda.Params(e.k, alpha=e.alpha, beta=e.beta, **settings)
    data = lda.prepare(e.corpus, params)
    if num_chains is None:
        num_chains = UNCOLLAPSED_CHAINS[case] if kernel == "uncollapsed" else c["chains"]
    seed = 1000 * list(CASES).index(case) + list(KERNELS).index(kernel)
    k_init, k_run = jax.random.split(jax.random.key(seed))
    init_keys = jax.random.split(k_init, num_chains)
    run_keys = jax.random.split(k_run, num_chains)
    states = jax.jit(jax.vmap(functools.partial(lda.init, params=params), in_axes=(0, None)))(
        init_keys, data)
    final = jax.jit(jax.vmap(_multi_sweep(params, SWEEPS[case]), in_axes=(0, 0, None)))(
        run_keys, states, data)
    return jax.tree_util.tree_map(np.asarray, final), params, data


def _empirical(case: str, kernel: str, num_chains: int | None = None) -> np.ndarray:
    return _histogram(case, _chains(case, kernel, num_chains)[0])


def _histogram(case: str, final: lda.State) -> np.ndarray:
    """How many chains ended in each enumerated state."""
    e = _case(case)
    return np.bincount(e.index(final.z[:, :e.n]), minlength=len(e.states))


@functools.lru_cache(maxsize=None)
def _truth(case: str) -> np.ndarray:
    """Posterior from lda.log_joint (float32) on every state, cross-checked against numpy."""
    e = _case(case)
    params = lda.Params(e.k, alpha=e.alpha, beta=e.beta)
    data = lda.prepare(e.corpus, params)
    lj = jax.jit(jax.vmap(lambda z: lda.log_joint(lda.state_from_assignments(z, data, params),
                                                  data, params)))(jnp.asarray(e.states))
    return np.asarray(lj, np.float64)


@pytest.mark.parametrize("case", list(CASES))
def test_log_joint_matches_numpy_formula(case: str) -> None:
    e = _case(case)
    ref = e.log_joints_np()
    got = _truth(case)
    # float32 lgamma differences: |error| ~ 1e-6 * |terms| (terms ~ 10-30 here)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(e.posterior(got), e.posterior(ref), rtol=1e-3, atol=1e-7)


@pytest.mark.parametrize("case", list(CASES))
def test_enumeration_sweeps_suffice(case: str) -> None:
    """Design check: from the uniform init, exact sequential-scan Gibbs is at the posterior
    (TV < 1e-6, far below sampling error) after SWEEPS[case] sweeps; and the transition matrix
    leaves the posterior invariant (checks the reference machinery itself)."""
    e = _case(case)
    lj = e.log_joints_np()
    post = e.posterior(lj)
    p = e.gibbs_sweep_matrix(lj)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    assert _tv(post @ p, post) < 1e-12
    start = np.full(len(post), 1.0 / len(post))
    assert _tv(start @ np.linalg.matrix_power(p, SWEEPS[case]), post) < 1e-6


EXACT_KERNELS = ["sequential", "uncollapsed", "parallel-gibbs", "parallel-mh", "parallel-sparse"]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", EXACT_KERNELS)
@pytest.mark.parametrize("case", list(CASES))
def test_enumeration_matches_exact_posterior(case: str, kernel: str) -> None:
    """The chains' final states follow the exact posterior; and every chain's count tables equal
    a recount of its z (batched over all chains)."""
    e = _case(case)
    post = e.posterior(_truth(case))
    final, params, data = _chains(case, kernel)
    _assert_consistent(final, params, data, batched=True)
    counts = _histogram(case, final)
    n = int(counts.sum())
    tv = _tv(counts / n, post)
    bound = _tv_bound(post, n, FAMILY_ALPHA / 2)
    p_chi2 = _pooled_chisquare_p(counts, post)
    if kernel != "uncollapsed" or case == "K2N7":
        assert bound <= 0.02, "test design: too few chains for TV resolution 0.02"
    assert tv < bound and p_chi2 > FAMILY_ALPHA / 2, (
        f"{kernel} on {case}: TV={tv:.4f} (bound {bound:.4f}), chi-square p={p_chi2:.3g}, "
        f"{n} chains x {SWEEPS[case]} sweeps")


def test_negative_control_synchronous_kernel_is_rejected() -> None:
    """Power: a fully synchronous sweep (parallel, num_blocks=1, tokens sharing documents) has a
    different stationary law. The test must reject it against the posterior, while accepting it
    against its own exact T-step distribution (so the machinery measures what the kernel does)."""
    case = "K2N7"
    e = _case(case)
    lj = e.log_joints_np()
    post = e.posterior(lj)
    final, params, data = _chains(case, "parallel-sync", 20_000)
    _assert_consistent(final, params, data, batched=True)      # its counts are right, its law not
    counts = _histogram(case, final)
    n = int(counts.sum())
    emp = counts / n
    sync = e.synchronous_sweep_matrix(lj)
    np.testing.assert_allclose(sync.sum(1), 1.0, atol=1e-12)
    law = np.full(len(post), 1.0 / len(post)) @ np.linalg.matrix_power(sync, SWEEPS[case])
    bound = _tv_bound(post, n, FAMILY_ALPHA / 2)
    assert _tv(law, post) > 5 * bound            # the wrong kernel is far off (about 0.47)
    assert _tv(emp, post) > bound
    assert _pooled_chisquare_p(counts, post) < 1e-12
    assert _tv(emp, law) < _tv_bound(law, n, FAMILY_ALPHA / 2)
    assert _pooled_chisquare_p(counts, law) > FAMILY_ALPHA / 2


@pytest.mark.slow
def test_negative_control_perturbed_target_is_rejected() -> None:
    """Power: the exact sequential kernel's draws are rejected against the posterior under
    3 * alpha (a wrong target only TV ~0.1 away)."""
    case = "K2N7"
    e = _case(case)
    wrong = e.posterior(e.log_joints_np(alpha=3 * e.alpha))
    right = e.posterior(e.log_joints_np())
    counts = _empirical(case, "sequential")
    n = int(counts.sum())
    bound = _tv_bound(wrong, n, FAMILY_ALPHA / 2)
    assert _tv(wrong, right) > 3 * bound
    assert _tv(counts / n, wrong) > bound
    assert _pooled_chisquare_p(counts, wrong) < 1e-12


# ------------------------------------------------------------------------------------------
# count invariants and reproducibility on a medium corpus (empty document, unused words)


def _assert_consistent(st: lda.State, params: lda.Params, data: lda.Data, batched: bool) -> None:
    z_all = np.asarray(st.z)
    n = data.num_tokens
    k = params.num_topics
    z = z_all[..., :n]
    assert z_all.dtype == np.int32
    assert (z >= 0).all() and (z < k).all()
    assert (z_all[..., n] == 0).all(), "dummy slot z[N] must stay 0"
    rebuild = functools.partial(lda.state_from_assignments, data=data, params=params)
    ref = jax.vmap(rebuild)(jnp.asarray(z)) if batched else rebuild(jnp.asarray(z))
    for name in ("doc_topic", "word_topic", "topic"):
        got = np.asarray(getattr(st, name))
        assert got.dtype == np.int32
        assert (got >= 0).all(), name
        np.testing.assert_array_equal(got, np.asarray(getattr(ref, name)), err_msg=name)
    assert (np.asarray(st.topic).sum(-1) == n).all()
    assert (np.asarray(st.doc_topic).sum((-1, -2)) == n).all()


@functools.lru_cache(maxsize=None)
def _medium_corpus() -> Corpus:
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 40, size=12)
    lengths[4] = 0                                    # an empty document
    v = 25
    words = rng.integers(0, v - 3, size=int(lengths.sum())).astype(np.int32)   # 3 unused words
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return Corpus.from_arrays(words, offsets, [f"w{i}" for i in range(v)])


MEDIUM_KERNELS = {
    "sequential": dict(sampler="sequential"),
    "uncollapsed": dict(sampler="uncollapsed", chunk_size=50),          # chunked, ragged tail
    "parallel-gibbs-7": dict(sampler="parallel", mh_steps=0, num_blocks=7, chunk_size=16),
    "parallel-mh-7": dict(sampler="parallel", mh_steps=2, num_blocks=7),
    "parallel-mh-1": dict(sampler="parallel", mh_steps=1, num_blocks=1),
    "parallel-default": dict(sampler="parallel"),
    "parallel-sparse": dict(sampler="parallel", draw="sparse"),
    "parallel-sparse-7": dict(sampler="parallel", num_blocks=7, chunk_size=16, draw="sparse"),
}


@functools.lru_cache(maxsize=None)
def _medium_runner(kernel: str):
    params = lda.Params(4, alpha=0.2, beta=0.05, **MEDIUM_KERNELS[kernel])
    data = lda.prepare(_medium_corpus(), params)

    @jax.jit
    def run(key, state, data):
        def body(st, t):
            new, info = lda.sweep(jax.random.fold_in(key, t), st, data, params)
            return new, (info.changed, jnp.sum(new.z != st.z, dtype=jnp.int32))
        state, (changed, differ) = jax.lax.scan(body, state, jnp.arange(3))
        return state, list(zip(changed, differ))

    return params, data, run


@pytest.mark.parametrize("kernel", list(MEDIUM_KERNELS))
def test_counts_consistent_after_sweeps(kernel: str) -> None:
    params, data, run = _medium_runner(kernel)
    state = lda.init(jax.random.key(1), data, params)
    _assert_consistent(state, params, data, batched=False)
    final, infos = run(jax.random.key(2), state, data)
    _assert_consistent(final, params, data, batched=False)
    for changed, differ in infos:                  # SweepInfo.changed = tokens whose topic moved
        assert int(changed) == int(differ)
    assert int(infos[0][0]) > 0
    assert lda.assignments(final).shape == (_medium_corpus().num_tokens,)
    np.testing.assert_array_equal(np.asarray(lda.assignments(final)), np.asarray(final.z)[:-1])


@pytest.mark.parametrize("kernel", list(MEDIUM_KERNELS))
def test_sweeps_reproducible_from_key(kernel: str) -> None:
    params, data, run = _medium_runner(kernel)
    state = lda.init(jax.random.key(3), data, params)
    a, _ = run(jax.random.key(4), state, data)
    b, _ = run(jax.random.key(4), state, data)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    c, _ = run(jax.random.key(5), state, data)
    assert (np.asarray(a.z) != np.asarray(c.z)).any()
    again = lda.init(jax.random.key(3), data, params)
    np.testing.assert_array_equal(np.asarray(again.z), np.asarray(state.z))


def _equations(jaxpr) -> int:
    """Equations of a jaxpr, counted into every sub-jaxpr (loop bodies, branches)."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                sub = getattr(sub, "jaxpr", sub)             # a ClosedJaxpr's jaxpr
                if hasattr(sub, "eqns"):
                    total += _equations(sub)
    return total


def test_many_mh_steps_run_as_a_loop_with_the_same_chain(monkeypatch) -> None:
    """Beyond lda._MH_UNROLL cycles the MH cycles run as a loop: the program no longer grows
    with mh_steps (unrolled, 64 cycles compiled for minutes), and the chain is the unrolled
    one, bitwise."""
    corpus = _medium_corpus()

    def program(steps: int):
        params = lda.check_params(lda.Params(4, alpha=0.1, beta=0.05, mh_steps=steps))
        data = lda.prepare(corpus, params)
        state = lda.init(jax.random.key(0), data, params)
        return params, data, state

    sizes = {}
    for steps in (lda._MH_UNROLL + 1, 64):
        params, data, state = program(steps)
        sizes[steps] = _equations(jax.make_jaxpr(
            lambda k, s: lda.sweep(k, s, data, params))(jax.random.key(1), state).jaxpr)
    assert sizes[lda._MH_UNROLL + 1] == sizes[64]

    params, data, state = program(6)
    looped = jax.jit(lambda k, s: lda.sweep(k, s, data, params)[0])(jax.random.key(1), state)
    monkeypatch.setattr(lda, "_MH_UNROLL", 6)
    unrolled = jax.jit(lambda k, s: lda.sweep(k, s, data, params)[0])(jax.random.key(1), state)
    assert (np.asarray(looped.z) != np.asarray(state.z)).any()
    for x, y in zip(looped, unrolled):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# ------------------------------------------------------------------------------------------
# planted-topic recovery


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def _matched(phi_est: np.ndarray, phi_true: np.ndarray) -> np.ndarray:
    c = _cosines(phi_est, phi_true)
    r, col = linear_sum_assignment(-c)
    return c[r, col]


@pytest.mark.slow
def test_planted_topic_recovery_parallel() -> None:
    """K=5 topics with distinct head words (max cosine between true topics ~0.16), small alpha.

    Reference: phi estimated from the TRUE assignments (the oracle; ~0.999 mean cosine, limited
    by finite data only). A posterior sample of a working sampler is as close, up to its own
    posterior noise (same order as the oracle's shortfall, ~1e-3); a lost or merged topic costs
    about (1 - 0.16) / 5 ~ 0.17 of the mean and drops that topic's cosine far below 0.9. Gibbs
    on LDA can sit in such a local mode for hundreds of sweeps (seen here for the exact
    sequential kernel too, ~1 run in 6), so 4 chains run and the one with the highest log joint
    is judged (all 4 stuck: ~1e-3), as a user would pick among restarts.
    """
    k = 5
    syn = synthetic_lda(num_docs=300, num_words=200, num_topics=k, mean_doc_length=60,
                        alpha=0.1, beta=0.05, seed=1)
    params = lda.Params(k, alpha=0.1, beta=0.05, sampler="parallel")
    data = lda.prepare(syn.corpus, params)
    assert (_cosines(syn.phi, syn.phi) - np.eye(k)).max() < 0.3       # well separated
    oracle = lda.state_from_assignments(jnp.asarray(syn.assignments), data, params)
    oracle_cos = _matched(np.asarray(lda.estimate(oracle, params)["phi"], np.float64), syn.phi)

    run_keys = jax.random.split(jax.random.key(11), 4)
    init_keys = jax.random.split(jax.random.key(12), 4)
    starts = jax.vmap(functools.partial(lda.init, params=params), in_axes=(0, None))(init_keys, data)
    finals = jax.jit(jax.vmap(_multi_sweep(params, 150), in_axes=(0, 0, None)))(run_keys, starts, data)
    lj = np.asarray(jax.vmap(functools.partial(lda.log_joint, data=data, params=params))(finals))
    best = int(np.argmax(lj))
    pick = jax.tree_util.tree_map(lambda x: x[best], finals)
    fit_cos = _matched(np.asarray(lda.estimate(pick, params)["phi"], np.float64), syn.phi)
    start0 = jax.tree_util.tree_map(lambda x: x[0], starts)
    random_cos = _matched(np.asarray(lda.estimate(start0, params)["phi"], np.float64), syn.phi)

    assert fit_cos.mean() > oracle_cos.mean() - 0.02, (fit_cos, oracle_cos)
    assert fit_cos.min() > 0.9, fit_cos                          # no topic lost or merged
    assert fit_cos.mean() > random_cos.mean() + 0.15, (fit_cos, random_cos)
    _assert_consistent(pick, params, data, batched=False)


@pytest.mark.parametrize("settings", [dict(), dict(mh_steps=2), dict(sampler="sequential"),
                                      dict(draw="sparse")])
def test_driver_chunks_are_the_plain_sweeps_bitwise(settings):
    """fit.run_chunk carries the exact parallel kernel's z in block layout across its sweeps
    (lda.to_carry / sweep_carry / from_carry); every kernel's chain is still the one of
    per-sweep lda.sweep calls, bitwise."""
    from jaxtopics.fit import run_chunk

    corpus = synthetic_lda(num_docs=60, num_words=80, num_topics=4, mean_doc_length=30,
                           seed=2).corpus
    params = lda.Params(num_topics=4, num_blocks=8, **settings)
    data = lda.prepare(corpus, params)
    state = lda.init(jax.random.key(0), data, params)
    key = jax.random.key(1)
    expected = state
    for t in range(2, 6):
        expected = lda.sweep(jax.random.fold_in(key, t), expected, data, params)[0]
    got, _, _, _, _, _ = run_chunk(lda, params, data, jax.tree.map(jnp.copy, state), key,
                                jnp.int32(2), jnp.int32(6))
    for name, a, b in zip(lda.State._fields, got, expected):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


def _one_frequent_word_corpus(count: int) -> Corpus:
    """Word 0 occurs `count` times, words 1..5 20,000 times in all, in documents of 500 tokens."""
    rng = np.random.default_rng(0)
    words = np.concatenate([np.zeros(count, np.int32), rng.integers(1, 6, 20000).astype(np.int32)])
    rng.shuffle(words)
    offsets = np.append(np.arange(0, words.size, 500), words.size)
    return Corpus.from_arrays(words, offsets, [f"w{i}" for i in range(6)])


def test_narrow_carry_is_the_int32_chain_bitwise_up_to_its_limit():
    """On the CPU the exact parallel kernel carries n_dk and n_kw as uint16 when no cell can
    exceed 65535 (``Data.count_bound``): the chain is the one of int32 tables, bitwise, here
    with a word of exactly 65,535 tokens, and a cell holding all of them survives the round
    trip. One more token and the tables stay int32."""
    from jaxtopics.fit import run_chunk

    narrow = jnp.uint16 if jax.default_backend() == "cpu" else jnp.int32
    corpus = _one_frequent_word_corpus(65535)
    params = lda.Params(num_topics=3, num_blocks=8)
    data = lda.prepare(corpus, params)
    assert data.count_bound == 65535
    assert lda.prepare(_one_frequent_word_corpus(65536), params).count_bound == 65536
    wide = dataclasses.replace(data, count_bound=65536)
    full = lda.state_from_assignments(jnp.zeros(corpus.num_tokens, jnp.int32), data, params)
    assert int(full.word_topic[0, 0]) == 65535
    carry = lda.to_carry(full, data, params)
    assert carry.word_topic.dtype == carry.doc_topic.dtype == narrow
    assert lda.to_carry(full, wide, params).word_topic.dtype == jnp.int32
    for a, b in zip(lda.from_carry(carry, data, params), full):
        assert a.dtype == b.dtype          # int32 z and counts, float32 priors
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    state = lda.init(jax.random.key(0), data, params)
    key = jax.random.key(1)
    got = [run_chunk(lda, params, d, jax.tree.map(jnp.copy, state), key, jnp.int32(0),
                     jnp.int32(3))[0] for d in (data, wide)]
    for name, a, b in zip(lda.State._fields, *got):
        assert a.dtype == (jnp.float32 if name in ("alpha", "beta") else jnp.int32), name
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    _assert_consistent(got[0], params, data, batched=False)


@pytest.mark.parametrize("k", [1, 50, 46340, 46341])
def test_exchanged_moves_unpack_to_what_was_packed(k):
    """A sharded sweep exchanges a block's moves as (word, old K + new) while K^2 fits in int32
    and as (word, old, new) beyond; slots without a token (word V) unpack with weight 0."""
    rng = np.random.default_rng(k)
    v = 7
    word, old, new = (jnp.asarray(rng.integers(0, hi, 500), jnp.int32) for hi in (v + 1, k, k))
    packed = lda_exchange.pack_moves(word, old, new, k)
    assert len(packed) == (2 if k <= 46340 else 3)
    got = lda_exchange.unpack_moves(packed, v, k)
    for a, b in zip(got, (word, old, new, (word < v).astype(jnp.int32))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_driver_chunks_hold_no_per_token_temporary_beyond_the_carried_topics():
    """The memory budget of an exact parallel fit: besides Data (8 bytes per token) and the
    donated State, a jitted chunk of sweeps (fit.run_chunk) holds one [N] int32 buffer, z in
    block layout (4 bytes per token), plus per-block working arrays that do not grow with N.
    By XLA's own accounting (memory_analysis): before the carry layout a chunk held 8 bytes per
    token (a block-layout copy of z plus a transpose in every sweep): 10.0 here, 5.0 now."""
    from jaxtopics.fit import run_chunk

    corpus = synthetic_lda(num_docs=4000, num_words=2000, num_topics=8, mean_doc_length=100,
                           seed=0).corpus
    n = corpus.num_tokens
    params = lda.Params(num_topics=8)
    data = lda.prepare(corpus, params)
    state = lda.init(jax.random.key(0), data, params)
    width = data.word.shape[1]
    compiled = run_chunk.lower(lda, params, data, state, jax.random.key(1), jnp.int32(0),
                               jnp.int32(3)).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    tables = sum(x.nbytes for x in state[1:])
    per_block = 4 * 4 * width * params.num_topics      # four [C, K] float32 arrays of a block
    assert temp <= 4 * n + tables + per_block, (temp / n, tables / n, per_block / n)
