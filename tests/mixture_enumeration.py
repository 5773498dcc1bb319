"""Exact enumeration for document-mixture samplers (DMM, DPMM): every clustering of a tiny corpus,
its collapsed log joint in float64 numpy (independent of the package: direct products of
rising factorials), and the exact transition matrices of systematic-scan Gibbs sweeps.

States are tuples of cluster labels, one per document. For DMM they are all K^D labellings;
for DPMM the set partitions of the documents as restricted growth strings (the first document
is in cluster 0, each next document in a used cluster or the next new one).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from jaxtopics import Corpus


def log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


def canonical(z) -> tuple[int, ...]:
    """Restricted growth string of a labelling (labels renamed by first appearance)."""
    names: dict[int, int] = {}
    return tuple(names.setdefault(int(c), len(names)) for c in z)


def set_partitions(d: int) -> list[tuple[int, ...]]:
    """All restricted growth strings of length d (Bell(d) of them)."""
    out = [(0,)]
    for _ in range(d - 1):
        out = [s + (c,) for s in out for c in range(max(s) + 2)]
    return out


class MixtureCase:
    """A tiny corpus of documents (lists of word ids) and its state space."""

    def __init__(self, docs, beta: float, num_words: int | None = None):
        self.docs = [list(d) for d in docs]
        self.d = len(docs)
        self.beta = beta
        self.v = num_words or 1 + max(w for doc in docs for w in doc)
        words = np.concatenate([np.asarray(doc, np.int32) for doc in docs if doc] or [np.zeros(0, np.int32)])
        offsets = np.cumsum([0] + [len(doc) for doc in docs])
        self.corpus = Corpus.from_arrays(words, offsets, [f"w{v}" for v in range(self.v)])

    def word_log_evidence(self, z) -> float:
        """log p(d | z) = sum_k [sum_w log beta^(n_kw) - log (V beta)^(n_k)]."""
        total = 0.0
        for k in set(z):
            counts = np.zeros(self.v, np.int64)
            for doc, c in zip(self.docs, z):
                if c == k:
                    np.add.at(counts, np.asarray(doc, np.int64), 1)
            total += sum(log_rising(self.beta, n) for n in counts)
            total -= log_rising(self.v * self.beta, counts.sum())
        return total


class Enumeration:
    """States, their log joints and the exact Gibbs machinery on them."""

    def __init__(self, states: list[tuple[int, ...]], log_joint, neighbours):
        self.states = states
        self.index = {s: i for i, s in enumerate(states)}
        self.lj = np.array([log_joint(s) for s in states])
        self._neighbours = neighbours               # (state, site) -> states with site redrawn

    def posterior(self, lj: np.ndarray | None = None) -> np.ndarray:
        lj = self.lj if lj is None else lj
        p = np.exp(lj - lj.max())
        return p / p.sum()

    def site_matrix(self, i: int, lj: np.ndarray | None = None, log_weight=None) -> np.ndarray:
        """Transition matrix of an update of document i: exact Gibbs (p ∝ joint), or, with
        `log_weight(s, i, t)`, a sampler whose conditional weights are that formula."""
        lj = self.lj if lj is None else lj
        s_count = len(self.states)
        m = np.zeros((s_count, s_count))
        for a, s in enumerate(self.states):
            targets = self._neighbours(s, i)
            nb = [self.index[t] for t in targets]
            lw = lj[nb] if log_weight is None else np.array([log_weight(s, i, t) for t in targets])
            w = np.exp(lw - lw.max())
            m[a, nb] = w / w.sum()
        return m

    def sweep_matrix(self, lj: np.ndarray | None = None, log_weight=None) -> np.ndarray:
        """One systematic-scan sweep over documents 0..D-1."""
        total = np.eye(len(self.states))
        for i in range(len(self.states[0])):
            total = total @ self.site_matrix(i, lj, log_weight)
        return total

    def synchronous_matrix(self, k: int) -> np.ndarray:
        """Labelled states (DMM) only: every document drawn at once from its conditional given
        the same state (a parallel sweep with a single block)."""
        d = len(self.states[0])
        cond = np.zeros((d, len(self.states), k))        # p(z_i = c | z_-i)
        for i in range(d):
            m = self.site_matrix(i)
            for c in range(k):
                for a, s in enumerate(self.states):
                    t = s[:i] + (c,) + s[i + 1:]
                    cond[i, a, c] = m[a, self.index[t]]
        p = np.ones((len(self.states), len(self.states)))
        target = np.array(self.states)
        for i in range(d):
            p *= cond[i][:, target[:, i]]
        return p

    def law_after(self, start: np.ndarray, matrix: np.ndarray, sweeps: int) -> np.ndarray:
        return start @ np.linalg.matrix_power(matrix, sweeps)


def dmm_enumeration(case: MixtureCase, k: int, alpha: float, k_alpha_bug: bool = False) -> Enumeration:
    """All K^D labellings; log p(z) = sum_k log alpha^(m_k) - log (K alpha)^(D), plus the words.
    `k_alpha_bug`: TopicModel4J's conditional (m_k,-m + alpha) / (D - 1 + k alpha), the joint
    whose Gibbs conditionals those are (an extra factor prod_m 1 / (D - 1 + z_m alpha))."""
    states = list(itertools.product(range(k), repeat=case.d))

    def lj(z):
        m = np.bincount(np.asarray(z), minlength=k)
        prior = sum(log_rising(alpha, c) for c in m) - log_rising(k * alpha, case.d)
        if k_alpha_bug:
            prior -= sum(math.log(case.d - 1 + c * alpha) for c in z)
        return prior + case.word_log_evidence(z)

    def neighbours(s, i):
        return [s[:i] + (c,) + s[i + 1:] for c in range(k)]

    return Enumeration(states, lj, neighbours)


def typo_log_weight(case: MixtureCase, prior):
    """The seed's conditional with its "+ j + 1" typo: the word product starts at
    n_k,-m^w + beta + 2 instead of n_k,-m^w + beta (the denominator is unchanged).
    `prior(others_in_cluster, is_new)` is the first factor (DMM: m + alpha; DPMM: m or alpha)."""

    def log_weight(s, i, t):
        k = t[i]
        counts = np.zeros(case.v, np.int64)
        members = 0
        for j, (doc, c) in enumerate(zip(case.docs, t)):
            if j != i and c == k:
                np.add.at(counts, np.asarray(doc, np.int64), 1)
                members += 1
        mine = np.bincount(np.asarray(case.docs[i], np.int64), minlength=case.v)
        words = sum(log_rising(counts[w] + case.beta + 2, mine[w]) for w in range(case.v))
        words -= log_rising(counts.sum() + case.v * case.beta, mine.sum())
        return math.log(prior(members)) + words

    return log_weight


def dpmm_prior(z, alpha: float) -> float:
    """log CRP probability of the partition z (of len(z) documents)."""
    sizes = np.bincount(np.asarray(z))
    sizes = sizes[sizes > 0]
    return (len(sizes) * math.log(alpha) + sum(math.lgamma(n) for n in sizes)
            - log_rising(alpha, len(z)))


def dpmm_enumeration(case: MixtureCase, alpha: float) -> Enumeration:
    """All set partitions; log p(z) = C log alpha + sum_c log (n_c - 1)! - log alpha^(D)."""
    states = set_partitions(case.d)

    def neighbours(s, i):
        others = s[:i] + s[i + 1:]
        labels = sorted(set(others)) + [max(others, default=-1) + 1]
        out = []
        for c in labels:
            t = canonical(s[:i] + (c,) + s[i + 1:])
            if t not in out:
                out.append(t)
        return out

    return Enumeration(states, lambda z: dpmm_prior(z, alpha) + case.word_log_evidence(z),
                       neighbours)


def incremental_law(enum: Enumeration, case: MixtureCase, alpha: float) -> np.ndarray:
    """Law of the partition after GSDPMM's seating pass: documents 0..D-1 in turn join a cluster
    of the documents seated before them or a new one, with probability ∝ the joint of the
    documents seated so far (CRP prior and Polya word evidence over the prefix)."""
    law = np.zeros(len(enum.states))
    for a, s in enumerate(enum.states):
        p = 1.0
        for i in range(case.d):
            prefix = MixtureCase(case.docs[:i + 1], beta=case.beta, num_words=case.v)
            options = sorted(set(s[:i])) + [max(s[:i], default=-1) + 1]
            lj = np.array([dpmm_prior(s[:i] + (c,), alpha) + prefix.word_log_evidence(s[:i] + (c,))
                           for c in options])
            w = np.exp(lj - lj.max())
            p *= w[options.index(s[i])] / w.sum()
        law[a] = p
    return law
