"""Correctness of HDP's direct-assignment kernels (jaxtopics.models.hdp_direct, samplers
"sequential" and "parallel"; Teh et al. 2006, sec. 5.3).

* Exact enumeration: on the tiny corpus of test_hdp_kernels.py (2 documents, 5 tokens, V=3) the
  true HDP posterior of the tokens' topic partition is the CRF posterior summed over seatings
  (computed there in numpy, independently of the package). The final z of independent vmapped
  chains must follow it (TV below its sampling bound and a chi-square test): the exact
  sequential kernel, and the parallel kernel with one token per block with split-merge moves
  and sampled concentrations (the target then integrates alpha and gamma out; their posterior
  means checked too). Controls rejected by the same bar: the prior beta_k without its alpha
  factor, and Antoniak's table draw with ranks off by one.
* The blocked kernel's one-sweep law: 5 tokens in 2 blocks of 3 and 2, from two fixed states
  (z, beta). The law of z after one parallel sweep is enumerated in float64 numpy: each
  block's tokens draw at once from (Z) at the block's start, each opener of a new topic its own
  free slot and its own stick share b ~ Beta(1, gamma) (gamma = 1: b uniform, integrated by
  Gauss-Legendre quadrature). 20k chains from each start must match it; controls: the exact
  sequential kernel's chains are rejected by that bar, the one-token-per-block parallel
  kernel's match the sequential law, and the blocked law differs by far from the law in which a
  block's openers share one new topic.
* log_joint equals log p(w, z, beta) computed here in numpy.
* The draw over the first slots only (`_draw_slots`): its width, and the exact posterior with
  40 slots of which 16 are drawn; the split-merge anchors' law (SM3) with the candidate tokens
  and with the running count (all pairs of 30 tokens); merges refused by their bound make the
  moves of attempts that draw every proposal; the moves' gathers of materialised values (`ops.gather_materialised`)
  equal plain gathers.

FAMILY_ALPHA = 1e-3 is split over the file's statistics (Bonferroni).
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from enumeration_stats import pooled_chisquare_p, tv, tv_bound
from jaxtopics.models import hdp, hdp_direct as hd
from test_hdp_kernels import CRF, DOCS

FAMILY_ALPHA = 1e-3
DELTA = FAMILY_ALPHA / 16          # enumeration 4 x 2, blocked laws 4 x 2 (the narrowed draw's
                                   # and the anchors' 3 statistics at the same level)
ALPHA, GAMMA, BETA = 2.0, 0.7, 0.3
CHAINS = 40_000
SWEEPS = 8
CAPACITY = 12                      # N = 5 topics live, 5 more opened in a sweep, 1 free slot


@functools.lru_cache(maxsize=None)
def _posterior() -> CRF:
    return CRF(DOCS, ALPHA, GAMMA, BETA)


def _accepts(counts: np.ndarray, probs: np.ndarray) -> tuple[bool, str]:
    n = int(counts.sum())
    d = tv(counts / n, probs)
    bound = tv_bound(probs, n, DELTA)
    p = pooled_chisquare_p(counts, probs)
    return d < bound and p > DELTA, f"TV={d:.4f} (bound {bound:.4f}), chi-square p={p:.3g}, {n} chains"


def _params(**kw) -> hdp.Params:
    base = dict(alpha=ALPHA, gamma=GAMMA, beta=BETA, sampler="sequential", split_merge_steps=0,
                topic_capacity=CAPACITY)
    return hdp.check_params(hdp.Params(**{**base, **kw}))


@functools.lru_cache(maxsize=None)
def _final(control: str | None = None, chains: int = CHAINS, sweeps: int = SWEEPS, **kw):
    e = _posterior()
    params = _params(**kw)
    data = hd.prepare(e.corpus, params)

    def chain(key):
        k_init, k_run = jax.random.split(key)
        k0 = jax.random.randint(k_init, (), 0, 2)       # half from 1 topic, half from 4
        st1 = hd.init(k_init, data, params._replace(initial_topics=1))
        st4 = hd.init(k_init, data, params._replace(initial_topics=4))
        st = jax.tree.map(lambda a, b: jnp.where(k0 == 0, a, b), st1, st4)

        def body(t, c):
            s, overflow = c
            new, info = hd._sweep(jax.random.fold_in(k_run, t), s, data, params, control=control)
            return new, overflow | info.overflow
        return jax.lax.fori_loop(0, sweeps, body, (st, jnp.bool_(False)))

    final, overflow = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(34), chains))
    assert not np.asarray(overflow).any(), "test design: capacity too small"
    return jax.tree.map(np.asarray, final), params, data


def test_log_joint_is_the_joint_of_words_topics_and_weights() -> None:
    """hd.log_joint = log p(w, z, beta | alpha, gamma) (module docstring), computed in numpy on
    random states; rebuild gives the counts back."""
    e = _posterior()
    params = _params()
    data = hd.prepare(e.corpus, params)
    rng = np.random.default_rng(0)
    for _ in range(20):
        z = rng.integers(0, 3, e.n)
        used = np.unique(z)
        w = rng.dirichlet(np.ones(len(used) + 1))
        weight = np.zeros(CAPACITY)
        weight[used] = w[:-1]
        st = hd.init(jax.random.key(0), data, params)
        st = hd.rebuild(st._replace(z=jnp.asarray(np.append(z, 0), jnp.int32),
                                    topic_weight=jnp.asarray(weight, jnp.float32),
                                    new_weight=jnp.float32(w[-1])), data, params)
        ref = 0.0
        for j, doc in enumerate(DOCS):
            zs = z[e.doc == j]
            ref -= sum(math.log(ALPHA + r) for r in range(len(doc)))
            for k in used:
                ref += sum(math.log(ALPHA * weight[k] + r) for r in range(int(np.sum(zs == k))))
        for k in used:
            counts = np.bincount(e.word[z == k], minlength=e.v)
            ref += sum(sum(math.log(BETA + r) for r in range(c)) for c in counts)
            ref -= sum(math.log(e.v * BETA + r) for r in range(int(counts.sum())))
        ref += len(used) * math.log(GAMMA) + (GAMMA - 1) * math.log(w[-1]) - np.log(w[:-1]).sum()
        assert abs(float(hd.log_joint(st, data, params)) - ref) < 1e-4 * max(1, abs(ref))


def _check_posterior(final, what: str, post: np.ndarray) -> None:
    e = _posterior()
    ok, msg = _accepts(e.part_counts(final.z[:, :e.n]), post)
    assert ok, f"{what}: {msg}"


def test_sequential_matches_the_exact_posterior() -> None:
    final, params, data = _final()
    _check_posterior(final, "sequential", _posterior().part_post)
    ref = jax.vmap(lambda s: hd.rebuild(s, data, params))(jax.tree.map(jnp.asarray, final))
    for name in ("z", "doc_topic", "word_topic", "topic"):
        np.testing.assert_array_equal(getattr(final, name), np.asarray(getattr(ref, name)), name)
    w = final.topic_weight
    assert np.all((w > 0) == (final.topic > 0))                     # free slots weigh 0
    np.testing.assert_allclose(w.sum(1) + final.new_weight, 1.0, atol=1e-5)


@pytest.mark.slow
def test_parallel_one_token_per_block_with_moves_and_concentrations_matches() -> None:
    """The parallel kernel in its exact limit (64 blocks >= 5 tokens), 2 split-merge moves in
    every sweep, alpha and gamma drawn (Gamma(1, 1) priors): the posterior with them integrated
    out, and their posterior means (z < 4.4). 16 sweeps: the concentrations start away from
    their posterior and, measured at 30k chains, the partitions' chi-square p was 4e-4 after 8
    sweeps (below this file's per-statistic level, 6.25e-5, only by luck) and 0.06-0.9 from 10
    on."""
    e = _posterior()
    final, params, _ = _final(sampler="parallel", num_blocks=64, split_merge_steps=2,
                              split_merge_every=1, resample_concentrations=True, chains=30_000,
                              sweeps=16)
    _, post, mean_a, mean_g = e.integrated(params.prior_shape, params.prior_rate)
    _check_posterior(final, "parallel, exact limit", post)
    for name, x, mean in (("alpha", final.alpha, mean_a), ("gamma", final.gamma, mean_g)):
        z = (float(np.mean(x)) - mean) / (float(np.std(x)) / math.sqrt(x.size))
        assert abs(z) < stats.norm.isf(DELTA / 2), f"{name}: {np.mean(x):.4f} vs {mean:.4f} (z={z:.1f})"


@pytest.mark.slow
@pytest.mark.parametrize("control", ["no_alpha", "rank_plus_one"])
def test_wrong_kernels_are_rejected(control: str) -> None:
    """Power: the prior beta_k without alpha (alpha = 2 here) and Antoniak's ranks off by one
    (too few tables, so beta too flat) fail the bar (measured TV 0.14 and 0.10 against a bound
    of ~0.03 at 20k chains)."""
    final, _, _ = _final(control, chains=20_000)
    e = _posterior()
    ok, msg = _accepts(e.part_counts(final.z[:, :e.n]), e.part_post)
    assert not ok, f"control {control} accepted: {msg}"


# ------------------------------------------------------------------------------------------
# the blocked kernel's one-sweep law


LAW_DOCS = [[0, 1, 0], [1, 2]]
LAW_ALPHA, LAW_GAMMA, LAW_BETA = 1.5, 1.0, 0.3       # gamma = 1: the stick shares are uniform
LAW_BLOCKS = 2                                       # blocks [0, 2, 4] and [1, 3]
LAW_CAPACITY = 8
#: (z, beta over the first slots, beta_u): every used topic weighed, the rest free
LAW_STARTS = {
    "one-topic": ((0, 0, 0, 0, 0), (0.6,), 0.4),
    "split": ((0, 1, 0, 1, 1), (0.5, 0.3), 0.2),
}
LAW_CHAINS = 20_000
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(6)   # exact: the law is a polynomial in b
_NODES, _WEIGHTS = (_NODES + 1) / 2, _WEIGHTS / 2          # on [0, 1]


class DirectLaw:
    """The law of z after one parallel sweep of the direct-assignment kernel (numpy, float64)."""

    def __init__(self):
        self.word = np.concatenate([np.asarray(d) for d in LAW_DOCS])
        self.doc = np.concatenate([[j] * len(d) for j, d in enumerate(LAW_DOCS)])
        self.v = int(self.word.max()) + 1
        offsets = np.cumsum([0] + [len(d) for d in LAW_DOCS])
        from jaxtopics import Corpus
        self.corpus = Corpus.from_arrays(self.word.astype(np.int32), offsets,
                                         [f"w{i}" for i in range(self.v)])

    def _weights(self, z, beta, beta_u, i) -> np.ndarray:
        """(Z) of token i against state (z, beta): LAW_CAPACITY slots, the new-topic mass on
        the first free slot."""
        a, eta, v = LAW_ALPHA, LAW_BETA, self.v
        others = np.arange(len(z)) != i
        out = np.zeros(LAW_CAPACITY)
        n_k = np.bincount(z[others], minlength=LAW_CAPACITY)
        free = [k for k in range(LAW_CAPACITY) if n_k[k] == 0 and beta[k] == 0
                and not np.any(z == k)]
        for k in range(LAW_CAPACITY):
            n_dk = np.sum((z == k) & others & (self.doc == self.doc[i]))
            n_kw = np.sum((z == k) & others & (self.word == self.word[i]))
            out[k] = (n_dk + a * beta[k]) * (n_kw + eta) / (n_k[k] + v * eta)
        out[free[0]] = a * beta_u / v
        return out / out.sum(), free[0]

    def block(self, z, beta, beta_u, tokens, shared_new=False) -> list:
        """[(probability, z, beta, beta_u)] after the block `tokens` drawn at once; openers
        integrated over their stick shares (quadrature nodes become separate outcomes)."""
        z = np.asarray(z)
        draws = [self._weights(z, beta, beta_u, i) for i in tokens]
        free = [k for k in range(LAW_CAPACITY) if beta[k] == 0 and not np.any(z == k)]
        out = []
        for choice in itertools.product(range(LAW_CAPACITY), repeat=len(tokens)):
            p = np.prod([w[c] for (w, _), c in zip(draws, choice)])
            if p == 0:
                continue
            new_z = z.copy()
            openers = [j for j, ((_, slot), c) in enumerate(zip(draws, choice)) if c == slot]
            for j, c in enumerate(choice):
                new_z[tokens[j]] = c
            if not openers:
                out.append((p, new_z, beta, beta_u))
                continue
            n_open = 1 if shared_new else len(openers)
            for r, j in enumerate(openers):
                new_z[tokens[j]] = free[0 if shared_new else r]
            for nodes in itertools.product(range(len(_NODES)), repeat=n_open):
                b = _NODES[list(nodes)]
                q = np.prod(_WEIGHTS[list(nodes)])
                nb, left = list(beta), beta_u
                for r in range(n_open):
                    nb[free[r]] = left * b[r]
                    left *= 1 - b[r]
                out.append((p * q, new_z.copy(), tuple(nb), left))
        return out

    def sweep(self, start: str, blocks, shared_new=False) -> dict:
        z0, b0, bu = LAW_STARTS[start]
        beta = tuple(list(b0) + [0.0] * (LAW_CAPACITY - len(b0)))
        states = [(1.0, np.asarray(z0), beta, bu)]
        for tokens in blocks:
            states = [(p * q, z, b, u) for p, z0_, b0_, u0 in states
                      for q, z, b, u in self.block(z0_, b0_, u0, tokens, shared_new)]
        law: dict = {}
        for p, z, _, _ in states:
            law[tuple(int(x) for x in z)] = law.get(tuple(int(x) for x in z), 0.0) + p
        return law


BLOCKED = [[0, 2, 4], [1, 3]]
SEQUENTIAL = [[0], [1], [2], [3], [4]]


@functools.lru_cache(maxsize=None)
def _law(start: str, blocks: str, shared_new: bool = False) -> dict:
    return DirectLaw().sweep(start, BLOCKED if blocks == "blocked" else SEQUENTIAL, shared_new)


@functools.lru_cache(maxsize=None)
def _law_chains(sampler: str, num_blocks: int) -> dict:
    law = DirectLaw()
    params = hdp.check_params(hdp.Params(alpha=LAW_ALPHA, gamma=LAW_GAMMA, beta=LAW_BETA,
                                         sampler=sampler, num_blocks=num_blocks,
                                         split_merge_steps=0, topic_capacity=LAW_CAPACITY))
    data = hd.prepare(law.corpus, params)
    if sampler == "parallel" and num_blocks == LAW_BLOCKS:
        assert np.asarray(data.blocks).tolist() == [[0, 2, 4], [1, 3, 5]]   # 5 = padding
    starts = []
    for name, (z0, b0, bu) in LAW_STARTS.items():
        st = hd.init(jax.random.key(0), data, params)
        weight = np.zeros(LAW_CAPACITY, np.float32)
        weight[:len(b0)] = b0
        starts.append(hd.rebuild(st._replace(
            z=jnp.asarray(np.append(z0, 0), jnp.int32), topic_weight=jnp.asarray(weight),
            new_weight=jnp.float32(bu)), data, params))
    stacked = jax.tree.map(lambda *x: jnp.repeat(jnp.stack(x), LAW_CHAINS, axis=0), *starts)
    keys = jax.random.split(jax.random.key(35), LAW_CHAINS * len(starts))
    final, info = jax.jit(jax.vmap(lambda k, s: hd.sweep(k, s, data, params)))(keys, stacked)
    assert not np.asarray(info.overflow).any(), "test design: capacity too small"
    z = np.asarray(final.z)[:, :5]
    return {name: [tuple(r) for r in z[i * LAW_CHAINS:(i + 1) * LAW_CHAINS].tolist()]
            for i, name in enumerate(LAW_STARTS)}


def _histogram(keys, law: dict) -> tuple[np.ndarray, np.ndarray]:
    index = {k: i for i, k in enumerate(law)}
    counts = np.bincount([index.get(k, len(law)) for k in keys], minlength=len(law) + 1)
    return counts, np.append(np.array(list(law.values())), 0.0)


def _law_tv(a: dict, b: dict) -> float:
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


@pytest.mark.parametrize("start", list(LAW_STARTS))
def test_blocked_sweep_follows_its_law(start: str) -> None:
    """20k one-sweep chains of the parallel kernel (2 blocks) follow the enumerated blocked
    law; the law is a distribution and differs by far (TV > 0.1) from the exact sequential
    sweep's and from the law with a block's openers sharing one new topic."""
    law = _law(start, "blocked")
    sequential = _law(start, "sequential")
    assert abs(sum(law.values()) - 1) < 1e-9 and abs(sum(sequential.values()) - 1) < 1e-9
    assert _law_tv(law, sequential) > 0.1
    assert _law_tv(law, _law(start, "blocked", shared_new=True)) > 0.05
    ok, msg = _accepts(*_histogram(_law_chains("parallel", LAW_BLOCKS)[start], law))
    assert ok, f"parallel, start {start}: {msg}"


@pytest.mark.parametrize("start", list(LAW_STARTS))
def test_sequential_sweep_follows_the_sequential_law_and_fails_the_blocked_one(start: str) -> None:
    """The exact kernel's chains, and the parallel kernel's with one token per block, follow the
    enumerated sequential law; the exact kernel's fail the blocked law's bar (the control)."""
    sequential = _law(start, "sequential")
    exact = _law_chains("sequential", LAW_BLOCKS)[start]
    ok, msg = _accepts(*_histogram(exact, sequential))
    assert ok, f"sequential, start {start}: {msg}"
    ok, msg = _accepts(*_histogram(_law_chains("parallel", 64)[start], sequential))
    assert ok, f"parallel with one token per block, start {start}: {msg}"
    ok, msg = _accepts(*_histogram(exact, _law(start, "blocked")))
    assert not ok, f"control accepted, start {start}: {msg}"


def test_compact_split_merge_proposals_are_the_full_ones() -> None:
    """The split-merge attempts on the pair's tokens gathered into N/4-token arrays
    (``hdp_direct``'s default, `_compact_proposal`) make exactly the moves of the attempts on all
    tokens (the same draws): 10 attempts from a 40-topic random state, 8 seeds."""
    from jaxtopics.datasets import synthetic_lda
    from jaxtopics.models.hdp_split_merge import split_merge_moves

    corpus = synthetic_lda(num_docs=100, num_words=200, num_topics=6, mean_doc_length=30,
                           alpha=0.2, beta=0.05, seed=0).corpus
    params = hdp.check_params(hdp.Params(split_merge_steps=10, topic_capacity=32))
    data = hd.prepare(corpus, params)
    st = hd.init(jax.random.key(0), data, params._replace(initial_topics=40, topic_capacity=64))
    n = corpus.num_tokens
    log_pi = jnp.where(st.topic_weight > 0, jnp.log(st.topic_weight), -jnp.inf)

    def moves(compact):
        return jax.jit(jax.vmap(lambda k: split_merge_moves(
            k, k, st.z[:n], st.word_topic, st.topic, log_pi, (st.alpha, st.gamma), data, params,
            10, corpus.num_docs, None, launch_rounds=hd.LAUNCH_ROUNDS, compact=compact)))

    keys = jax.random.split(jax.random.key(1), 8)
    full, small = moves(None)(keys), moves(n // hd.COMPACT_SHARE)(keys)
    for name, a, b in zip(("z", "word_topic", "topic", "log_pi", "changed", "accepted"), full, small):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    assert int(np.sum(full[5])) >= 1


def test_the_draw_runs_over_the_narrowest_width_holding_the_used_slots() -> None:
    """(Z) runs over the first `width` slots only when every used slot (tokens or a weight)
    and the new-topic slot lie below it (`_draw_slots`): a slot past it with a weight, or the
    new-topic slot past it, widens the draw."""
    assert hd._draw_widths(12) == (12,)
    assert hd._draw_widths(64) == (16, 24, 32, 48, 64)
    assert hd._draw_widths(100) == (16, 24, 32, 48, 64, 96, 100)
    widths = hd._draw_widths(64)

    def width(used_slots, slot_new):
        used = jnp.zeros(64, bool).at[jnp.asarray(used_slots, jnp.int32)].set(True)
        return widths[int(hd._draw_slots(used, jnp.int32(slot_new)))]

    assert width([0, 1, 2], 3) == 16
    assert width([0, 1, 15], 2) == 16
    assert width([0, 16], 1) == 24                 # a used slot at 16 needs 17 slots
    assert width([0, 1], 23) == 24
    assert width([0, 1], 24) == 32                 # the new-topic slot counts
    assert width([0, 47], 1) == 48
    assert width([63], 0) == 64
    assert width([0, 1], -1) == 16                 # no free slot (overflow reported)


def test_sequential_over_a_narrowed_draw_matches_the_exact_posterior() -> None:
    """The exact kernel with 40 topic slots, so that (Z) runs over the first 16 of them
    (`_draw_slots`): the same posterior as the draw over every slot."""
    final, _, _ = _final(topic_capacity=40, chains=20_000)
    _check_posterior(final, "sequential, 16 of 40 slots drawn", _posterior().part_post)


@pytest.mark.parametrize("candidates", [2, 256])
def test_split_merge_anchors_follow_the_selection_law(candidates: int, monkeypatch) -> None:
    """(SM3) on one device: a uniform; b uniform among the other tokens of a's topic with
    probability 1/2, else among all other tokens. With 2 candidate tokens for b the running
    count finds b in most attempts that want one of a's topic, with 256 the candidates do:
    both give the law the acceptance ratio assumes (all 30 x 29 pairs, 200k draws)."""
    from jaxtopics.models import hdp_split_merge as hsm

    monkeypatch.setattr(hsm, "_CANDIDATES", candidates)
    n = 30
    z = jnp.asarray(np.where(np.isin(np.arange(n), [1, 7, 8, 20, 29]), 0, 1), jnp.int32)
    tk = hsm._Tokens(doc=jnp.zeros(n, jnp.int32), word=jnp.zeros(n, jnp.int32),
                     doc_word=jnp.zeros(n, jnp.int32), real=jnp.ones(n, bool),
                     tok=jnp.arange(n), n_all=n, num_docs=1, num_words=1, axis_name=None)
    draws = 200_000
    ra, rb = jax.jit(jax.vmap(lambda k: hsm._choose_pair(k, z, tk)))(
        jax.random.split(jax.random.key(5), draws))
    counts = np.bincount(np.asarray(ra) * n + np.asarray(rb), minlength=n * n).astype(float)
    zn = np.asarray(z)
    size = np.bincount(zn)[zn]
    probs = np.zeros((n, n))
    for a in range(n):
        for b in range(n):
            if a != b:
                probs[a, b] = (0.5 * (zn[a] == zn[b]) / (size[a] - 1) + 0.5 / (n - 1)) / n
    ok, msg = _accepts(counts, probs.reshape(-1))
    assert ok, f"{candidates} candidates: {msg}"


def test_merges_refused_by_their_bound_are_the_moves_of_full_attempts() -> None:
    """A merge whose present split alone refuses it skips its proposal (``bound_merges``, the
    default): the same moves as attempts that draw every proposal, on the pair's gathered
    tokens and on all of them, from a 40-topic random state (mostly merges, mostly refused)
    and from 4 topics (mostly splits), 8 seeds each."""
    from jaxtopics.datasets import synthetic_lda
    from jaxtopics.models.hdp_split_merge import split_merge_moves

    corpus = synthetic_lda(num_docs=100, num_words=200, num_topics=6, mean_doc_length=30,
                           alpha=0.2, beta=0.05, seed=0).corpus
    params = hdp.check_params(hdp.Params(split_merge_steps=10, topic_capacity=64))
    data = hd.prepare(corpus, params)
    n = corpus.num_tokens
    keys = jax.random.split(jax.random.key(1), 8)
    for k0 in (40, 4):
        st = hd.init(jax.random.key(0), data, params._replace(initial_topics=k0))
        log_pi = jnp.where(st.topic_weight > 0, jnp.log(st.topic_weight), -jnp.inf)
        for compact in (None, n // hd.COMPACT_SHARE):
            def moves(bound):
                return jax.jit(jax.vmap(lambda k: split_merge_moves(
                    k, k, st.z[:n], st.word_topic, st.topic, log_pi, (st.alpha, st.gamma), data,
                    params, 10, corpus.num_docs, None, launch_rounds=hd.LAUNCH_ROUNDS,
                    compact=compact, bound_merges=bound)))(keys)
            full, bounded = moves(False), moves(True)
            for name, a, b in zip(("z", "word_topic", "topic", "log_pi", "changed", "accepted"),
                                  full, bounded):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b),
                                              err_msg=f"{name}, {k0} topics, compact {compact}")
            assert int(np.sum(full[5])) >= 1, (k0, compact)


def test_gathers_of_materialised_values_are_the_plain_gathers() -> None:
    """`ops.gather_materialised` (the split-merge moves' gathers of per-word and per-document values, materialised
    before the gather so that XLA:CPU does not recompute their logs per token) gives exactly
    x[idx]: float logs, comparisons of logs and integers, under jit and vmap."""
    from jaxtopics.ops import gather_materialised as _at

    idx = jax.random.randint(jax.random.key(0), (1000,), 0, 37)
    counts = jax.random.randint(jax.random.key(1), (4, 37), 0, 50)
    u = jax.random.uniform(jax.random.key(2), (4, 37))

    def both(c, u):
        logs = jnp.log(c.astype(jnp.float32) + 0.05) - jnp.log(jnp.sum(c) + 1.85)
        draw = jnp.log(u) < jax.nn.log_sigmoid(logs)
        return (_at(logs, idx), _at(draw, idx), _at(c, idx)), (logs[idx], draw[idx], c[idx])

    for got, want in (jax.jit(jax.vmap(both))(counts, u), jax.vmap(both)(counts, u)):
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
