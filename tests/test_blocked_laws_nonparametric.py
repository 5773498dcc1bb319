"""The blocked (``parallel``) kernels of the nonparametric models do what their docstrings say:
their own one-sweep transition law, enumerated exactly, with 2-3 blocks of several items each
(DESIGN.md "How to test a sampler", 3; issue 36).

Elsewhere the ``parallel`` kernels are tested against the posterior only in their exact limit of
one item per block. Here each kernel runs one sweep, with several items per block, from a few
fixed starting states of a tiny corpus, as >= 20k independent vmapped chains; the law of the
state after the sweep (a partition up to relabelling of clusters, tables and topics) is computed
exactly in numpy from the model's collapsed joint (every Gibbs conditional is a ratio of joints,
Teh et al. 2006 for the Chinese restaurant franchise, Kim et al. 2012 for DP-MRM, Yin & Wang
2016 for GSDPMM) and from the blocking each module's docstring states:

- DPMM (``models/dpmm.py``, 6 documents in 2 blocks of 3): every document of a block draws from
  (31)/(32) against the block-start partition (itself left out); documents choosing an existing
  cluster move at once; those choosing "new" are then settled in block order, each among the
  clusters opened earlier in this pass and a brand-new one, against the current partition. From
  the "incremental" start (no document seated) every document is seated in turn, in block
  order, among all clusters and a new one (exact seating, no stale draw).
- HDP (``models/hdp.py``, 2 documents / 5 tokens, ``num_blocks=2``: blocks of 3 and 2 tokens,
  two tokens of one document in the first; ``dish_groups=1``; ``split_merge_steps=0``): the
  tokens of a block draw (T) against the block-start state; the r-th opener of a document takes
  the r-th free table slot of the block's start, every opener of a new dish its own new topic;
  then the dish step slot by slot, the tables of slot r of every document drawing (D) at once
  against the batch-start state, each new dish a topic of its own.
- DP-MRM (``models/dpmrm.py``, 4 documents in 2 blocks of 2, 2 labels): each document of a block
  runs its exact document step (its tokens' tables, then its tables' labels and topics in slot
  order) against the block-start state plus its own moves; topics opened by different
  documents of a block are distinct.

The numpy laws share no code with the package (the joints are the EPPF products: CRP(alpha)
seating, CRP(gamma) dishes, Polya(eta) labels, Polya(beta) words), and are checked against the
package's ``log_joint`` on every state reached (HDP, DP-MRM; DPMM's joint is
``tests/mixture_enumeration.py``'s, checked in tests/test_dpmm_kernels.py); with one document
per block the DPMM enumerator gives the exact Gibbs sweep, checked against that module's
transition matrix.

Statistics (``tests/enumeration_stats.py``): the empirical law of the chains' final states
against the enumerated one, total variation below its sampling bound (Jensen + McDiarmid: a
false alarm with probability <= DELTA) and a pooled chi-square p-value above DELTA; DELTA is
FAMILY_ALPHA = 1e-3 split over the 14 statistics of the file ((3 + 2 + 2 starts) x 2), so the
family-wise false-alarm rate is <= 1e-3. Negative controls: the same bar must reject each
kernel's samples against the exact sequential Gibbs law of the same sweep (what the blocked
kernel approximates; from DPMM's unseated start, seating in corpus order), for DPMM also
against the law in which every document that chose "new" opens a cluster of its own (the
second, merging draw left out), and for HDP against the law in which the openers of new dishes
in one block (the tables choosing "new" in one dish batch) share one new topic. The power is
designed, not hoped for: each wrong law is > 0.1 in TV from the kernel's (against TV bounds of
0.04-0.06 at 20k chains), except DPMM's seating orders (TV 0.053), and the chi-square test
rejects every one with power > 0.999 (asserted from the non-central chi-square, ``_power``).

Time: one sweep of tiny chains is mostly compiling, so these tests are not marked ``slow`` (which
would compile at full optimisation: measured ~1.3x slower here); the three models compile once
each, every start's chains in one vmapped call.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter, defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from enumeration_stats import pooled_chisquare_p, tv, tv_bound
from mixture_enumeration import MixtureCase, canonical, dpmm_enumeration, dpmm_prior, incremental_law
from scipy import stats

from jaxtopics import Corpus
from jaxtopics.models import dpmm, dpmrm, hdp
from jaxtopics.ops import strided_blocks

FAMILY_ALPHA = 1e-3
#: (3 DPMM starts + 2 HDP + 2 DP-MRM) x (TV, chi-square)
DELTA = FAMILY_ALPHA / 14
CHAINS = 20_000


def _log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


def _first_use(xs) -> tuple[int, ...]:
    """Ids renamed 0, 1, ... by first appearance (any hashable ids)."""
    names: dict = {}
    return tuple(names.setdefault(x, len(names)) for x in xs)


def _normalise(log_w) -> np.ndarray:
    lw = np.asarray(log_w, np.float64)
    w = np.exp(lw - lw.max())
    return w / w.sum()


def _accepts(counts: np.ndarray, law: np.ndarray) -> tuple[bool, str]:
    """The bar: TV below its bound at DELTA and chi-square p above DELTA."""
    n = int(counts.sum())
    d = tv(counts / n, law)
    bound = tv_bound(law, n, DELTA)
    p = pooled_chisquare_p(counts, law)
    return d < bound and p > DELTA, f"TV={d:.4f} (bound {bound:.4f}), chi-square p={p:.3g}, {n} chains"


def _histogram(keys, law: dict) -> tuple[np.ndarray, np.ndarray]:
    """(counts, probabilities) over the law's outcomes plus one bin for anything else."""
    index = {k: i for i, k in enumerate(law)}
    counts = np.bincount([index.get(k, len(law)) for k in keys], minlength=len(law) + 1)
    return counts, np.append(np.array(list(law.values())), 0.0)


def _add(out: dict, dist: dict, p: float) -> None:
    for k, q in dist.items():
        out[k] += p * q


def _one_sweep(module, params, data, starts, seed: int):
    """Final states (numpy) of one sweep of CHAINS independent chains from each start state
    (a list of states): one vmapped, jitted call over all of them."""
    stacked = jax.tree.map(lambda *x: jnp.repeat(jnp.stack(x), CHAINS, axis=0), *starts)
    keys = jax.random.split(jax.random.key(seed), CHAINS * len(starts))
    final, info = jax.jit(jax.vmap(lambda k, s: module.sweep(k, s, data, params)))(keys, stacked)
    assert not np.asarray(info.overflow).any(), "test design: capacity too small"
    return jax.tree.map(np.asarray, final)


# ==========================================================================================
# DPMM


class DPMMLaw:
    """One sweep of DPMM's blocked kernel (module docstring of ``models/dpmm.py``), exactly, on
    set partitions (tuples of cluster labels, canonicalised between blocks; -1: a document not
    seated yet, as in the "incremental" start)."""

    def __init__(self, docs, alpha: float, beta: float):
        self.case = MixtureCase(docs, beta=beta)
        self.alpha = alpha
        self._lj: dict = {}

    def joint(self, z) -> float:
        """log p(d_S, z_S) of the seated documents S: CRP prior and Polya word evidence."""
        seated = tuple(i for i, c in enumerate(z) if c >= 0)
        key = (seated, canonical([z[i] for i in seated]))
        if key not in self._lj:
            sub = MixtureCase([self.case.docs[i] for i in seated], beta=self.case.beta,
                              num_words=self.case.v) if len(seated) < len(z) else self.case
            self._lj[key] = dpmm_prior(key[1], self.alpha) + sub.word_log_evidence(key[1])
        return self._lj[key]

    @staticmethod
    def _put(z, i, c):
        return z[:i] + (c,) + z[i + 1:]

    def block(self, z, block, second_draw: bool = True) -> dict:
        stale = []
        for i in block:                       # (31)/(32) against the block's start, i left out
            if z[i] < 0:                      # not seated yet: always settled below
                stale.append([(None, 1.0)])
                continue
            options = sorted({c for c in z[:i] + z[i + 1:] if c >= 0}) + [None]
            probs = _normalise([self.joint(self._put(z, i, 999 if c is None else c))
                                for c in options])
            stale.append(list(zip(options, probs)))
        out: dict = defaultdict(float)
        for combo in itertools.product(*stale):
            p = math.prod(q for _, q in combo)
            z1, later = list(z), []
            for i, (c, _) in zip(block, combo):
                if c is None:
                    later.append(i)
                else:
                    z1[i] = c                 # moves to existing clusters: at once
            self._settle(tuple(z1), later, [], p, out, second_draw)
        return out

    def _settle(self, z, later, opened, p, out, second_draw):
        """The documents that chose "new", in block order: each among the clusters opened in
        this pass and a brand-new one, against the current partition (a document not seated
        yet: among all clusters and a new one)."""
        if not later:
            out[z if min(z) < 0 else canonical(z)] += p
            return
        i, rest = later[0], later[1:]
        fresh = 1000 + i
        if z[i] < 0:
            options = sorted({c for c in z if c >= 0}) + [fresh]
        else:
            options = (opened if second_draw else []) + [fresh]
        probs = _normalise([self.joint(self._put(z, i, c)) for c in options])
        for c, q in zip(options, probs):
            self._settle(self._put(z, i, c), rest, opened + [c] * (c == fresh), p * q, out,
                         second_draw)

    def sweep(self, start, num_blocks: int, second_draw: bool = True) -> dict:
        blocks, valid = strided_blocks(len(start), num_blocks)
        law = {tuple(start) if min(start) < 0 else canonical(start): 1.0}
        for blk, ok in zip(blocks, valid):
            nxt: dict = defaultdict(float)
            for z, p in law.items():
                _add(nxt, self.block(z, [int(i) for i in blk[ok]], second_draw), p)
            law = dict(nxt)
        return law


# documents 0, 2, 4 (block 0) share word 0, so documents that leave the big cluster together can
# found one cluster together (the second draw); 1, 3, 5 (block 1) share word 1 / 2
DPMM_DOCS = [[0, 0], [1, 1], [0, 0, 2], [1], [0], [2, 2, 1]]
DPMM_ALPHA, DPMM_BETA = 1.5, 0.2
#: "unseated": the "incremental" start (no document has a cluster; the first sweep seats them)
DPMM_STARTS = {"one-cluster": (0, 0, 0, 0, 0, 0), "singletons": (0, 1, 2, 3, 4, 5),
               "unseated": (-1, -1, -1, -1, -1, -1), "mixed": (0, 0, 1, 1, 2, 2)}
DPMM_TESTED = ("one-cluster", "singletons", "unseated")
DPMM_BLOCKS = 2


@functools.lru_cache(maxsize=None)
def _dpmm_law() -> DPMMLaw:
    return DPMMLaw(DPMM_DOCS, DPMM_ALPHA, DPMM_BETA)


@functools.lru_cache(maxsize=None)
def _dpmm_chains():
    law = _dpmm_law()
    params = dpmm.check_params(dpmm.Params(alpha=DPMM_ALPHA, beta=DPMM_BETA, sampler="parallel",
                                           num_blocks=DPMM_BLOCKS, capacity=len(DPMM_DOCS),
                                           init="one"))
    data = dpmm.prepare(law.case.corpus, params)
    assert data.blocks.shape == (2, 3) and bool(np.asarray(data.valid).all())   # 2 blocks of 3
    base = dpmm.init(jax.random.key(0), data, params)
    starts = [dpmm.rebuild(base._replace(z=jnp.asarray(DPMM_STARTS[s] + (0,), jnp.int32)), data,
                           params) for s in DPMM_TESTED]
    final = _one_sweep(dpmm, params, data, starts, seed=36_1)
    d = len(DPMM_DOCS)
    return {s: [canonical(z) for z in final.z[i * CHAINS:(i + 1) * CHAINS, :d].tolist()]
            for i, s in enumerate(DPMM_TESTED)}


def _dpmm_wrong(start: str) -> dict:
    """The wrong laws the kernel's samples must fail: the exact sequential sweep (from the
    unseated start: GSDPMM's seating in corpus order, not in block order 0, 2, 4, 1, 3, 5), and
    from a seated start the law without the merging second draw."""
    law, z0 = _dpmm_law(), DPMM_STARTS[start]
    out = {"sequential": law.sweep(z0, len(DPMM_DOCS))}
    if min(z0) >= 0:
        out["own new cluster"] = law.sweep(z0, DPMM_BLOCKS, second_draw=False)
    return out


def _power(law: dict, wrong: dict) -> float:
    """Design check: the chi-square test's power at DELTA against `wrong` when the chains
    follow `law` (non-central chi-square, non-centrality CHAINS sum (law - wrong)^2 / wrong over
    the bins of `wrong` with >= 5 expected draws; 1 when `law` puts mass where `wrong` has
    none, which the test rejects at once)."""
    if any(p > 1e-3 and k not in wrong for k, p in law.items()):
        return 1.0
    keys = [k for k, q in wrong.items() if CHAINS * q >= 5]
    lam = CHAINS * sum((law.get(k, 0.0) - wrong[k]) ** 2 / wrong[k] for k in keys)
    df = len(keys)                      # the pooled bin adds one, the total takes one
    return float(stats.ncx2.sf(stats.chi2.isf(DELTA, df), df, lam))


def test_dpmm_law_reference() -> None:
    """The enumerator is what it claims: with one document per block it is the exact Gibbs
    sweep (``mixture_enumeration``'s transition matrix, from 24 of the 203 partitions), and from
    the unseated start GSDPMM's seating (``incremental_law``); the blocked laws are
    distributions, and the chi-square test at DELTA rejects every wrong law with power > 0.999
    (TV 0.05-0.59 from the blocked law)."""
    law = _dpmm_law()
    e = dpmm_enumeration(law.case, DPMM_ALPHA)
    seating = law.sweep(DPMM_STARTS["unseated"], len(DPMM_DOCS))
    for s, p in zip(e.states, incremental_law(e, law.case, DPMM_ALPHA)):
        assert abs(seating.get(s, 0.0) - p) < 1e-12
    exact = e.sweep_matrix()
    checked = set(DPMM_STARTS.values()) | set(e.states[::10])     # 24 of the 203 starts
    for s, row in zip(e.states, exact):
        if s not in checked:
            continue
        got = law.sweep(s, num_blocks=len(DPMM_DOCS))
        ref = {t: p for t, p in zip(e.states, row) if p > 0}
        assert set(got) <= set(ref)
        assert max(abs(got.get(t, 0.0) - p) for t, p in ref.items()) < 1e-12
    for name in DPMM_TESTED:
        blocked = law.sweep(DPMM_STARTS[name], DPMM_BLOCKS)
        assert abs(sum(blocked.values()) - 1) < 1e-12
        for what, wrong in _dpmm_wrong(name).items():
            assert _power(blocked, wrong) > 0.999, (name, what)


def _law_tv(a: dict, b: dict) -> float:
    keys = set(a) | set(b)
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys)


@pytest.mark.parametrize("start", DPMM_TESTED)
def test_dpmm_blocked_sweep_follows_its_law(start: str) -> None:
    law = _dpmm_law().sweep(DPMM_STARTS[start], DPMM_BLOCKS)
    counts, probs = _histogram(_dpmm_chains()[start], law)
    ok, msg = _accepts(counts, probs)
    assert ok, f"DPMM parallel, start {start}: {msg}"


@pytest.mark.parametrize("start", DPMM_TESTED)
def test_dpmm_negative_controls_rejected(start: str) -> None:
    """The kernel's samples fail the same bar against the exact sequential sweep and against
    the law where every "new" document opens its own cluster."""
    for what, wrong in _dpmm_wrong(start).items():
        counts, probs = _histogram(_dpmm_chains()[start], wrong)
        ok, msg = _accepts(counts, probs)
        assert not ok, f"negative control {what} accepted: {msg}"


# ==========================================================================================
# HDP


class HDPLaw:
    """One sweep of HDP's blocked kernel without split-merge (module docstring of
    ``models/hdp.py``), exactly. A state is (t, dish): the table slot of every token and
    {(document, slot): topic} (topic ids canonical; entries of empty tables ignored)."""

    def __init__(self, docs, alpha: float, gamma: float, beta: float):
        self.docs = docs
        self.word = [w for d in docs for w in d]
        self.doc = [j for j, d in enumerate(docs) for _ in d]
        self.v = max(self.word) + 1
        self.alpha, self.gamma, self.beta = alpha, gamma, beta
        #: 1: every opener of a new dish gets its own new topic (the kernel's docstring); 0: the
        #: openers of one block (one dish batch) share one new topic (a wrong law, for controls)
        self.own_new = 1
        offsets = np.cumsum([0] + [len(d) for d in docs])
        self.corpus = Corpus.from_arrays(np.asarray(self.word, np.int32), offsets,
                                         [f"w{i}" for i in range(self.v)])
        self._lj: dict = {}

    def key(self, t, dish) -> tuple:
        """The state up to relabelling: (table, topic) of every token, ids by first use."""
        tabs = _first_use([(self.doc[i], s) for i, s in enumerate(t)])
        tops = _first_use([dish[(self.doc[i], s)] for i, s in enumerate(t)])
        return tuple(zip(tabs, tops))

    def joint(self, t, dish) -> float:
        """log p(w, t, k): prod_j alpha^T_j prod_t Gamma(n_jt) / alpha^(n_j), gamma^K prod_k
        Gamma(m_k) / gamma^(m), prod_k Polya(beta) of topic k's words."""
        key = self.key(t, dish)
        if key in self._lj:
            return self._lj[key]
        a, g, b = self.alpha, self.gamma, self.beta
        sizes = Counter((self.doc[i], s) for i, s in enumerate(t))
        total = 0.0
        for j, d in enumerate(self.docs):
            mine = [n for (jj, _), n in sizes.items() if jj == j]
            total += len(mine) * math.log(a) + sum(math.lgamma(n) for n in mine) - _log_rising(a, len(d))
        m = Counter(dish[tab] for tab in sizes)
        total += len(m) * math.log(g) + sum(math.lgamma(x) for x in m.values()) - _log_rising(g, len(sizes))
        words: dict = defaultdict(lambda: np.zeros(self.v, int))
        for i, s in enumerate(t):
            words[dish[(self.doc[i], s)]][self.word[i]] += 1
        for c in words.values():
            total += sum(_log_rising(b, x) for x in c) - _log_rising(self.v * b, c.sum())
        self._lj[key] = total
        return total

    def _canon(self, t, dish) -> tuple:
        occupied = sorted({(self.doc[i], s) for i, s in enumerate(t)})
        ids = _first_use([dish[x] for x in occupied])
        return tuple(t), tuple(zip(occupied, ids))

    def table_block(self, state, blk) -> dict:
        t, dish_items = state
        dish = dict(dish_items)
        used = {(self.doc[i], s) for i, s in enumerate(t)}
        draws = []
        for i in blk:                                # (T) against the block's start
            j = self.doc[i]
            others = Counter((self.doc[x], t[x]) for x in range(len(t)) if x != i)
            options, lw = [], []
            for slot in sorted(x for (jj, x) in others if jj == j):
                options.append(("table", slot))
                lw.append(self.joint(t[:i] + (slot,) + t[i + 1:], dish))
            for k in sorted({dish[tab] for tab in others}):
                options.append(("dish", k))
                lw.append(self.joint(t[:i] + (-1,) + t[i + 1:], {**dish, (j, -1): k}))
            options.append(("dish", None))
            lw.append(self.joint(t[:i] + (-1,) + t[i + 1:], {**dish, (j, -1): -1}))
            draws.append(list(zip(options, _normalise(lw))))
        out: dict = defaultdict(float)
        for combo in itertools.product(*draws):
            p = math.prod(q for _, q in combo)
            t2, dish2 = list(t), dict(dish)
            opened = Counter()
            for i, ((kind, x), _) in zip(blk, combo):
                j = self.doc[i]
                if kind == "table":
                    t2[i] = x
                    continue
                # the r-th opener of document j takes its r-th free slot at the block's start
                free = [s for s in range(len(t) + 8) if (j, s) not in used]
                slot = free[opened[j]]
                opened[j] += 1
                t2[i] = slot
                dish2[(j, slot)] = x if x is not None else 1000 + i * self.own_new   # a new topic each
            out[self._canon(t2, dish2)] += p
        return out

    def dish_batch(self, state, tables) -> dict:
        t, dish_items = state
        dish = dict(dish_items)
        occupied = {(self.doc[i], s) for i, s in enumerate(t)}
        draws = []
        for tab in tables:                           # (D) against the batch's start
            options = sorted({dish[x] for x in occupied if x != tab}) + [-1]
            lw = [self.joint(t, {**dish, tab: k}) for k in options]
            draws.append(list(zip(options, _normalise(lw))))
        out: dict = defaultdict(float)
        for combo in itertools.product(*draws):
            dish2 = dict(dish)
            for n, (tab, (k, _)) in enumerate(zip(tables, combo)):
                dish2[tab] = k if k >= 0 else 2000 + n * self.own_new   # a new topic each
            out[self._canon(t, dish2)] += math.prod(q for _, q in combo)
        return out

    def sweep(self, t0, dish0, num_blocks: int, dish_groups: int) -> dict:
        n, d = len(t0), len(self.docs)
        law = {self._canon(tuple(t0), dict(dish0)): 1.0}
        blocks, valid = strided_blocks(n, num_blocks)
        for blk, ok in zip(blocks, valid):
            nxt: dict = defaultdict(float)
            for st, p in law.items():
                _add(nxt, self.table_block(st, [int(i) for i in blk[ok]]), p)
            law = dict(nxt)
        bt = -(-d // min(dish_groups, d))
        for r in range(n + 8):                       # slot by slot, groups of documents
            for g in range(-(-d // bt)):
                nxt = defaultdict(float)
                for st, p in law.items():
                    occupied = {(self.doc[i], s) for i, s in enumerate(st[0])}
                    tables = [(j, r) for j in range(g * bt, min(g * bt + bt, d)) if (j, r) in occupied]
                    _add(nxt, self.dish_batch(st, tables) if tables else {st: 1.0}, p)
                law = dict(nxt)
        out: dict = defaultdict(float)
        for (t, dish_items), p in law.items():
            out[self.key(t, dict(dish_items))] += p
        return dict(out)


HDP_DOCS = [[0, 1, 0], [1, 2]]
HDP_ALPHA, HDP_GAMMA, HDP_BETA = 1.5, 1.5, 0.3
#: (table slot of every token, {(document, slot): topic})
HDP_STARTS = {
    "one-topic": ((0, 0, 0, 0, 0), {(0, 0): 0, (1, 0): 0}),
    "split": ((0, 1, 0, 0, 1), {(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 2}),
}
HDP_BLOCKS, HDP_GROUPS = 2, 1
#: no overflow: a document of 3 tokens uses table slots <= 4 (openers take slots free at the
#: block's start); at most 5 topics live plus 3 opened in a block
HDP_CAPACITY = dict(table_capacity=5, topic_capacity=8)


@functools.lru_cache(maxsize=None)
def _hdp_law() -> HDPLaw:
    return HDPLaw(HDP_DOCS, HDP_ALPHA, HDP_GAMMA, HDP_BETA)


@functools.lru_cache(maxsize=None)
def _hdp_laws(start: str, sequential: bool = False, shared_new: bool = False) -> dict:
    t0, dish0 = HDP_STARTS[start]
    n, d = len(t0), len(HDP_DOCS)
    law = HDPLaw(HDP_DOCS, HDP_ALPHA, HDP_GAMMA, HDP_BETA) if shared_new else _hdp_law()
    law.own_new = 0 if shared_new else 1
    return law.sweep(t0, dish0, n if sequential else HDP_BLOCKS, d if sequential else HDP_GROUPS)


@functools.lru_cache(maxsize=None)
def _hdp_chains():
    law = _hdp_law()
    params = hdp.check_params(hdp.Params(alpha=HDP_ALPHA, gamma=HDP_GAMMA, beta=HDP_BETA,
                                         sampler="crf", split_merge_steps=0,
                                         num_blocks=HDP_BLOCKS, dish_groups=HDP_GROUPS,
                                         **HDP_CAPACITY))
    data = hdp.prepare(law.corpus, params)
    assert np.asarray(data.blocks).tolist() == [[0, 2, 4], [1, 3, 5]]   # 5 = padding
    starts = []
    for name in HDP_STARTS:
        t0, dish0 = HDP_STARTS[name]
        table_topic = np.zeros((len(HDP_DOCS), HDP_CAPACITY["table_capacity"]), np.int32)
        for (j, s), k in dish0.items():
            table_topic[j, s] = k
        starts.append(hdp.state_from_seating(jnp.asarray(t0, jnp.int32), jnp.asarray(table_topic),
                                             data, HDP_CAPACITY["topic_capacity"],
                                             alpha=HDP_ALPHA, gamma=HDP_GAMMA))
    final = _one_sweep(hdp, params, data, starts, seed=36_2)
    n = len(law.word)
    out = {}
    for i, name in enumerate(HDP_STARTS):
        rows = slice(i * CHAINS, (i + 1) * CHAINS)
        out[name] = [law.key(t, {(law.doc[x], s): int(z[x]) for x, s in enumerate(t)})
                     for t, z in zip(final.t[rows, :n].tolist(), final.z[rows, :n].tolist())]
    return out


def test_hdp_law_reference() -> None:
    """The enumerator's joint is the package's log joint (float32) on every state it reaches;
    the laws are distributions, and the blocked law differs from the exact sequential sweep and
    from the law with shared new topics by clearly more than the tests resolve (TV > 0.1,
    bounds < 0.06; chi-square power > 0.999, ``_power``)."""
    law = _hdp_law()
    for name in HDP_STARTS:
        blocked, sequential = _hdp_laws(name), _hdp_laws(name, sequential=True)
        assert abs(sum(blocked.values()) - 1) < 1e-12 and abs(sum(sequential.values()) - 1) < 1e-12
        for wrong in (sequential, _hdp_laws(name, shared_new=True)):
            assert _law_tv(blocked, wrong) > 0.1 and _power(blocked, wrong) > 0.999, name
    params = hdp.Params(alpha=HDP_ALPHA, gamma=HDP_GAMMA, beta=HDP_BETA)
    data = hdp.prepare(law.corpus, params)
    keys = sorted(set(_hdp_laws("one-topic")) | set(_hdp_laws("split")))
    t = np.zeros((len(keys), len(law.word)), np.int32)
    dish = np.zeros((len(keys), len(HDP_DOCS), len(law.word)), np.int32)
    ref = []
    for row, k in enumerate(keys):
        slot: dict = {}
        for i, (tab, top) in enumerate(k):        # tables of a document in slots 0, 1, ...
            j = law.doc[i]
            t[row, i] = slot.setdefault(tab, (sum(1 for x in slot.values() if x[1] == j), j))[0]
            dish[row, j, t[row, i]] = top
        ref.append(law.joint(tuple(int(x) for x in t[row]),
                             {(law.doc[i], int(t[row, i])): top for i, (_, top) in enumerate(k)}))
    got = jax.jit(jax.vmap(lambda tt, dd: hdp.log_joint(hdp.state_from_seating(
        tt, dd, data, len(law.word), alpha=HDP_ALPHA, gamma=HDP_GAMMA), data, params)))(
        jnp.asarray(t), jnp.asarray(dish))
    got = np.asarray(got, np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("start", list(HDP_STARTS))
def test_hdp_blocked_sweep_follows_its_law(start: str) -> None:
    counts, probs = _histogram(_hdp_chains()[start], _hdp_laws(start))
    ok, msg = _accepts(counts, probs)
    assert ok, f"HDP parallel (num_blocks={HDP_BLOCKS}, dish_groups={HDP_GROUPS}), start {start}: {msg}"


@pytest.mark.parametrize("start", list(HDP_STARTS))
def test_hdp_negative_controls_rejected(start: str) -> None:
    """The kernel's samples fail the same bar against the exact sequential sweep and against
    the law where the new-dish openers of a block (the "new" tables of a dish batch) share one
    new topic."""
    for wrong in (_hdp_laws(start, sequential=True), _hdp_laws(start, shared_new=True)):
        counts, probs = _histogram(_hdp_chains()[start], wrong)
        ok, msg = _accepts(counts, probs)
        assert not ok, f"negative control accepted: {msg}"


# ==========================================================================================
# DP-MRM


class DPMRMLaw:
    """One sweep of DP-MRM's blocked kernel (module docstring of ``models/dpmrm.py``), exactly.
    A state is (t, dish, label): the table slot of every token, {(document, slot): topic} and
    {topic: its label}; topic ids canonical between blocks, slots kept (they order the tables'
    steps and a new table takes the lowest free slot)."""

    def __init__(self, docs, label_sets, alpha: float, beta: float, gamma: float, eta: float):
        self.docs, self.label_sets = docs, label_sets
        self.word = [w for d in docs for w in d]
        self.doc = [j for j, d in enumerate(docs) for _ in d]
        self.tokens = [[i for i in range(len(self.doc)) if self.doc[i] == j] for j in range(len(docs))]
        self.v = max(self.word) + 1
        self.num_labels = 1 + max(k for s in label_sets for k in s)
        self.alpha, self.beta, self.gamma, self.eta = alpha, beta, gamma, eta
        self.corpus = Corpus.from_arrays(
            np.asarray(self.word, np.int32), np.cumsum([0] + [len(d) for d in docs]),
            [f"w{i}" for i in range(self.v)], labels=[[f"L{k}" for k in s] for s in label_sets],
            label_names=[f"L{k}" for k in range(self.num_labels)])
        self.table_cap = max(max(len(d) for d in docs), max(len(s) for s in label_sets))
        self._lj: dict = {}

    def key(self, t, dish, label) -> tuple:
        """The state up to relabelling of tables and topics: (table, topic) of every token, ids
        by first use, and the label of every topic in that order."""
        tabs = _first_use([(self.doc[i], s) for i, s in enumerate(t)])
        topics = [dish[(self.doc[i], s)] for i, s in enumerate(t)]
        return (tuple(zip(tabs, _first_use(topics))),
                tuple(label[k] for k in dict.fromkeys(topics)))

    def joint(self, t, dish, label) -> float:
        """log p(w, t, k, l): per document CRP(alpha) over its tables and Polya(eta) over their
        labels (restricted to its label set), per label CRP(gamma) over its tables' topics, per
        topic Polya(beta) over its words."""
        key = self.key(t, dish, label)
        if key in self._lj:
            return self._lj[key]
        a, b, g, e = self.alpha, self.beta, self.gamma, self.eta
        sizes = Counter((self.doc[i], s) for i, s in enumerate(t))
        total = 0.0
        for j, d in enumerate(self.docs):
            mine = [(tab, n) for tab, n in sizes.items() if tab[0] == j]
            total += (len(mine) * math.log(a) + sum(math.lgamma(n) for _, n in mine)
                      - _log_rising(a, len(d)))
            labs = Counter(label[dish[tab]] for tab, _ in mine)
            assert set(labs) <= set(self.label_sets[j])
            total += (sum(_log_rising(e, labs[k]) for k in self.label_sets[j])
                      - _log_rising(len(self.label_sets[j]) * e, len(mine)))
        m = Counter(dish[tab] for tab in sizes)                       # tables per topic
        for k in range(self.num_labels):
            mk = [x for c, x in m.items() if label[c] == k]
            total += (len(mk) * math.log(g) + sum(math.lgamma(x) for x in mk)
                      - _log_rising(g, sum(mk)))
        words: dict = defaultdict(lambda: np.zeros(self.v, int))
        for i, s in enumerate(t):
            words[dish[(self.doc[i], s)]][self.word[i]] += 1
        for c in words.values():
            total += sum(_log_rising(b, x) for x in c) - _log_rising(self.v * b, c.sum())
        self._lj[key] = total
        return total

    def _canon(self, t, dish, label) -> tuple:
        occupied = sorted({(self.doc[i], s) for i, s in enumerate(t)})
        ids = dict(zip(dict.fromkeys(dish[x] for x in occupied), itertools.count()))
        return (tuple(t), tuple((x, ids[dish[x]]) for x in occupied),
                tuple(label[c] for c in ids))

    def doc_step(self, state, j) -> dict:
        """Law of document j's latents after its exact document step on `state` (the others
        fixed): {(its tokens' slots, its tables' topics, labels of the topics it opened): p}."""
        t, dish_items, labels = state
        dish, label = dict(dish_items), dict(enumerate(labels))
        out: dict = defaultdict(float)
        self._tokens(list(t), dish, label, j, 0, 1.0, out)
        return out

    def _tokens(self, t, dish, label, j, n, p, out):
        if n == len(self.tokens[j]):
            self._tables(t, dish, label, j, 0, p, out)
            return
        i = self.tokens[j][n]
        rest = t[:i] + [None] + t[i + 1:]                              # token i removed
        sizes = Counter(rest[x] for x in self.tokens[j] if x != i)
        occupied = {(self.doc[x], s) for x, s in enumerate(rest) if s is not None}
        free = min(s for s in range(self.table_cap) if sizes[s] == 0)
        options = [(s, dish, label) for s in sorted(sizes)]           # existing tables
        for c in sorted({dish[x] for x in occupied}, key=str):       # new table, existing topic
            if label[c] in self.label_sets[j]:
                options.append((free, {**dish, (j, free): c}, label))
        for k in self.label_sets[j]:                                  # new table, new topic
            c = ("new", j, n)
            options.append((free, {**dish, (j, free): c}, {**label, c: k}))
        lw = [self.joint(rest[:i] + [s] + rest[i + 1:], d, lab) for s, d, lab in options]
        for (s, d, lab), q in zip(options, _normalise(lw)):
            self._tokens(rest[:i] + [s] + rest[i + 1:], d, lab, j, n + 1, p * q, out)

    def _tables(self, t, dish, label, j, s, p, out):
        if s == self.table_cap:
            mine = tuple(t[i] for i in self.tokens[j])
            tables = tuple((x, dish[(j, x)]) for x in sorted(set(mine)))
            opened = tuple((c, label[c]) for _, c in tables if isinstance(c, tuple))
            out[(mine, tables, tuple(sorted(set(opened))))] += p
            return
        if s not in {t[i] for i in self.tokens[j]}:
            self._tables(t, dish, label, j, s + 1, p, out)
            return
        occupied = {(self.doc[x], y) for x, y in enumerate(t)} - {(j, s)}
        options = [({**dish, (j, s): c}, label) for c in sorted({dish[x] for x in occupied}, key=str)
                   if label[c] in self.label_sets[j]]
        for k in self.label_sets[j]:
            c = ("new", j, 100 + s)
            options.append(({**dish, (j, s): c}, {**label, c: k}))
        lw = [self.joint(t, d, lab) for d, lab in options]
        for (d, lab), q in zip(options, _normalise(lw)):
            self._tables(t, d, lab, j, s + 1, p * q, out)

    def block(self, state, docs) -> dict:
        """The documents of a block step at once, each on the block's start plus its own moves;
        topics opened by different documents are different topics."""
        steps = [list(self.doc_step(state, j).items()) for j in docs]
        t0, dish_items, labels = state
        out: dict = defaultdict(float)
        for combo in itertools.product(*steps):
            t, dish, label = list(t0), dict(dish_items), dict(enumerate(labels))
            p = 1.0
            for j, ((mine, tables, opened), q) in zip(docs, combo):
                p *= q
                for i, s in zip(self.tokens[j], mine):
                    t[i] = s
                dish.update({(j, x): c for x, c in tables})
                label.update(opened)
            out[self._canon(t, dish, label)] += p
        return out

    def sweep(self, t0, dish0, label0, num_blocks: int) -> dict:
        law = {self._canon(list(t0), dict(dish0), dict(label0)): 1.0}
        blocks, valid = strided_blocks(len(self.docs), num_blocks)
        for blk, ok in zip(blocks, valid):
            nxt: dict = defaultdict(float)
            for st, p in law.items():
                _add(nxt, self.block(st, [int(j) for j in blk[ok]]), p)
            law = dict(nxt)
        out: dict = defaultdict(float)
        for (t, dish_items, labels), p in law.items():
            out[self.key(t, dict(dish_items), dict(enumerate(labels)))] += p
        return dict(out)


# documents 0 and 2 (block 0) share word 0 and label 0; document 1 (block 1) has both labels
DPMRM_DOCS = [[0, 1], [1], [0, 0], [2]]
DPMRM_LABELS = [[0], [0, 1], [0], [1]]
DPMRM_PRIORS = dict(alpha=1.0, beta=0.3, gamma=1.5, eta=0.5)
#: (table slot of every token, {(document, slot): topic}, {topic: label})
DPMRM_STARTS = {
    "shared-topic": ((0, 0, 0, 0, 0, 0), {(0, 0): 0, (1, 0): 0, (2, 0): 0, (3, 0): 1},
                     {0: 0, 1: 1}),
    "spread": ((0, 1, 0, 0, 1, 0), {(0, 0): 0, (0, 1): 1, (1, 0): 2, (2, 0): 1, (2, 1): 0,
                                     (3, 0): 2}, {0: 0, 1: 0, 2: 1}),
}
DPMRM_BLOCKS = 2
DPMRM_TOPICS = 12


@functools.lru_cache(maxsize=None)
def _dpmrm_law() -> DPMRMLaw:
    return DPMRMLaw(DPMRM_DOCS, DPMRM_LABELS, **DPMRM_PRIORS)


@functools.lru_cache(maxsize=None)
def _dpmrm_laws(start: str, sequential: bool = False) -> dict:
    return _dpmrm_law().sweep(*DPMRM_STARTS[start],
                              len(DPMRM_DOCS) if sequential else DPMRM_BLOCKS)


def _dpmrm_setup():
    law = _dpmrm_law()
    params = dpmrm.check_params(dpmrm.Params(**DPMRM_PRIORS, sampler="parallel",
                                             num_blocks=DPMRM_BLOCKS))
    data = dpmrm.prepare(law.corpus, params)
    assert np.asarray(data.blocks).tolist() == [[0, 2], [1, 3]]       # 2 blocks of 2 documents
    assert dpmrm._table_cap(data) == law.table_cap
    return law, params, data


def _dpmrm_state(data, t0, dish0, label0):
    dish = np.zeros((len(DPMRM_DOCS) + 1, _dpmrm_law().table_cap), np.int32)
    for (j, s), c in dish0.items():
        dish[j, s] = c
    label = np.zeros(DPMRM_TOPICS, np.int32)
    label[list(label0)] = list(label0.values())
    return dpmrm.state_from_assignments(jnp.asarray(t0, jnp.int32), jnp.asarray(dish),
                                        jnp.asarray(label), data)


@functools.lru_cache(maxsize=None)
def _dpmrm_chains():
    law, params, data = _dpmrm_setup()
    starts = [_dpmrm_state(data, *DPMRM_STARTS[name]) for name in DPMRM_STARTS]
    final = _one_sweep(dpmrm, params, data, starts, seed=36_3)
    doc = np.asarray(law.doc)
    topic = final.dish[np.arange(final.table.shape[0])[:, None], doc[None, :], final.table]
    keys = [law.key(t, {(law.doc[x], s): c for x, (s, c) in enumerate(zip(t, z))}, dict(enumerate(lab)))
            for t, z, lab in zip(final.table.tolist(), topic.tolist(), final.topic_label.tolist())]
    return {name: keys[i * CHAINS:(i + 1) * CHAINS] for i, name in enumerate(DPMRM_STARTS)}


def test_dpmrm_law_reference() -> None:
    """The enumerator's joint is the package's log joint (float32) on every state one blocked
    or sequential sweep reaches from the starts; the laws are distributions, and the blocked
    law differs from the exact sequential sweep by clearly more than the tests resolve (TV >
    0.1, bounds < 0.06)."""
    law, params, data = _dpmrm_setup()
    keys = set()
    for name in DPMRM_STARTS:
        blocked, sequential = _dpmrm_laws(name), _dpmrm_laws(name, sequential=True)
        assert abs(sum(blocked.values()) - 1) < 1e-12 and abs(sum(sequential.values()) - 1) < 1e-12
        assert _law_tv(blocked, sequential) > 0.1 and _power(blocked, sequential) > 0.999, name
        keys |= set(blocked) | set(sequential)
    tables, dishes, labels, ref = [], [], [], []
    for tokens, topic_labels in sorted(keys):
        slot: dict = {}                          # tables of a document in slots 0, 1, ...
        for i, (tab, _) in enumerate(tokens):
            if tab not in slot:
                slot[tab] = (sum(1 for _, j in slot.values() if j == law.doc[i]), law.doc[i])
        t = [slot[tab][0] for tab, _ in tokens]
        dish = {(law.doc[i], s): top for i, (s, (_, top)) in enumerate(zip(t, tokens))}
        label = dict(enumerate(topic_labels))
        ref.append(law.joint(t, dish, label))
        d = np.zeros((len(DPMRM_DOCS) + 1, law.table_cap), np.int32)
        for (j, s), c in dish.items():
            d[j, s] = c
        lab = np.zeros(DPMRM_TOPICS, np.int32)
        lab[:len(topic_labels)] = topic_labels
        tables.append(t)
        dishes.append(d)
        labels.append(lab)
    got = jax.jit(jax.vmap(lambda t, d, lab: dpmrm.log_joint(
        dpmrm.state_from_assignments(t, d, lab, data), data, params)))(
        jnp.asarray(np.array(tables, np.int32)), jnp.asarray(np.array(dishes)),
        jnp.asarray(np.array(labels)))
    np.testing.assert_allclose(np.asarray(got, np.float64), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("start", list(DPMRM_STARTS))
def test_dpmrm_blocked_sweep_follows_its_law(start: str) -> None:
    counts, probs = _histogram(_dpmrm_chains()[start], _dpmrm_laws(start))
    ok, msg = _accepts(counts, probs)
    assert ok, f"DP-MRM parallel (num_blocks={DPMRM_BLOCKS}), start {start}: {msg}"


@pytest.mark.parametrize("start", list(DPMRM_STARTS))
def test_dpmrm_negative_control_sequential_law_rejected(start: str) -> None:
    counts, probs = _histogram(_dpmrm_chains()[start], _dpmrm_laws(start, sequential=True))
    ok, msg = _accepts(counts, probs)
    assert not ok, f"negative control accepted: {msg}"
