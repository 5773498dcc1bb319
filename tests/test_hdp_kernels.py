"""Correctness of the HDP CRF kernels (jaxtopics.models.hdp, samplers "crf_sequential" and "crf"):
exact enumeration of the CRF posterior (the direct-assignment kernels: test_hdp_direct_kernels.py).

On a tiny corpus (2 documents, 5 tokens, V=3) every state of the Chinese restaurant franchise is
listed by brute force: each document's seating (a set partition of its tokens) and the dishes (a
set partition of all tables). The collapsed joint p(w, t, k) is computed here in numpy from the
CRP formulas (independently of the package), and summed over the table configurations that give
each partition of the tokens into topics. The final states of >= 20k independent vmapped chains
must follow it: total variation below a bound derived from the number of chains (<= 0.02) and a
chi-square test, for the sequential kernel, the parallel kernel in its exact limit (one token per
table-step block, one table per dish-step group), with and without split-merge moves; the
split-merge moves alone must leave the exact posterior over full CRF states invariant; a kernel
without the "-1" (the token left in its own counts) is rejected; and chains started at capacity
1 and grown by the driver's overflow protocol reach the same posterior.

Every statistical assertion has a false-alarm rate <= FAMILY_ALPHA split over its statistics.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from jaxtopics import Corpus
from jaxtopics.fit import run_sweeps
from jaxtopics.models import hdp
from enumeration_stats import pooled_chisquare_p as _pooled_chisquare_p, tv as _tv, tv_bound as _tv_bound

FAMILY_ALPHA = 1e-3
DOCS = [[0, 1, 0], [1, 2]]
ALPHA, GAMMA, BETA = 1.0, 0.7, 0.3
CHAINS = 60_000
SWEEPS = 8           # from both starts the chains are at the posterior within noise by 3-5
CONC_CHAINS = 30_000  # the gamma/beta draws of the concentration updates are slow under vmap


# ------------------------------------------------------------------------------------------
# brute-force CRF posterior (numpy, float64, no package code)


def _set_partitions(items):
    """Every set partition of `items` (lists of blocks)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]
        yield [[first]] + part


def _log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


def _canonical(labels) -> tuple:
    """A partition as the first position of each element's block."""
    first = {}
    return tuple(first.setdefault(x, i) for i, x in enumerate(labels))


class CRF:
    """Every (seating, dish partition) of the tiny corpus with its log p(w, t, k)."""

    def __init__(self, docs, alpha, gamma, beta):
        self.docs = docs
        self.word = np.concatenate([np.asarray(d, np.int32) for d in docs])
        offsets = np.cumsum([0] + [len(d) for d in docs])
        self.v = int(self.word.max()) + 1
        self.n = self.word.size
        self.corpus = Corpus.from_arrays(self.word, offsets, [f"w{i}" for i in range(self.v)])
        self.doc = self.corpus.doc_index
        self.states = []          # (t [N] table slot per token, dish [N] topic per token, log p)
        self.shape = []           # (tables, topics, log p without the alpha and gamma terms)
        token_ids = [list(range(offsets[j], offsets[j + 1])) for j in range(len(docs))]
        seatings = [list(_set_partitions(ids)) for ids in token_ids]
        for seating in _product(seatings):
            tables = [(j, blk) for j, doc_tables in enumerate(seating) for blk in doc_tables]
            for dishes in _set_partitions(list(range(len(tables)))):
                t = np.zeros(self.n, np.int32)
                z = np.zeros(self.n, np.int32)
                dish_of = {}
                for k, blk in enumerate(dishes):
                    for u in blk:
                        dish_of[u] = k
                for u, (j, blk) in enumerate(tables):
                    slot = seating[j].index(blk)
                    t[blk] = slot
                    z[blk] = dish_of[u]
                self.states.append((t, z, self._log_joint(seating, tables, dishes, alpha,
                                                          gamma, beta)))
                self.shape.append((len(tables), len(dishes), self._log_joint(
                    seating, tables, dishes, 1.0, 1.0, beta) - self._concentration_terms(
                    len(tables), len(dishes), 1.0, 1.0)))
        lj = np.array([s[2] for s in self.states])
        p = np.exp(lj - lj.max())
        self.full_post = p / p.sum()
        self.full_keys = [self.full_key(s[0], s[1]) for s in self.states]
        self.part_keys = sorted({_canonical(s[1]) for s in self.states})
        self.part_index = {k: i for i, k in enumerate(self.part_keys)}
        self.part_post = np.zeros(len(self.part_keys))
        for (t, z, _), p in zip(self.states, self.full_post):
            self.part_post[self.part_index[_canonical(z)]] += p
        self.full_index = {k: i for i, k in enumerate(self.full_keys)}

    def _concentration_terms(self, tables: int, topics: int, alpha: float, gamma: float) -> float:
        """The alpha and gamma terms of log p(w, t, k): alpha^T prod_j 1 / alpha^(n_j) and
        gamma^K / gamma^(m)."""
        return (tables * math.log(alpha) - sum(_log_rising(alpha, len(d)) for d in self.docs)
                + topics * math.log(gamma) - _log_rising(gamma, tables))

    def integrated(self, shape: float, rate: float):
        """Posterior over full states and over topic partitions with alpha, gamma ~ Gamma(shape,
        rate) integrated out (1-d quadratures), and the posterior means of alpha and gamma."""
        lens = [len(d) for d in self.docs]

        def f_alpha(a, t):
            return math.exp(t * math.log(a) - sum(_log_rising(a, n) for n in lens)
                            + stats.gamma.logpdf(a, shape, scale=1 / rate))

        def f_gamma(g, k, m):
            return math.exp(k * math.log(g) - _log_rising(g, m)
                            + stats.gamma.logpdf(g, shape, scale=1 / rate))

        cache = {}

        def moments(kind, *key):
            if (kind, key) not in cache:
                f = f_alpha if kind == "a" else f_gamma
                z0 = integrate.quad(lambda x: f(x, *key), 0, np.inf, limit=200)[0]
                z1 = integrate.quad(lambda x: x * f(x, *key), 0, np.inf, limit=200)[0]
                cache[(kind, key)] = (z0, z1 / z0)
            return cache[(kind, key)]

        w = np.array([math.exp(base) * moments("a", t)[0] * moments("g", k, t)[0]
                      for t, k, base in self.shape])
        post = w / w.sum()
        mean_a = float(sum(p * moments("a", t)[1] for p, (t, _, _) in zip(post, self.shape)))
        mean_g = float(sum(p * moments("g", k, t)[1] for p, (t, k, _) in zip(post, self.shape)))
        part = np.zeros(len(self.part_keys))
        for (t, z, _), p in zip(self.states, post):
            part[self.part_index[_canonical(z)]] += p
        return post, part, mean_a, mean_g

    def _log_joint(self, seating, tables, dishes, alpha, gamma, beta) -> float:
        total = 0.0
        for doc_tables in seating:
            n_j = sum(len(b) for b in doc_tables)
            total += len(doc_tables) * math.log(alpha) - _log_rising(alpha, n_j)
            total += sum(math.lgamma(len(b)) for b in doc_tables)
        total += len(dishes) * math.log(gamma) - _log_rising(gamma, len(tables))
        total += sum(math.lgamma(len(blk)) for blk in dishes)
        for blk in dishes:
            words = np.concatenate([self.word[tables[u][1]] for u in blk])
            total += sum(_log_rising(beta, c) for c in np.bincount(words, minlength=self.v))
            total -= _log_rising(self.v * beta, len(words))
        return total

    def full_key(self, t, z) -> tuple:
        seat = tuple(_canonical([(int(d), int(x)) for d, x in zip(self.doc, t)]))
        return seat + _canonical(z)

    def part_counts(self, z: np.ndarray) -> np.ndarray:
        idx = [self.part_index[_canonical(row)] for row in z]
        return np.bincount(idx, minlength=len(self.part_keys))

    def full_counts(self, t: np.ndarray, z: np.ndarray) -> np.ndarray:
        idx = [self.full_index[self.full_key(a, b)] for a, b in zip(t, z)]
        return np.bincount(idx, minlength=len(self.full_keys))


def _product(lists):
    if not lists:
        yield []
        return
    for x in lists[0]:
        for rest in _product(lists[1:]):
            yield [x] + rest


@functools.lru_cache(maxsize=None)
def _crf() -> CRF:
    return CRF(DOCS, ALPHA, GAMMA, BETA)


# ------------------------------------------------------------------------------------------
# chains


KERNELS = {
    "sequential": dict(sampler="crf_sequential", split_merge_steps=0),
    # alpha, gamma resampled (Gamma(1, 1) priors): the target integrates them out
    "sequential-sm-conc": dict(sampler="crf_sequential", split_merge_steps=2,
                               resample_concentrations=True),
    # exact limit of the parallel kernel: one token per block, one table per dish group
    "parallel-exact-sm": dict(sampler="crf", split_merge_steps=2, num_blocks=64, dish_groups=64),
}
#: capacities large enough that no chain can overflow: T = longest document + 1, K = N + 1
CAPACITY = dict(table_capacity=4, topic_capacity=6)


def _params(kernel: str, **extra) -> hdp.Params:
    kw = dict(alpha=ALPHA, gamma=GAMMA, beta=BETA, **KERNELS[kernel])
    kw.update(CAPACITY)
    kw.update(extra)
    return hdp.check_params(hdp.Params(**kw))


def _run(params: hdp.Params, states, data, keys, num_sweeps: int, sweep_fn=hdp.sweep):
    def chain(key, st):
        def body(t, s):
            new, info = sweep_fn(jax.random.fold_in(key, t), s, data, params)
            return jax.tree.map(lambda a, b: jnp.where(info.overflow, a, b), s, new)
        return jax.lax.fori_loop(0, num_sweeps, body, st)
    return jax.jit(jax.vmap(chain))(keys, states)


def _init_chains(params: hdp.Params, data, key, num_chains: int):
    """Half the chains start with one topic, half with 4 random ones (two far-apart starts)."""
    k1, k2 = jax.random.split(key)
    half = num_chains // 2
    a = jax.vmap(lambda k: hdp.init(k, data, params._replace(initial_topics=1)))(
        jax.random.split(k1, half))
    b = jax.vmap(lambda k: hdp.init(k, data, params._replace(initial_topics=4)))(
        jax.random.split(k2, num_chains - half))
    return jax.tree.map(lambda x, y: jnp.concatenate([x, y]), a, b)


@functools.lru_cache(maxsize=None)
def _final(kernel: str, exclude_self: bool = True):
    e = _crf()
    params = _params(kernel)
    data = hdp.prepare(e.corpus, params)
    seed = list(KERNELS).index(kernel) + (0 if exclude_self else 100)
    k_init, k_run = jax.random.split(jax.random.key(seed))
    chains = CONC_CHAINS if params.resample_concentrations else CHAINS
    states = _init_chains(params, data, k_init, chains)
    fn = hdp.sweep if exclude_self else functools.partial(hdp._sweep, exclude_self=False)
    final = _run(params, states, data, jax.random.split(k_run, chains), SWEEPS, fn)
    return jax.tree.map(np.asarray, final), params, data


def _check(counts: np.ndarray, post: np.ndarray, what: str, tv_bar: float | None = 0.02) -> None:
    n = int(counts.sum())
    tv = _tv(counts / n, post)
    bound = _tv_bound(post, n, FAMILY_ALPHA / 2)
    p = _pooled_chisquare_p(counts, post)
    if tv_bar is not None:
        assert bound <= tv_bar, f"test design: too few chains for TV resolution {tv_bar}"
    assert tv < bound and p > FAMILY_ALPHA / 2, (
        f"{what}: TV={tv:.4f} (bound {bound:.4f}), chi-square p={p:.3g}, {n} chains")


# ------------------------------------------------------------------------------------------
# tests


def test_log_joint_matches_bruteforce() -> None:
    """hdp.log_joint (float32, lgamma differences) equals the numpy CRF joint on every state,
    and rebuilt states are consistent."""
    e = _crf()
    params = _params("sequential")
    data = hdp.prepare(e.corpus, params)
    t = jnp.asarray(np.stack([s[0] for s in e.states]))
    z = np.stack([s[1] for s in e.states])
    d_cap = len(DOCS)
    dish = np.zeros((len(e.states), d_cap, CAPACITY["table_capacity"]), np.int32)
    dish[np.arange(len(e.states))[:, None], e.doc[None, :], np.asarray(t)] = z
    build = jax.vmap(lambda tt, dd: hdp.state_from_seating(
        tt, dd, data, CAPACITY["topic_capacity"], alpha=ALPHA, gamma=GAMMA))
    states = build(t, jnp.asarray(dish))
    got = np.asarray(jax.vmap(lambda s: hdp.log_joint(s, data, params))(states), np.float64)
    ref = np.array([s[2] for s in e.states])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    assert len(e.part_keys) == 52           # Bell(5) partitions of the tokens into topics
    assert abs(e.part_post.sum() - 1) < 1e-12


@pytest.mark.parametrize("kernel", [  # the parallel chains' time is sweeps (slow: compiled optimised)
    pytest.param(k, marks=pytest.mark.slow) if k.startswith("parallel") else k for k in KERNELS])
def test_enumeration_matches_exact_posterior(kernel: str) -> None:
    e = _crf()
    final, params, data = _final(kernel)
    z = final.z[:, :e.n]
    full_post, part_post = e.full_post, e.part_post
    if params.resample_concentrations:
        full_post, part_post, mean_a, mean_g = e.integrated(params.prior_shape, params.prior_rate)
        for name, x, mean in (("alpha", final.alpha, mean_a), ("gamma", final.gamma, mean_g)):
            se = float(np.std(x)) / math.sqrt(x.size)
            z_score = (float(np.mean(x)) - mean) / se
            assert abs(z_score) < stats.norm.isf(FAMILY_ALPHA / 8), (
                f"{kernel}: posterior mean of {name} {np.mean(x):.4f} vs {mean:.4f} (z={z_score:.1f})")
    _check(e.part_counts(z), part_post, f"{kernel}: partition into topics",
           tv_bar=None if params.resample_concentrations else 0.02)
    # the full CRF state (seating + dishes) too, by chi-square (a finer law, more cells)
    _check(e.full_counts(final.t[:, :e.n], z), full_post, f"{kernel}: full state", tv_bar=None)
    # every chain's counts are those of its seating
    ref = jax.vmap(lambda s: hdp.rebuild(s, data, params))(jax.tree.map(jnp.asarray, final))
    for name in hdp.State._fields:
        np.testing.assert_array_equal(getattr(final, name), np.asarray(getattr(ref, name)), name)


@pytest.mark.slow
def test_negative_control_without_self_exclusion_is_rejected() -> None:
    """Power: the sequential kernel without the "-1" (each token left in its own table's and
    topic's counts in the table step, each table in its dish's counts in the dish step) is
    rejected (measured: TV ~0.03 against a bound of 0.018, chi-square p ~1e-40)."""
    e = _crf()
    final, _, _ = _final("sequential", exclude_self=False)
    counts = e.part_counts(final.z[:, :e.n])
    n = int(counts.sum())
    assert _tv(counts / n, e.part_post) > _tv_bound(e.part_post, n, FAMILY_ALPHA / 2)
    assert _pooled_chisquare_p(counts, e.part_post) < 1e-12


@pytest.mark.slow
def test_split_merge_leaves_posterior_invariant() -> None:
    """Chains started at the exact posterior over full CRF states (drawn from the enumeration)
    and moved by split-merge steps alone stay at it (full states and topic partitions)."""
    e = _crf()
    params = _params("sequential-sm-conc")._replace(resample_concentrations=False)
    data = hdp.prepare(e.corpus, params)
    rng = np.random.default_rng(11)
    pick = rng.choice(len(e.states), size=CHAINS, p=e.full_post)
    t = np.stack([e.states[i][0] for i in pick])
    z = np.stack([e.states[i][1] for i in pick])
    dish = np.zeros((CHAINS, len(DOCS), CAPACITY["table_capacity"]), np.int32)
    dish[np.arange(CHAINS)[:, None], e.doc[None, :], t] = z
    states = jax.vmap(lambda tt, dd: hdp.state_from_seating(
        tt, dd, data, CAPACITY["topic_capacity"], alpha=ALPHA, gamma=GAMMA))(
        jnp.asarray(t), jnp.asarray(dish))

    def moves(key, st):
        st, accepted, _ = hdp._split_merge(key, st, data, params, 6)
        return hdp._finish(st, data), accepted

    final, accepted = jax.jit(jax.vmap(moves))(jax.random.split(jax.random.key(5), CHAINS), states)
    final = jax.tree.map(np.asarray, final)
    assert int(np.sum(accepted)) > CHAINS // 4, "split-merge moves are almost never accepted"
    # the moves changed many states, and the law is still the posterior
    moved = np.mean([e.full_key(a, b) != e.full_key(c, d) for a, b, c, d in
                     zip(t[:2000], z[:2000], final.t[:2000, :e.n], final.z[:2000, :e.n])])
    assert moved > 0.1
    _check(e.full_counts(final.t[:, :e.n], final.z[:, :e.n]), e.full_post, "split-merge: full",
           tv_bar=None)
    _check(e.part_counts(final.z[:, :e.n]), e.part_post, "split-merge: partition")


GROWTH_CHAINS = 20_000


class _BatchedHDP:
    """hdp over a batch of chains, as a model for the driver (``fit.run_sweeps``): one overflow
    in any chain discards the sweep of every chain and grows them all."""

    @staticmethod
    def sweep(key, st, data, params):
        new, info = jax.vmap(lambda k, s: hdp.sweep(k, s, data, params))(
            jax.random.split(key, GROWTH_CHAINS), st)
        return new, info._replace(changed=jnp.sum(info.changed), overflow=jnp.any(info.overflow))

    grow = staticmethod(hdp.grow)

    @staticmethod
    def log_joint(state, data, params):
        return jnp.mean(jax.vmap(lambda s: hdp.log_joint(s, data, params))(state))


def test_growth_from_capacity_one_reaches_the_posterior() -> None:
    """Chains started with one topic slot and one table slot per document, grown by the
    driver's overflow protocol (discard the sweep, grow, redo it with the same key), follow the
    exact posterior (TV bound from the number of chains, chi-square)."""
    e = _crf()
    params = _params("sequential")._replace(table_capacity=1, topic_capacity=1)
    data = hdp.prepare(e.corpus, params)
    states = jax.vmap(lambda k: hdp.init(k, data, params))(
        jax.random.split(jax.random.key(3), GROWTH_CHAINS))
    assert states.word_topic.shape[-1] == 1 and states.table_count.shape[-1] == 1
    final, _ = run_sweeps(_BatchedHDP, params, data, states, jax.random.key(4), start=0,
                          num_sweeps=SWEEPS, num_tokens=e.n, eval_every=SWEEPS, progress=False)
    assert final.word_topic.shape[-1] >= 4 and final.table_count.shape[-1] >= 2
    final = jax.tree.map(np.asarray, final)
    _check(e.part_counts(final.z[:, :e.n]), e.part_post, "grown chains", tv_bar=None)
