"""Correctness of the DMM kernels (jaxtopics.models.dmm), the bar of DESIGN.md "How to test a sampler".

1. Exact enumeration: on corpora small enough to list all K^D clusterings, the final states of
   many independent chains (vmap) must follow the exact collapsed posterior p(z | d), for the
   sequential kernel and the parallel kernel in its exact limit (one document per block).
   Negative controls show the test rejects wrong samplers: the seed's "+ j + 1" typo,
   TopicModel4J's (M - 1 + k alpha) denominator, and a fully synchronous sweep.
2. Count tables stay consistent with z; `changed` counts moves; runs are reproducible.
3. Long documents (10,000 tokens) keep finite, exact log-space conditionals.

Statistical assertions have false-alarm rate <= FAMILY_ALPHA split over their statistics;
tolerances come from the number of chains (test_lda_kernels' helpers), never from the values.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mixture_enumeration import MixtureCase, dmm_enumeration, typo_log_weight
from test_lda_kernels import FAMILY_ALPHA, _pooled_chisquare_p, _tv, _tv_bound

from jaxtopics import Corpus
from jaxtopics.models import dmm

# K=2 over 7 documents (128 labelled states) and K=3 over 5 (243); repeated words inside
# documents (multiplicities up to 3) so the rising factorials of (24) matter.
CASES = {
    "K2D7": dict(docs=[[0, 0, 1], [1, 2], [0, 0, 0, 2], [3], [3, 1, 1], [2, 3], [0, 1]], k=2,
                 alpha=0.5, beta=0.3, chains=100_000),
    "K3D5": dict(docs=[[0, 0, 1], [1, 2, 2], [0, 3], [3, 3, 1], [2]], k=3, alpha=0.5, beta=0.3,
                 chains=200_000),
}
# Sweeps from the uniform random init: the exact law of systematic-scan Gibbs after them is
# within TV 1e-4 of the posterior (test_enumeration_sweeps_suffice, from the transition matrix),
# 200x below the test's TV resolution 0.02 and negligible in the chi-square (non-centrality
# n sum (law - p)^2 / p < 0.01).
SWEEPS = {"K2D7": 8, "K3D5": 6}
BIAS = 1e-4

KERNELS = {
    "sequential": dict(sampler="sequential"),
    "parallel-exact": dict(sampler="parallel", num_blocks=64),     # >= D: one document per block
    "parallel-sync": dict(sampler="parallel", num_blocks=1),       # negative control
}


@functools.lru_cache(maxsize=None)
def _case(name: str) -> MixtureCase:
    c = CASES[name]
    return MixtureCase(c["docs"], beta=c["beta"])


@functools.lru_cache(maxsize=None)
def _enum(name: str, k_alpha_bug: bool = False):
    c = CASES[name]
    return dmm_enumeration(_case(name), c["k"], c["alpha"], k_alpha_bug=k_alpha_bug)


def _params(name: str, kernel: str) -> dmm.Params:
    c = CASES[name]
    return dmm.check_params(dmm.Params(c["k"], alpha=c["alpha"], beta=c["beta"], **KERNELS[kernel]))


#: chains per vmapped call (per chain, 40k-chain batches run 1.7x slower than 10k on CPU)
BATCH = 10_000


def run_chains(model, params, data, num_chains: int, sweeps: int, seed: int):
    """Final states (numpy) of independent chains of `model`, each from its own init key;
    vmapped in batches of BATCH chains through one compiled function."""
    k_init, k_run = jax.random.split(jax.random.key(seed))
    init_keys = jax.random.split(k_init, num_chains)
    run_keys = jax.random.split(k_run, num_chains)

    def chain(ki, kr):
        st = model.init(ki, data, params)
        return jax.lax.fori_loop(
            0, sweeps, lambda t, s: model.sweep(jax.random.fold_in(kr, t), s, data, params)[0], st)

    run = jax.jit(jax.vmap(chain))
    parts = [jax.tree_util.tree_map(np.asarray, run(init_keys[i:i + BATCH], run_keys[i:i + BATCH]))
             for i in range(0, num_chains, BATCH)]
    return jax.tree_util.tree_map(lambda *x: np.concatenate(x), *parts)


def _run(params: dmm.Params, data: dmm.Data, num_chains: int, sweeps: int, seed: int):
    return run_chains(dmm, params, data, num_chains, sweeps, seed)


def _counts(name: str, final) -> np.ndarray:
    e = _enum(name)
    d = _case(name).d
    idx = [e.index[tuple(z)] for z in final.z[:, :d].tolist()]
    return np.bincount(idx, minlength=len(e.states))


@functools.lru_cache(maxsize=None)
def _empirical(name: str, kernel: str, num_chains: int | None = None) -> np.ndarray:
    params = _params(name, kernel)
    data = dmm.prepare(_case(name).corpus, params)
    n = num_chains or CASES[name]["chains"]
    final = _run(params, data, n, SWEEPS[name], 100 * list(CASES).index(name) + list(KERNELS).index(kernel))
    _assert_consistent(final, data, batched=True)
    return _counts(name, final)


def _accepts(counts: np.ndarray, law: np.ndarray) -> tuple[bool, str]:
    n = int(counts.sum())
    tv = _tv(counts / n, law)
    bound = _tv_bound(law, n, FAMILY_ALPHA / 2)
    p = _pooled_chisquare_p(counts, law)
    return tv < bound and p > FAMILY_ALPHA / 2, f"TV={tv:.4f} (bound {bound:.4f}), chi-square p={p:.3g}"


# ------------------------------------------------------------------------------------------
# the reference


@pytest.mark.parametrize("name", list(CASES))
def test_log_joint_matches_numpy_formula(name: str) -> None:
    e = _enum(name)
    params = _params(name, "sequential")
    data = dmm.prepare(_case(name).corpus, params)
    states = jnp.asarray(np.array(e.states, np.int32))
    got = jax.jit(jax.vmap(lambda z: dmm.log_joint(dmm.state_from_assignments(z, data, params),
                                                   data, params)))(states)
    np.testing.assert_allclose(np.asarray(got, np.float64), e.lj, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", list(CASES))
def test_enumeration_sweeps_suffice(name: str) -> None:
    """Design check: the transition matrix of one sweep leaves the posterior invariant, and from
    the uniform start SWEEPS[name] sweeps reach it (TV < BIAS, far below sampling error)."""
    e = _enum(name)
    post = e.posterior()
    p = e.sweep_matrix()
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    assert _tv(post @ p, post) < 1e-12
    start = np.full(len(post), 1.0 / len(post))
    law = e.law_after(start, p, SWEEPS[name])
    assert _tv(law, post) < BIAS
    assert CASES[name]["chains"] * np.sum((law - post) ** 2 / post) < 0.01


# ------------------------------------------------------------------------------------------
# the kernels against the posterior


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["sequential", "parallel-exact"])
@pytest.mark.parametrize("name", list(CASES))
def test_enumeration_matches_exact_posterior(name: str, kernel: str) -> None:
    post = _enum(name).posterior()
    counts = _empirical(name, kernel)
    assert _tv_bound(post, int(counts.sum()), FAMILY_ALPHA / 2) <= 0.02, "too few chains"
    ok, msg = _accepts(counts, post)
    assert ok, f"{kernel} on {name}: {msg}"


def test_negative_control_synchronous_sweep_is_rejected() -> None:
    """Power: one block holding every document (a fully synchronous update) has another
    stationary law; the test rejects it against the posterior and accepts it against its own
    exact law after the same sweeps (so the machinery measures what the kernel does)."""
    name = "K2D7"
    e = _enum(name)
    post = e.posterior()
    counts = _empirical(name, "parallel-sync", 20_000)
    law = e.law_after(np.full(len(post), 1.0 / len(post)), e.synchronous_matrix(CASES[name]["k"]),
                      SWEEPS[name])
    assert _tv(law, post) > 5 * _tv_bound(post, int(counts.sum()), FAMILY_ALPHA / 2)
    assert not _accepts(counts, post)[0]
    ok, msg = _accepts(counts, law)
    assert ok, msg


def _patched_counts(monkeypatch, name: str, attr: str, replacement, chains: int, seed: int):
    monkeypatch.setattr(dmm, attr, replacement)
    params = _params(name, "sequential")
    data = dmm.prepare(_case(name).corpus, params)
    return _counts(name, _run(params, data, chains, SWEEPS[name], seed))


def test_negative_control_seed_typo_is_rejected(monkeypatch) -> None:
    """Power: the seed's "+ j + 1" word product (the rising factorial starting at
    n + beta + 2) run through the real sweep is rejected; it matches its own exact law."""
    name = "K2D7"
    e = _enum(name)
    post = e.posterior()
    original = dmm.block_log_predictive

    def typo(rows, counts, totals, length, smoothing, total_smoothing, max_count=None):
        return original(rows, counts, totals, length, smoothing + 2.0, total_smoothing, max_count)

    counts = _patched_counts(monkeypatch, name, "block_log_predictive", typo, 20_000, 7)
    alpha = CASES[name]["alpha"]
    law = e.law_after(np.full(len(post), 1.0 / len(post)),
                      e.sweep_matrix(log_weight=typo_log_weight(_case(name), lambda m: m + alpha)),
                      SWEEPS[name])
    assert _tv(law, post) > 0.3
    assert not _accepts(counts, post)[0]
    ok, msg = _accepts(counts, law)
    assert ok, msg


@pytest.mark.slow
def test_negative_control_topicmodel4j_k_alpha_is_rejected(monkeypatch) -> None:
    """Power: TopicModel4J's prior factor (m_k,-m + alpha) / (M - 1 + k alpha) (k the cluster
    index) run through the real sweep: the test rejects it against the posterior (TV ~0.07, four
    times the bound) and accepts it against the posterior it does sample."""
    name = "K2D7"
    c = CASES[name]
    d = _case(name).d
    post = _enum(name).posterior()
    wrong = _enum(name, k_alpha_bug=True).posterior()

    def k_alpha(others, alpha):
        return (jnp.log(others.astype(jnp.float32) + alpha)
                - jnp.log(d - 1 + jnp.arange(others.shape[-1]) * alpha))

    counts = _patched_counts(monkeypatch, name, "prior_log_weight", k_alpha, c["chains"], 8)
    assert _tv(wrong, post) > 3 * _tv_bound(post, c["chains"], FAMILY_ALPHA / 2)
    assert not _accepts(counts, post)[0]
    ok, msg = _accepts(counts, wrong)
    assert ok, msg


# ------------------------------------------------------------------------------------------
# count invariants, reproducibility, long documents


def _assert_consistent(st: dmm.State, data: dmm.Data, batched: bool) -> None:
    d = data.items.shape[0] - 1
    k = st.cluster_docs.shape[-1]
    z = np.asarray(st.z)
    assert z.dtype == np.int32 and (z[..., :d] >= 0).all() and (z[..., :d] < k).all()
    params = dmm.Params(k)
    rebuild = functools.partial(dmm.state_from_assignments, data=data, params=params)
    ref = jax.vmap(rebuild)(jnp.asarray(z[..., :d])) if batched else rebuild(jnp.asarray(z[..., :d]))
    for name in ("cluster_docs", "word_cluster", "cluster_tokens"):
        got = np.asarray(getattr(st, name))
        assert got.dtype == np.int32 and (got >= 0).all(), name
        np.testing.assert_array_equal(got, np.asarray(getattr(ref, name)), err_msg=name)


@functools.lru_cache(maxsize=None)
def _medium_corpus() -> Corpus:
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 12, size=40)
    lengths[[4, 17]] = 0                                   # empty documents are allowed
    v = 30
    words = rng.integers(0, v - 3, size=int(lengths.sum())).astype(np.int32)     # 3 unused words
    return Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(lengths)]),
                              [f"w{i}" for i in range(v)])


MEDIUM = {
    "sequential": dict(sampler="sequential"),
    "parallel-7": dict(sampler="parallel", num_blocks=7, chunk_size=20),   # chunked, ragged tail
    "parallel-default": dict(sampler="parallel"),
}


@functools.lru_cache(maxsize=None)
def _medium(kernel: str):
    params = dmm.check_params(dmm.Params(5, alpha=0.2, beta=0.05, **MEDIUM[kernel]))
    data = dmm.prepare(_medium_corpus(), params)

    @jax.jit
    def run(key, state):
        def body(st, t):
            new, info = dmm.sweep(jax.random.fold_in(key, t), st, data, params)
            return new, (info.changed, jnp.sum(new.z != st.z, dtype=jnp.int32))
        return jax.lax.scan(body, state, jnp.arange(3))

    return params, data, run


@pytest.mark.parametrize("kernel", list(MEDIUM))
def test_counts_consistent_and_changed_counts_moves(kernel: str) -> None:
    params, data, run = _medium(kernel)
    state = dmm.init(jax.random.key(1), data, params)
    _assert_consistent(state, data, batched=False)
    final, (changed, differ) = run(jax.random.key(2), state)
    _assert_consistent(final, data, batched=False)
    np.testing.assert_array_equal(np.asarray(changed), np.asarray(differ))
    assert int(changed[0]) > 0
    corpus = _medium_corpus()
    np.testing.assert_array_equal(np.asarray(dmm.assignments(final)),
                                  np.asarray(final.z)[corpus.doc_index])
    rebuilt = dmm.rebuild(final._replace(cluster_docs=final.cluster_docs * 0), data, params)
    np.testing.assert_array_equal(np.asarray(rebuilt.cluster_docs), np.asarray(final.cluster_docs))


@pytest.mark.parametrize("kernel", list(MEDIUM))
def test_sweeps_reproducible_from_key(kernel: str) -> None:
    params, data, run = _medium(kernel)
    state = dmm.init(jax.random.key(3), data, params)
    a, _ = run(jax.random.key(4), state)
    b, _ = run(jax.random.key(4), state)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    c, _ = run(jax.random.key(5), state)
    assert (np.asarray(a.z) != np.asarray(c.z)).any()


def test_estimate_is_the_normalised_conditional() -> None:
    """theta[m] is (24) normalised (own document excluded), checked against the enumeration's
    site conditionals; phi rows and theta rows sum to 1."""
    name = "K3D5"
    e = _enum(name)
    params = _params(name, "sequential")
    data = dmm.prepare(_case(name).corpus, params)
    z = e.states[57]
    est = dmm.estimate(dmm.state_from_assignments(jnp.asarray(z), data, params), params)
    theta = np.asarray(est["theta"], np.float64)
    for i in range(len(z)):
        row = e.site_matrix(i)[e.index[z]]
        want = [row[e.index[z[:i] + (c,) + z[i + 1:]]] for c in range(CASES[name]["k"])]
        np.testing.assert_allclose(theta[i], want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(est["phi"]).sum(1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(est["labels"]), z)
    np.testing.assert_array_equal(np.asarray(est["cluster_sizes"]), np.bincount(z, minlength=3))
    assert int(est["num_active_clusters"]) == len(set(z))


def test_long_document_conditional_is_finite_and_exact() -> None:
    """A 10,000-token document (products of 10^4 factors underflow float32 at once) gets a finite
    conditional equal to the float64 log-space value, and lands with its twin."""
    rng = np.random.default_rng(0)
    long_a = rng.integers(0, 20, size=10_000)
    long_b = rng.integers(20, 40, size=10_000)
    docs = [long_a, long_b, long_a[:5000], long_b[:5000]]
    corpus = Corpus.from_arrays(np.concatenate(docs).astype(np.int32),
                                np.cumsum([0] + [len(d) for d in docs]), [f"w{i}" for i in range(40)])
    params = dmm.check_params(dmm.Params(2, alpha=0.1, beta=0.1, sampler="sequential"))
    data = dmm.prepare(corpus, params)
    state = dmm.state_from_assignments(jnp.asarray([0, 1, 0, 1]), data, params)
    theta = np.asarray(dmm.estimate(state, params)["theta"])
    assert np.isfinite(theta).all()
    np.testing.assert_allclose(theta[2:], [[1.0, 0.0], [0.0, 1.0]], atol=1e-6)

    # float64 reference of log P(doc 2 | cluster 0 without it) - log P(doc 2 | cluster 1)
    def log_pred(doc, cluster_docs):
        counts = np.bincount(np.concatenate(cluster_docs), minlength=40) if cluster_docs else np.zeros(40)
        mine = np.bincount(doc, minlength=40)
        num = sum(math.lgamma(counts[w] + 0.1 + mine[w]) - math.lgamma(counts[w] + 0.1) for w in range(40))
        total = counts.sum() + 4.0
        return num - (math.lgamma(total + len(doc)) - math.lgamma(total))

    want = log_pred(docs[2], [docs[0]]) - log_pred(docs[2], [docs[1], docs[3]])
    got = dmm.doc_log_predictive(state, data.items[2:3], data.counts[2:3], data.length[2:3],
                                 state.z[2:3], 0.1, data.count_range.shape[0])
    got = np.asarray(got, np.float64)[0]
    assert np.isfinite(got).all()
    assert abs((got[0] - got[1]) - want) < 1e-5 * abs(want)
    final, _ = jax.jit(lambda k, s: dmm.sweep(k, s, data, params))(jax.random.key(0), state)
    np.testing.assert_array_equal(np.asarray(final.z[:4]), [0, 1, 0, 1])
