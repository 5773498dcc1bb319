"""Seed words (guided topics, ``jaxtopics.seed_words``): LDA with a topic-word prior that
differs per topic, beta_kw = beta + weight on the seeded cells (PTM's seeds:
tests/test_seed_words_ptm.py).

1. Exact enumeration (DESIGN.md "How to test a sampler"): on a corpus small enough to list all
   K^N assignments, the final states of many independent chains of the exact kernels (LDA
   ``sequential`` and ``parallel`` with one token per block) follow the
   posterior computed here in numpy from the per-topic Dirichlet-multinomial joint; the
   package's log joint equals that joint on every state. Negative control: the same draws are
   rejected against the posterior of the symmetric prior (the seeds ignored).
2. The default parallel kernel pulls seed words into their topics on real data (Reuters), in
   either placement of two seed lists.
3. Facade, model files (bitwise resume), fold-in, held-out scores, sharding and errors.

Every statistical assertion has a false-alarm rate <= FAMILY_ALPHA (1e-3) split over its two
statistics; tolerances come from the number of chains, not from observed values.
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import Corpus, seed_words
from jaxtopics.errors import ParameterError
from jaxtopics.models import lda
from enumeration_stats import pooled_chisquare_p, tv, tv_bound

FAMILY_ALPHA = 1e-3

# K=2, N=7 tokens (128 states), repeated words within and across documents; word 0 seeded in
# topic 1 (weight 1.5), word 2 in topic 0 (weight 0.7): the posterior is TV ~0.2 from the
# symmetric prior's (0.48)
DOCS = [[0, 0, 1, 2], [1, 1, 2]]
K, ALPHA, BETA = 2, 0.3, 0.2
SEEDS = ((0, 2, 0.7), (1, 0, 1.5))
CHAINS = 60_000
# exact systematic-scan Gibbs from any start is within TV 1e-6 of the posterior after
# this many sweeps (test_sweeps_suffice computes it from the transition matrix: the seeds break
# the label symmetry, so the chain mixes between its two modes more slowly than unseeded LDA)
SWEEPS = 50


def _log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


class _Enumerated:
    """Every assignment z of the tiny corpus and its log joint under a [K, V] prior (numpy,
    float64, no lgamma: products of rising factorials)."""

    def __init__(self):
        self.word = np.concatenate([np.asarray(d, np.int32) for d in DOCS])
        self.doc = np.repeat(np.arange(len(DOCS)), [len(d) for d in DOCS])
        self.n, self.v = self.word.size, int(self.word.max()) + 1
        offsets = np.cumsum([0] + [len(d) for d in DOCS])
        self.corpus = Corpus.from_arrays(self.word, offsets, [f"w{i}" for i in range(self.v)])
        self.states = np.array(list(itertools.product(range(K), repeat=self.n)), np.int32)

    def prior(self, seeds) -> np.ndarray:
        beta = np.full((K, self.v), BETA)
        for t, w, weight in seeds:
            beta[t, w] += weight
        return beta

    def log_joints(self, seeds, group=None) -> np.ndarray:
        """log p(w, z) per state; `group` maps documents to their topic-count group (PTM's
        pseudo-documents; default each document its own)."""
        beta = self.prior(seeds)
        group = np.arange(len(DOCS)) if group is None else np.asarray(group)
        out = []
        for z in self.states:
            ngk = np.zeros((group.max() + 1, K), np.int64)
            nkw = np.zeros((K, self.v), np.int64)
            np.add.at(ngk, (group[self.doc], z), 1)
            np.add.at(nkw, (z, self.word), 1)
            total = sum(sum(_log_rising(ALPHA, c) for c in row) - _log_rising(K * ALPHA, row.sum())
                        for row in ngk)
            total += sum(sum(_log_rising(beta[k, w], nkw[k, w]) for w in range(self.v))
                         - _log_rising(beta[k].sum(), nkw[k].sum()) for k in range(K))
            out.append(total)
        return np.array(out)

    @staticmethod
    def posterior(log_joints: np.ndarray) -> np.ndarray:
        p = np.exp(log_joints - log_joints.max())
        return p / p.sum()

    def index(self, z: np.ndarray) -> np.ndarray:
        return np.ravel_multi_index(tuple(np.asarray(z).T), (K,) * self.n)

    def gibbs_sweep_matrix(self, log_joints: np.ndarray) -> np.ndarray:
        """One systematic-scan Gibbs sweep in token order, as a [S, S] matrix."""
        s = len(self.states)
        total = np.eye(s)
        for i in range(self.n):
            z = np.repeat(self.states[:, None, :], K, axis=1)
            z[:, :, i] = np.arange(K)
            lj = log_joints[self.index(z.reshape(-1, self.n))].reshape(-1, K)
            cond = np.exp(lj - lj.max(1, keepdims=True))
            cond /= cond.sum(1, keepdims=True)
            step = np.zeros((s, s))
            for t in range(K):
                zt = self.states.copy()
                zt[:, i] = t
                step[np.arange(s), self.index(zt)] = cond[:, t]
            total = total @ step
        return total


@functools.lru_cache(maxsize=None)
def _case() -> _Enumerated:
    return _Enumerated()


def _lda_chains(settings: dict, seed: int) -> np.ndarray:
    """Final z [chains, N] of independent seeded LDA chains from uniform random starts."""
    e = _case()
    params = lda.check_params(lda.Params(K, alpha=ALPHA, beta=BETA, seed_words=SEEDS, **settings))
    data = lda.prepare(e.corpus, params)
    k_init, k_run = jax.random.split(jax.random.key(seed))

    def chain(k0, k1):
        state = lda.init(k0, data, params)
        state = jax.lax.fori_loop(
            0, SWEEPS, lambda t, st: lda.sweep(jax.random.fold_in(k1, t), st, data, params)[0],
            state)
        return state.z[:e.n]

    run = jax.jit(jax.vmap(chain))
    return np.asarray(run(jax.random.split(k_init, CHAINS), jax.random.split(k_run, CHAINS)))


@functools.lru_cache(maxsize=None)
def _lda_histogram(kernel: str) -> np.ndarray:
    settings = {"sequential": dict(sampler="sequential"),
                # one token per block: the block-start counts are the current counts
                "parallel": dict(sampler="parallel", num_blocks=_case().n)}[kernel]
    z = _lda_chains(settings, seed=17 + len(kernel))
    return np.bincount(_case().index(z), minlength=len(_case().states))


def _assert_matches(counts: np.ndarray, post: np.ndarray, what: str) -> None:
    n = int(counts.sum())
    bound = tv_bound(post, n, FAMILY_ALPHA / 2)
    assert bound <= 0.03, "test design: too few chains for TV resolution 0.03"
    distance, p = tv(counts / n, post), pooled_chisquare_p(counts, post)
    assert distance < bound and p > FAMILY_ALPHA / 2, (
        f"{what}: TV={distance:.4f} (bound {bound:.4f}), chi-square p={p:.3g}, {n} chains")


def test_log_joint_matches_numpy_formula() -> None:
    """lda.log_joint with seeds = the per-topic Dirichlet-multinomial joint on every state."""
    e = _case()
    params = lda.check_params(lda.Params(K, alpha=ALPHA, beta=BETA, seed_words=SEEDS))
    data = lda.prepare(e.corpus, params)
    got = jax.jit(jax.vmap(lambda z: lda.log_joint(lda.state_from_assignments(z, data, params),
                                                   data, params)))(jnp.asarray(e.states))
    np.testing.assert_allclose(np.asarray(got, np.float64), e.log_joints(SEEDS), rtol=1e-5, atol=1e-4)


def test_sweeps_suffice() -> None:
    """Design check: from any start, exact Gibbs is within TV 1e-6 of the seeded
    posterior after SWEEPS sweeps, which the sweep matrix leaves invariant; and the seeded
    posterior is far from the symmetric one (what the negative control needs)."""
    e = _case()
    lj = e.log_joints(SEEDS)
    post = e.posterior(lj)
    p = e.gibbs_sweep_matrix(lj)
    assert tv(post @ p, post) < 1e-12
    # from every start (a seeded chain starts its seed words' tokens in their topics)
    after = np.linalg.matrix_power(p, SWEEPS)
    assert max(tv(row, post) for row in after) < 1e-6
    assert tv(post, e.posterior(e.log_joints(()))) > 0.1


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["sequential", "parallel"])
def test_lda_enumeration_matches_seeded_posterior(kernel: str) -> None:
    """The exact LDA kernels with a per-topic word prior sample the seeded posterior."""
    e = _case()
    _assert_matches(_lda_histogram(kernel), e.posterior(e.log_joints(SEEDS)), f"lda {kernel}")


@pytest.mark.slow
def test_negative_control_symmetric_posterior_is_rejected() -> None:
    """Power: the seeded sequential kernel's draws are rejected against the posterior of the
    symmetric beta (the seeds ignored), which is far more than the TV bound away."""
    e = _case()
    counts = _lda_histogram("sequential")
    wrong = e.posterior(e.log_joints(()))
    n = int(counts.sum())
    bound = tv_bound(wrong, n, FAMILY_ALPHA / 2)
    assert tv(wrong, e.posterior(e.log_joints(SEEDS))) > 3 * bound
    assert tv(counts / n, wrong) > bound
    assert pooled_chisquare_p(counts, wrong) < 1e-12


# ------------------------------------------------------------------------------------------
# real data: seed words end up in their topics


@pytest.mark.slow
def test_parallel_kernel_pulls_seed_words_into_their_topics(reuters) -> None:
    """On Reuters (K=10, the default parallel kernel and seed weight, 40 sweeps), two seed
    lists end up in the topics they are seeded in, in either placement: over half of their
    tokens sit in their topic ("church" also lives in other stories) and at least two seeds
    are in its top 10 (behaviour bars, not statistical ones; which word tops the topic
    depends on the chain: "political" tops the Russia topic from some starts). The two
    placements run the same seed, so a kernel that ignored the seeds would run the same chain
    twice and put each list in the same topic both times: one placement would fail."""
    church = ["pope", "vatican", "catholic", "church"]
    russia = ["yeltsin", "russian", "moscow", "kremlin"]
    word_ids = np.asarray(reuters.word_ids)

    def share_in(model, words, topic):
        mask = np.isin(word_ids, [reuters.vocab.index(w) for w in words])
        return float(np.mean(np.asarray(model.assignments)[mask] == topic))

    for placement in ({0: church, 1: russia}, {1: church, 0: russia}):
        model = jt.LDA(num_topics=10, seed_words=placement).fit(reuters, num_sweeps=40, seed=3,
                                                                 progress=False)
        for topic, words in placement.items():
            top = [w for w, _ in model.top_words(10)[topic]]
            assert share_in(model, words, topic) > 0.5, (topic, words)
            assert len(set(top) & set(words)) >= 2, (topic, top)


# ------------------------------------------------------------------------------------------
# facade, files, downstream read-outs, errors


TEXTS = ["apple banana apple cherry pear", "car engine wheel car road",
         "apple pear cherry banana", "road wheel engine car"] * 6


def _corpus() -> Corpus:
    return Corpus.from_texts(TEXTS)


def test_estimates_use_the_seeded_prior() -> None:
    """phi = (n_kw + beta_kw) / (n_k + sum_w beta_kw); the fitted beta is the [K, V] prior;
    the symmetric chain's read-outs are unchanged (a float beta)."""
    corpus = _corpus()
    model = jt.LDA(num_topics=2, seed_words={0: ["car"], 1: {"apple": 3.0}}).fit(
        corpus, num_sweeps=5, seed=0, progress=False)
    beta = np.full((2, corpus.num_words), 0.01, np.float32)
    beta[0, corpus.vocab.index("car")] += 1.0
    beta[1, corpus.vocab.index("apple")] += 3.0
    np.testing.assert_allclose(model.beta, beta)
    nkw = np.zeros((2, corpus.num_words))
    np.add.at(nkw, (np.asarray(model.assignments), np.asarray(corpus.word_ids)), 1)
    phi = (nkw + beta) / (nkw.sum(1) + beta.sum(1))[:, None]
    np.testing.assert_allclose(model.topic_word, phi, rtol=1e-5)
    assert "seed_words=2 words in 2 topics" in model.summary()
    plain = jt.LDA(num_topics=2).fit(corpus, num_sweeps=5, seed=0, progress=False)
    assert np.ndim(plain.beta) == 0


def test_model_file_round_trip_and_bitwise_resume(tmp_path) -> None:
    corpus = _corpus()
    est = jt.LDA(num_topics=2, seed_words={1: ["road", "wheel"]}, seed_weight=0.5)
    whole = est.fit(corpus, num_sweeps=8, seed=4, progress=False)
    half = est.fit(corpus, num_sweeps=4, seed=4, progress=False)
    half.save(tmp_path / "half.jtm")
    loaded = jt.load(tmp_path / "half.jtm")
    assert loaded.params.seed_words == half.params.seed_words == (
        (1, corpus.vocab.index("road"), 0.5), (1, corpus.vocab.index("wheel"), 0.5))
    resumed = loaded.resume(corpus, num_sweeps=4, progress=False)
    np.testing.assert_array_equal(resumed.assignments, whole.assignments)
    np.testing.assert_array_equal(resumed.topic_word, whole.topic_word)


def test_transform_and_held_out_use_the_seeded_phi() -> None:
    corpus = _corpus()
    model = jt.LDA(num_topics=2, seed_words={0: ["apple"], 1: ["car"]}, seed_weight=5.0).fit(
        corpus, num_sweeps=30, seed=1, progress=False)
    theta = np.asarray(model.transform(Corpus.from_texts(["apple pear banana", "car road"]),
                                       num_sweeps=40, seed=0))
    assert theta[0, 0] > 0.7 and theta[1, 1] > 0.7
    # held-out scores read the seeded phi: "apple" lies in the topic seeded with it
    assert np.isfinite(model.perplexity(["apple pear banana cherry"]))


def test_sharded_fit_takes_the_seeds() -> None:
    """fit(devices=2), with either exchange: every seed word's tokens land in its topic."""
    if len(jax.devices()) < 2:
        pytest.skip("needs 2 devices (tests/conftest.py splits the CPU)")
    corpus = _corpus()
    for exchange in ("rotate", "moves"):
        model = jt.LDA(num_topics=2, seed_words={0: ["apple", "pear"], 1: ["car", "road"]},
                       seed_weight=5.0, exchange=exchange).fit(
            corpus, num_sweeps=20, seed=0, progress=False, devices=2)
        z, w = np.asarray(model.assignments), np.asarray(corpus.word_ids)
        for topic, words in ((0, ["apple", "pear"]), (1, ["car", "road"])):
            mask = np.isin(w, [corpus.vocab.index(x) for x in words])
            assert (z[mask] == topic).mean() > 0.9, exchange


def test_errors_name_the_problem() -> None:
    corpus = _corpus()
    with pytest.raises(ParameterError, match="'bus' \\(topic 1\\) is not in the corpus vocabulary"):
        jt.LDA(num_topics=2, seed_words={1: ["car", "bus"]}).fit(corpus, 1, progress=False)
    skipped = jt.LDA(num_topics=2, seed_words={1: ["car", "bus"]}, unknown_seed_words="skip").fit(
        corpus, 1, progress=False)
    assert skipped.params.seed_words == ((1, corpus.vocab.index("car"), 1.0),)
    with pytest.raises(ParameterError, match="topic 2 must be an integer in \\[0, 2\\)"):
        jt.LDA(num_topics=2, seed_words={2: ["car"]})
    with pytest.raises(ParameterError, match="optimize_beta"):
        jt.LDA(num_topics=2, seed_words={0: ["car"]}, optimize_beta=True)
    with pytest.raises(ParameterError, match="mh_steps"):
        jt.LDA(num_topics=2, seed_words={0: ["car"]}, mh_steps=2)
    with pytest.raises(ParameterError, match="weight"):
        jt.LDA(num_topics=2, seed_words={0: ["car"]}, seed_weight=-1.0)
    with pytest.raises(ParameterError, match="list of words"):
        jt.LDA(num_topics=2, seed_words={0: "car"})
    with pytest.raises(ParameterError, match="outside the vocabulary"):
        lda.prepare(corpus, lda.Params(2, seed_words=((0, 999, 1.0),)))


def test_seed_words_match_the_nfc_vocabulary() -> None:
    # a corpus's vocabulary is NFC-normalised; a decomposed seed word ('cafe' + U+0301) was
    # "not in the corpus vocabulary" though it prints the same (and "skip" silently dropped it)
    corpus = jt.Corpus.from_texts(["caf\u00e9 tea cup", "car road wheel"] * 4)
    seeds = seed_words.resolve({0: ["cafe\u0301"]}, corpus.vocab, 2)
    assert seeds == ((0, corpus.vocab.index("caf\u00e9"), 1.0),)
    with pytest.raises(ParameterError, match="listed twice"):
        seed_words.resolve({0: ["cafe\u0301", "caf\u00e9"]}, corpus.vocab, 2)


def test_seed_file_format(tmp_path) -> None:
    path = tmp_path / "seeds.tsv"
    path.write_text("# topic<TAB>words\n0\tapple pear\n\n3\tcar\n0\tcherry\n", encoding="utf-8")
    assert seed_words.read_file(path) == {0: ["apple", "pear", "cherry"], 3: ["car"]}
    path.write_text("0\tapple\nfruit\tbanana\n", encoding="utf-8")
    with pytest.raises(ParameterError, match="line 2: .*'fruit' is not a non-negative integer"):
        seed_words.read_file(path)
    path.write_text("0\tapple\n1\n", encoding="utf-8")
    with pytest.raises(ParameterError, match="line 2: topic 1 lists no words"):
        seed_words.read_file(path)
    for digit in ("\u00b2", "\u0663"):         # '²' (int() raised ValueError), Arabic-Indic 3
        path.write_text(f"0\tapple\n{digit}\tpear\n", encoding="utf-8")
        with pytest.raises(ParameterError, match="line 2: .* is not a non-negative integer"):
            seed_words.read_file(path)


def test_unseeded_params_and_old_files_keep_the_symmetric_prior() -> None:
    """seed_words defaults to () (and is what a model file without the field ran with)."""
    assert lda.Params(3).seed_words == () and lda.PARAMS_ADDED_LATER["seed_words"] == ()
    assert seed_words.prior(lda.Params(3), 10) is None


def test_cli_fit_with_a_seed_words_file(tmp_path, capsys) -> None:
    """`jaxtopics fit --seed-words FILE --seed-weight W`: the saved model holds the seeds;
    a bad file or an unknown word is one error line naming the line or the word."""
    from jaxtopics.cli import main

    src = tmp_path / "docs.txt"
    src.write_text("\n".join(TEXTS), encoding="utf-8")
    seeds = tmp_path / "seeds.tsv"
    seeds.write_text("# guided topics\n1\tcar road\n0\tapple\n", encoding="utf-8")
    base = ["fit", "--input", str(src), "--num-topics", "2", "--sweeps", "10", "--no-progress",
            "--devices", "1"]
    assert main([*base, "--out", str(tmp_path / "o"), "--seed-words", str(seeds),
                 "--seed-weight", "3"]) == 0
    vocab = Corpus.from_texts(TEXTS).vocab
    saved = jt.load(tmp_path / "o" / "model.jtm")
    assert saved.params.seed_words == ((0, vocab.index("apple"), 3.0),
                                       (1, vocab.index("car"), 3.0), (1, vocab.index("road"), 3.0))
    capsys.readouterr()
    seeds.write_text("1\tcar\nx\tapple\n", encoding="utf-8")
    assert main([*base, "--out", str(tmp_path / "p"), "--seed-words", str(seeds)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "--seed words" not in err     # it said "--seed words file"
    seeds.write_text("1\tcar bus\n", encoding="utf-8")
    assert main([*base, "--out", str(tmp_path / "q"), "--seed-words", str(seeds)]) == 2
    assert "'bus' (topic 1) is not in the corpus vocabulary" in capsys.readouterr().err
    assert main(["fit", "--input", str(src), "--sweeps", "1", "--no-progress", "--devices", "1",
                 "--out", str(tmp_path / "r"), "--model", "dmm", "--seed-words", str(seeds)]) == 2
    assert "--seed-words does not apply to --model dmm" in capsys.readouterr().err
