"""The blocked ("parallel") kernels' own one-sweep transition law, enumerated with 2-3 blocks of
several items each (DESIGN.md "How to test a sampler", point 3), for LDA (exact draws, and MH
moves), Sentence-LDA (also with its split-merge move), PTM (both phases) and DMM.

What each kernel's docstring claims, and what is tested: the items (tokens; sentences;
documents' pseudo-documents then tokens; documents) are dealt round-robin into ``num_blocks``
blocks, the blocks are visited in order, and the items of a block all move at once, each
drawn independently from its full conditional of the collapsed joint given the state at the
block's start (its own contribution removed), the counts refreshed exactly before the next
block (Sentence-LDA's optional split-merge move, ``split_merge_steps``, is off for this
part). With ``mh_steps = m > 0`` (LDA), each token of a block instead runs m cycles of a
Metropolis-Hastings move with a document proposal q_d(t) ∝ n_dt^-i + alpha then a word proposal
q_w(t) ∝ n_tw^-i + beta (independence proposals from the block-start counts: LightLDA, Yuan et
al. 2015; WarpLDA, Chen et al. 2016) targeting that same conditional: its law is row `old` of
(P_d P_w)^m with P_q(s, t) = q(t) min(1, pi(t) q(s) / (pi(s) q(t))) for t != s.

The reference is written here in float64 numpy from the model's generative process alone: the
collapsed joint as a product of Dirichlet-multinomial evidences (Griffiths & Steyvers 2004 for
LDA; Jo & Oh 2011 for Sentence-LDA; Zuo et al. 2016 for PTM; Yin & Wang 2014 for DMM), every
state enumerated, each item's conditional read off the joint table, and the one-sweep law from
each of 3 fixed start states (2 for the split-merge case) composed block by block
(``blocked_law.sweep_row``). From each start 20,000 independent one-sweep chains (``jax.vmap``
over keys of the module-level ``sweep``) give the empirical law of the next state.

Statistics and bar: per start, a pooled chi-square goodness-of-fit p-value and the total
variation between the empirical and exact law against its sampling bound (``enumeration_stats``:
Jensen per bin plus McDiarmid). The family (2 statistics x 20 starts over the 7 kernel settings)
has false-alarm rate <= FAMILY_ALPHA = 1e-3, split evenly (Bonferroni): each statistic at
1e-3 / 40, so a kernel with the claimed law fails a test of 3 starts with probability <= 1.5e-4.
Negative controls, same samples and same bar: the law of a sequential scan in the same item
order (the blocks' staleness removed: what the kernel would do if it refreshed the counts item
by item) must be rejected for every exact-draw kernel; for LDA's exact draws also the blocked
law with each token's own counts left in its conditional; for the MH kernel the exact-draw
blocked law; for Sentence-LDA's split-merge move (tested once, on its own small case, as the
sweep runs it after the blocks) the law without the move and the move without its MH
correction (the move's law, Dahl 2003's sequentially-allocated split-merge at K = 2, is
enumerated over all dealing orders). The corpora put several items of one document and of one
word in the same block so that these laws differ clearly (TV between them 0.01-0.73, printed
with -s; chi-square p-values of the controls 1e-29 or smaller).
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxtopics import Corpus, learned_priors
from jaxtopics.models import dmm, lda, ptm, slda
from blocked_law import (StateSpace, assert_law, assert_rejected, counts_of, dirmult, strided,
                         sweep_row)

FAMILY_ALPHA = 1e-3
#: statistics (chi-square, TV) x starts: 3 each for LDA exact, MH 2 and 5 cycles, Sentence-LDA,
#: PTM, DMM, and 2 for Sentence-LDA with split-merge
ALPHA = FAMILY_ALPHA / (2 * (6 * 3 + 2))
CHAINS = 20_000


def _next_states(model, params, data, states, read, seed: int) -> np.ndarray:
    """[starts, CHAINS, items] the items after one sweep of `model` from each of `states` (a
    list of State), CHAINS independent chains each, one compiled vmap over starts and chains."""
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)
    keys = jax.random.split(jax.random.key(seed), (len(states), CHAINS))
    one = jax.vmap(lambda k, st: model.sweep(k, st, data, params)[0], in_axes=(0, None))
    final = jax.jit(jax.vmap(one))(keys, stacked)
    return np.asarray(read(final))


def _check(name, space, starts, samples, laws, *wrong_laws) -> None:
    """Per start: the samples pass the bar against the kernel's law `laws` and fail it against
    each wrong law (the negative controls); each a list of rows, one per start."""
    for s, start in enumerate(starts):
        counts = counts_of(space, samples[s])
        assert_law(f"{name} start {s} {start}", counts, laws[s], ALPHA)
        for c, wrong in enumerate(wrong_laws):
            print(f"  control {c}: TV(law, control law) = "
                  f"{0.5 * np.abs(laws[s] - wrong[s]).sum():.3f}")
            assert_rejected(f"  {name} start {s} vs control {c}", counts, wrong[s], ALPHA)


# ------------------------------------------------------------------------------------------
# LDA: 2 documents, 8 tokens, K = 2 (256 states), 3 blocks of 3, 3, 2 tokens; block 0 holds
# tokens 0, 3 (document 0) and 6 (document 1), tokens 0 and 6 share word 0, and so on.

LDA_DOCS = [[0, 0, 1, 2], [1, 2, 0, 1]]
LDA_K, LDA_BLOCKS = 2, 3
LDA_STARTS = [[0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 1, 1, 0, 1, 0], [1, 1, 0, 0, 1, 1, 1, 0]]


@functools.lru_cache(maxsize=None)
def _lda_case(alpha: float, beta: float):
    word = np.concatenate(LDA_DOCS)
    doc = np.repeat(np.arange(len(LDA_DOCS)), [len(d) for d in LDA_DOCS])
    v, n, k = int(word.max()) + 1, word.size, LDA_K

    def log_joint(z):
        ndk = np.zeros((len(LDA_DOCS), k), np.int64)
        nkw = np.zeros((k, v), np.int64)
        np.add.at(ndk, (doc, z), 1)
        np.add.at(nkw, (z, word), 1)
        return dirmult(ndk, alpha) + dirmult(nkw, beta)

    corpus = Corpus.from_arrays(word, np.cumsum([0] + [len(d) for d in LDA_DOCS]),
                                [f"w{i}" for i in range(v)])
    return StateSpace([k] * n, log_joint), corpus, word, doc


def _own_kept_law(word: np.ndarray, doc: np.ndarray, alpha: float, beta: float):
    """A wrong per-token law for a negative control: eq. (1) of Griffiths & Steyvers with the
    token's own counts left in (n_dk + alpha)(n_kw + beta)/(n_k + V beta)."""
    v = int(word.max()) + 1

    def law(z, i):
        w = np.array([(np.sum((doc == doc[i]) & (z == t)) + alpha)
                      * (np.sum((word == word[i]) & (z == t)) + beta)
                      / (np.sum(z == t) + v * beta) for t in range(LDA_K)])
        return w / w.sum()
    return law


def _mh_law(space: StateSpace, word: np.ndarray, doc: np.ndarray, steps: int, alpha: float,
            beta: float):
    """Per-token law of `steps` MH cycles (document proposal, then word proposal) targeting the
    full conditional, proposals from the block-start counts with the token left out."""
    k = LDA_K

    def law(z, i):
        pi = space.conditional(z, i)
        others = np.arange(z.size) != i
        q_doc = np.bincount(z[others & (doc == doc[i])], minlength=k) + alpha
        q_word = np.bincount(z[others & (word == word[i])], minlength=k) + beta
        cycle = np.eye(k)
        for q in (q_doc / q_doc.sum(), q_word / q_word.sum()):
            step = np.zeros((k, k))
            for s in range(k):
                for t in range(k):
                    if t != s:
                        step[s, t] = q[t] * min(1.0, pi[t] * q[s] / (pi[s] * q[t]))
                step[s, s] = 1.0 - step[s].sum()
            cycle = cycle @ step
        return np.linalg.matrix_power(cycle, steps)[z[i]]
    return law


#: (mh_steps, alpha, beta). mh_steps=2 runs the unrolled cycles of ``lda._mh_block_draw``, 5 its
#: fori_loop (more than ``_MH_UNROLL`` = 4 cycles); 5 cycles come closer to the exact draw, so
#: that case takes smaller priors, under which the proposals are further from the conditional
#: and the control (the exact-draw law) stays clearly apart: chi-square noncentrality
#: n sum (p - q)^2 / q = 261-577 over the 3 starts, against 79-94 at alpha=0.2, beta=0.1.
LDA_CASES = [(0, 0.2, 0.1), (2, 0.2, 0.1), (5, 0.05, 0.05)]


@pytest.mark.parametrize("mh_steps, alpha, beta", LDA_CASES)
def test_lda_parallel_one_sweep_law(mh_steps: int, alpha: float, beta: float) -> None:
    """LDA's parallel kernel, exact draws (mh_steps=0) and MH moves (mh_steps > 0): 3 blocks of
    3, 3, 2 tokens. Controls: for exact draws the sequential scan in the same order and the
    blocked law with each token's own counts left in its conditional; for MH the exact-draw
    blocked law."""
    space, corpus, word, doc = _lda_case(alpha, beta)
    params = lda.check_params(lda.Params(LDA_K, alpha=alpha, beta=beta, num_blocks=LDA_BLOCKS,
                                         mh_steps=mh_steps))
    data = lda.prepare(corpus, params)
    starts = [np.asarray(s) for s in LDA_STARTS]
    states = [lda.state_from_assignments(jnp.asarray(s), data, params) for s in starts]
    samples = _next_states(lda, params, data, states, lambda st: st.z[..., :word.size],
                           seed=10 + mh_steps)
    blocks = strided(word.size, LDA_BLOCKS)
    assert [len(b) for b in blocks] == [3, 3, 2]
    exact = [sweep_row(space, s, blocks) for s in starts]
    if mh_steps == 0:
        sequential = [sweep_row(space, s, [[i] for b in blocks for i in b]) for s in starts]
        own_kept = _own_kept_law(word, doc, alpha, beta)
        stale_self = [sweep_row(space, s, blocks, own_kept) for s in starts]
        _check("LDA exact draws", space, starts, samples, exact, sequential, stale_self)
    else:
        law = _mh_law(space, word, doc, mh_steps, alpha, beta)
        laws = [sweep_row(space, s, blocks, law) for s in starts]
        _check(f"LDA mh_steps={mh_steps}", space, starts, samples, laws, exact)


# ------------------------------------------------------------------------------------------
# Sentence-LDA: 3 documents, 8 sentences (some with a repeated word), K = 2 (256 states),
# 3 blocks of 3, 3, 2 sentences; split-merge moves off (split_merge_steps=0).

SLDA_DOCS = (((0, 1), (1, 1, 2), (0,)), ((2, 3), (0, 0), (3,)), ((1, 3), (2, 2, 0)))
SLDA_K, SLDA_ALPHA, SLDA_BETA, SLDA_BLOCKS = 2, 0.3, 0.1, 3
SLDA_STARTS = [[0] * 8, [0, 1, 0, 1, 0, 1, 0, 1], [1, 1, 0, 0, 0, 1, 1, 0]]


def _slda_log_joint(docs, z) -> float:
    """Collapsed log p(w, z) of Sentence-LDA (K = SLDA_K) over the sentences with z >= 0 (the
    others left out of the corpus: the partial corpora of the split-merge proposal)."""
    sentences = [np.asarray(s) for d in docs for s in d]
    sent_doc = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    v = max(int(s.max()) for s in sentences) + 1
    z = np.asarray(z)
    cdk = np.zeros((len(docs), SLDA_K), np.int64)        # sentences per document and topic
    nkw = np.zeros((SLDA_K, v), np.int64)                 # tokens per topic and word
    for sent, d, t in zip(sentences, sent_doc, z):
        if t >= 0:
            cdk[d, t] += 1
            np.add.at(nkw[t], sent, 1)
    return dirmult(cdk, SLDA_ALPHA) + dirmult(nkw, SLDA_BETA)


@functools.lru_cache(maxsize=None)
def _slda_case(docs=SLDA_DOCS):
    sentences = [np.asarray(s) for d in docs for s in d]
    v = max(int(s.max()) for s in sentences) + 1
    word = np.concatenate(sentences)
    sent_off = np.cumsum([0] + [len(s) for s in sentences])
    doc_off = sent_off[np.cumsum([0] + [len(d) for d in docs])]
    corpus = Corpus.from_arrays(word, doc_off, [f"w{i}" for i in range(v)],
                                sentence_offsets=sent_off)
    return StateSpace([SLDA_K] * len(sentences), functools.partial(_slda_log_joint, docs)), corpus


def test_slda_parallel_one_sweep_law() -> None:
    """Sentence-LDA's parallel kernel: 3 blocks of 3, 3, 2 sentences, no split-merge."""
    space, corpus = _slda_case()
    params = slda.check_params(slda.Params(SLDA_K, alpha=SLDA_ALPHA, beta=SLDA_BETA,
                                           num_blocks=SLDA_BLOCKS, split_merge_steps=0))
    data = slda.prepare(corpus, params)
    s_count = len(space.sizes)
    starts = [np.asarray(s) for s in SLDA_STARTS]
    states = [slda.state_from_assignments(jnp.asarray(s), data, params) for s in starts]
    samples = _next_states(slda, params, data, states, lambda st: st.z[..., :s_count], seed=20)
    blocks = strided(s_count, SLDA_BLOCKS)
    assert [len(b) for b in blocks] == [3, 3, 2]
    laws = [sweep_row(space, s, blocks) for s in starts]
    wrong = [sweep_row(space, s, [[i] for b in blocks for i in b]) for s in starts]
    _check("Sentence-LDA", space, starts, samples, laws, wrong)


# Sentence-LDA with its split-merge move (Params.split_merge_steps=1, the default): 6 sentences
# in 2 blocks of 3, K = 2 (64 states), so the move's pair is always {0, 1}, every sentence is
# dealt, and its law can be enumerated over all 6! dealing orders.
SM_DOCS = (((0, 1), (1, 1, 2), (0,)), ((2, 3), (0, 0)), ((1, 3),))
SM_STARTS = [[0] * 6, [1, 1, 0, 0, 0, 1]]


def _split_merge_matrix(space: StateSpace, docs) -> tuple[np.ndarray, np.ndarray]:
    """([S, S] the exact law of one split-merge move at K = 2 (Dahl 2003's sequentially-allocated
    proposal, Metropolis-Hastings corrected), from the model's definition: the pair is {0, 1}
    (its selection probability is the same both ways and cancels); a uniformly random order of
    the sentences is dealt one by one from empty tables, sentence i to topic t with its
    conditional p(z_i = t | the sentences dealt before it) of the partial corpus; the dealt
    assignment z' is accepted with probability min(1, p(z') q(z) / (p(z) q(z'))), q the
    product of the dealing probabilities along the same order. The two labels are symmetric
    (both tables start empty, alpha is symmetric), so which of them is called "a" changes
    nothing. Also returns the proposal's law [S, S] (every proposal accepted: a wrong move)."""
    n, x = len(space.sizes), space.states
    # every partial assignment (digit 0: not dealt yet, 1 + t: dealt to topic t), its log joint
    digits = np.array(list(itertools.product(range(3), repeat=n)))
    partial = np.array([_slda_log_joint(docs, d - 1) for d in digits])
    place = 3 ** np.arange(n - 1, -1, -1)
    orders = np.array(list(itertools.permutations(range(n))))          # [O, n]
    log_q = np.zeros((len(orders), len(space)))          # log q[o, x]: order o deals x
    code = np.zeros((len(orders), len(space)), np.int64)  # the partial assignment dealt so far
    for j in range(n):
        i = orders[:, j]
        w = place[i][:, None]
        xi = x[:, i].T                                                  # [O, S]
        to0, to1 = partial[code + w], partial[code + 2 * w]
        log_q += np.where(xi == 0, to0, to1) - np.logaddexp(to0, to1)
        code = code + (xi + 1) * w
    q = np.exp(log_q)
    p = np.exp(space.lj - space.lj.max())
    # accepted mass of x -> y: mean over orders of min(q(y), p(y) q(x) / p(x))
    move = np.minimum(q[:, None, :], p[None, None, :] * q[:, :, None] / p[None, :, None]).mean(0)
    np.fill_diagonal(move, 0.0)
    move[np.diag_indices_from(move)] = 1.0 - move.sum(1)
    return move, np.broadcast_to(q.mean(0), move.shape)


def test_slda_split_merge_one_sweep_law() -> None:
    """Sentence-LDA's parallel sweep with one split-merge move after it (as ``sweep`` runs it):
    the law is the blocked row times the exact move matrix. Controls: the blocked law without
    the move, and the move without its MH correction (every proposal accepted)."""
    space, corpus = _slda_case(SM_DOCS)
    params = slda.check_params(slda.Params(SLDA_K, alpha=SLDA_ALPHA, beta=SLDA_BETA,
                                           num_blocks=2, split_merge_steps=1))
    data = slda.prepare(corpus, params)
    s_count = len(space.sizes)
    starts = [np.asarray(s) for s in SM_STARTS]
    states = [slda.state_from_assignments(jnp.asarray(s), data, params) for s in starts]
    samples = _next_states(slda, params, data, states, lambda st: st.z[..., :s_count], seed=50)
    blocks = strided(s_count, 2)
    assert [len(b) for b in blocks] == [3, 3]
    gibbs = [sweep_row(space, s, blocks) for s in starts]
    move, proposal = _split_merge_matrix(space, SM_DOCS)
    laws = [row @ move for row in gibbs]
    uncorrected = [row @ proposal for row in gibbs]
    _check("Sentence-LDA + split-merge", space, starts, samples, laws, gibbs, uncorrected)


# ------------------------------------------------------------------------------------------
# PTM: 4 documents, 6 tokens, P = 2 pseudo-documents, K = 2 (2^4 x 2^6 = 1024 states);
# 2 blocks: documents {0, 2}, {1, 3}, then tokens {0, 2, 4}, {1, 3, 5}.

PTM_DOCS = [[0, 1], [1], [0, 2, 1], []]
PTM_K, PTM_P, PTM_ALPHA, PTM_BETA, PTM_LAM, PTM_BLOCKS = 2, 2, 0.2, 0.1, 0.5, 2
PTM_STARTS = [[0, 0, 0, 0] + [0] * 6, [0, 1, 0, 1] + [0, 1, 1, 0, 1, 0],
              [1, 1, 0, 0] + [1, 1, 0, 0, 1, 1]]


@functools.lru_cache(maxsize=None)
def _ptm_case():
    word = np.concatenate([np.asarray(d, np.int64) for d in PTM_DOCS])
    doc = np.repeat(np.arange(len(PTM_DOCS)), [len(d) for d in PTM_DOCS])
    d_count, n, v = len(PTM_DOCS), word.size, int(word.max()) + 1

    def log_joint(x):
        pseudo, z = x[:d_count], x[d_count:]
        npd = np.bincount(pseudo, minlength=PTM_P)
        nlk = np.zeros((PTM_P, PTM_K), np.int64)
        np.add.at(nlk, (pseudo[doc], z), 1)
        nkw = np.zeros((PTM_K, v), np.int64)
        np.add.at(nkw, (z, word), 1)
        return dirmult(npd, PTM_LAM) + dirmult(nlk, PTM_ALPHA) + dirmult(nkw, PTM_BETA)

    corpus = Corpus.from_arrays(word, np.cumsum([0] + [len(d) for d in PTM_DOCS]),
                                [f"w{i}" for i in range(v)])
    return StateSpace([PTM_P] * d_count + [PTM_K] * n, log_joint), corpus, d_count, n


def test_ptm_parallel_one_sweep_law() -> None:
    """PTM's parallel kernel, both phases as the sweep runs them: the pseudo-documents of 2
    blocks of 2 documents (eq. 36), then the topics of 2 blocks of 3 tokens (T)."""
    space, corpus, d_count, n = _ptm_case()
    params = ptm.check_params(ptm.Params(PTM_K, PTM_P, alpha=PTM_ALPHA, beta=PTM_BETA,
                                         lam=PTM_LAM, num_blocks=PTM_BLOCKS))
    data = ptm.prepare(corpus, params)
    starts = [np.asarray(s) for s in PTM_STARTS]
    states = [ptm.state_from_assignments(jnp.asarray(s[d_count:]), jnp.asarray(s[:d_count]),
                                         data, params) for s in starts]
    samples = _next_states(ptm, params, data, states,
                           lambda st: jnp.concatenate([st.pseudo, st.z[..., :n]], axis=-1), seed=30)
    blocks = strided(d_count, PTM_BLOCKS) + strided(n, PTM_BLOCKS, offset=d_count)
    assert [len(b) for b in blocks] == [2, 2, 3, 3]
    laws = [sweep_row(space, s, blocks) for s in starts]
    wrong = [sweep_row(space, s, [[i] for b in blocks for i in b]) for s in starts]
    _check("PTM", space, starts, samples, laws, wrong)


# ------------------------------------------------------------------------------------------
# DMM: 8 documents, K = 2 (256 states), 3 blocks of 3, 3, 2 documents.

DMM_DOCS = [[0, 1], [1, 1, 2], [2], [0, 3], [3, 3], [1, 2], [0, 0, 3], [2, 3]]
DMM_K, DMM_ALPHA, DMM_BETA, DMM_BLOCKS = 2, 0.3, 0.1, 3
DMM_STARTS = [[0] * 8, [0, 1, 0, 1, 0, 1, 0, 1], [1, 0, 0, 1, 1, 1, 0, 0]]


@functools.lru_cache(maxsize=None)
def _dmm_case():
    docs = [np.asarray(d, np.int64) for d in DMM_DOCS]
    v = max(int(d.max()) for d in docs) + 1

    def log_joint(z):
        nkw = np.zeros((DMM_K, v), np.int64)
        for d, t in zip(docs, z):
            np.add.at(nkw[t], d, 1)
        return dirmult(np.bincount(z, minlength=DMM_K), DMM_ALPHA) + dirmult(nkw, DMM_BETA)

    corpus = Corpus.from_arrays(np.concatenate(docs), np.cumsum([0] + [len(d) for d in docs]),
                                [f"w{i}" for i in range(v)])
    return StateSpace([DMM_K] * len(docs), log_joint), corpus


def test_dmm_parallel_one_sweep_law() -> None:
    """DMM's parallel kernel: 3 blocks of 3, 3, 2 documents (eq. 24 against the block start)."""
    space, corpus = _dmm_case()
    params = dmm.check_params(dmm.Params(DMM_K, alpha=DMM_ALPHA, beta=DMM_BETA,
                                         num_blocks=DMM_BLOCKS))
    data = dmm.prepare(corpus, params)
    d_count = len(space.sizes)
    starts = [np.asarray(s) for s in DMM_STARTS]
    states = [dmm.State(*dmm.state_from_assignments(jnp.asarray(s), data, params),
                        *learned_priors.initial_traced(params, DMM_K)) for s in starts]
    samples = _next_states(dmm, params, data, states, lambda st: st.z[..., :d_count], seed=40)
    blocks = strided(d_count, DMM_BLOCKS)
    assert [len(b) for b in blocks] == [3, 3, 2]
    laws = [sweep_row(space, s, blocks) for s in starts]
    wrong = [sweep_row(space, s, [[i] for b in blocks for i in b]) for s in starts]
    _check("DMM", space, starts, samples, laws, wrong)
