"""Seed words (guided topics, ``jaxtopics.seed_words``) in PTM: the pseudo-document topic model
with a topic-word prior that differs per topic, beta_kw = beta + weight on the seeded cells.

1. Exact enumeration (DESIGN.md "How to test a sampler"): on a corpus small enough to list all
   P^D x K^N joint states (l, z), the final states of many independent chains of PTM's exact
   kernels (``sequential``; ``parallel`` with one document and one token per block) follow the
   posterior computed here in numpy from log p(l) + log p(z | l) + sum_k log DirMult(n_k. |
   beta_k.); the package's log joint equals it on every state. Negative control: the same
   draws are rejected against the posterior of the symmetric beta (the seeds ignored).
2. The default parallel kernel pulls seed words into their topics on real short texts (Tweet),
   in either placement of two seed lists.
3. Facade, model files (bitwise resume, files without the field), fold-in, held-out scores,
   sharding, errors, the command line; Sentence-LDA's refusal.

Every statistical assertion has a false-alarm rate <= FAMILY_ALPHA (1e-3) split over its two
statistics; tolerances come from the number of chains, not from observed values.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import Corpus
from jaxtopics.errors import ParameterError
from jaxtopics.models import ptm
from enumeration_stats import pooled_chisquare_p, tv, tv_bound
from test_ptm import Enumerated, _dirmult, _log_rising

FAMILY_ALPHA = 1e-3

# 4 documents (one empty), N = 4 tokens, K = P = 2: 2^4 x 2^4 = 256 joint states. Word 0 seeded
# in topic 1 (weight 1.5), word 1 in topic 0 (weight 0.7): the seeded posterior is TV 0.38
# from the symmetric prior's (test_sweeps_suffice), > 10 TV bounds
CASE = dict(docs=[[0, 1], [0], [1], []], k=2, p=2, alpha=0.3, beta=0.2, lam=0.5)
SEEDS = ((0, 1, 0.7), (1, 0, 1.5))
CHAINS = 60_000
# both exact scans are within TV 1e-6 of the seeded posterior from every start after this many
# sweeps (test_sweeps_suffice computes it from the transition matrices)
SWEEPS = 30
KERNELS = {"sequential": dict(sampler="sequential"),
           # one document and one token per block: every l, then every z, each exact
           "parallel": dict(sampler="parallel", num_blocks=64)}


class SeededEnumerated(Enumerated):
    """``test_ptm.Enumerated`` with the topic-word term one Dirichlet per topic, beta_k."""

    def __init__(self, seeds, **case):
        super().__init__(**case)
        self.beta_kw = np.full((self.k, self.num_words), self.beta)
        for topic, word, weight in seeds:
            self.beta_kw[topic, word] += weight

    def log_joint_np(self, s, alpha=None) -> float:
        pseudo, z = s[:self.d], s[self.d:]
        nlk = np.zeros((self.p, self.k), np.int64)
        nkw = np.zeros((self.k, self.num_words), np.int64)
        np.add.at(nlk, (pseudo[self.doc], z), 1)
        np.add.at(nkw, (z, self.word), 1)
        words = sum(sum(_log_rising(self.beta_kw[k, w], nkw[k, w]) for w in range(self.num_words))
                    - _log_rising(self.beta_kw[k].sum(), nkw[k].sum()) for k in range(self.k))
        return (_dirmult(np.bincount(pseudo, minlength=self.p), self.lam)
                + _dirmult(nlk, self.alpha) + words)


@functools.lru_cache(maxsize=None)
def _case(seeded: bool = True) -> SeededEnumerated:
    return SeededEnumerated(SEEDS if seeded else (), **CASE)


@functools.lru_cache(maxsize=None)
def _posterior(seeded: bool = True) -> np.ndarray:
    e = _case(seeded)
    return e.posterior(e.log_joints_np())


def _params(**settings) -> ptm.Params:
    e = _case()
    return ptm.check_params(ptm.Params(e.k, e.p, alpha=e.alpha, beta=e.beta, lam=e.lam,
                                       seed_words=SEEDS, **settings))


@functools.lru_cache(maxsize=None)
def _histogram(kernel: str) -> np.ndarray:
    """Joint-state counts of CHAINS independent seeded chains after SWEEPS sweeps from the
    chain's own start (``ptm.init``: seed words' tokens in their topic)."""
    e = _case()
    params = _params(**KERNELS[kernel])
    data = ptm.prepare(e.corpus, params)
    k_init, k_run = jax.random.split(jax.random.key(23 + len(kernel)))

    def chain(ki, kr):
        st = ptm.init(ki, data, params)
        return jax.lax.fori_loop(0, SWEEPS, lambda t, st: ptm.sweep(
            jax.random.fold_in(kr, t), st, data, params)[0], st)

    final = jax.jit(jax.vmap(chain))(jax.random.split(k_init, CHAINS),
                                     jax.random.split(k_run, CHAINS))
    s = np.concatenate([np.asarray(final.pseudo), np.asarray(final.z)[:, :e.n]], axis=1)
    return np.bincount(e.index(s), minlength=len(e.states))


def test_log_joint_matches_numpy_formula() -> None:
    """ptm.log_joint with seeds = the per-topic Dirichlet-multinomial joint on every state."""
    e = _case()
    params = _params()
    data = ptm.prepare(e.corpus, params)
    got = jax.jit(jax.vmap(lambda s: ptm.log_joint(
        ptm.state_from_assignments(s[e.d:], s[:e.d], data, params), data, params)))(
        jnp.asarray(e.states))
    np.testing.assert_allclose(np.asarray(got, np.float64), e.log_joints_np(), rtol=1e-5,
                               atol=1e-4)


def test_sweeps_suffice() -> None:
    """Design check: both exact scans (each document's l then its tokens' z; every l then every
    z) leave the seeded posterior invariant and reach it within TV 1e-6 from every start after
    SWEEPS sweeps; the seeded posterior is far from the symmetric one (the negative control's
    power)."""
    e = _case()
    lj = e.log_joints_np()
    post = e.posterior(lj)
    for sites in (e.sequential_sites, list(range(e.d + e.n))):
        m = e.scan_matrix(lj, sites)
        assert tv(post @ m, post) < 1e-12
        after = np.linalg.matrix_power(m, SWEEPS)
        assert max(tv(row, post) for row in after) < 1e-6
    assert tv(post, _posterior(seeded=False)) > 0.3


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_enumeration_matches_seeded_posterior(kernel: str) -> None:
    """PTM's exact kernels with a per-topic word prior sample the seeded posterior."""
    counts, post = _histogram(kernel), _posterior()
    n = int(counts.sum())
    bound = tv_bound(post, n, FAMILY_ALPHA / 2)
    assert bound <= 0.03, "test design: too few chains for TV resolution 0.03"
    distance, p = tv(counts / n, post), pooled_chisquare_p(counts, post)
    assert distance < bound and p > FAMILY_ALPHA / 2, (
        f"ptm {kernel}: TV={distance:.4f} (bound {bound:.4f}), chi-square p={p:.3g}, {n} chains")


@pytest.mark.slow
def test_negative_control_symmetric_posterior_is_rejected() -> None:
    """Power: the seeded sequential kernel's draws are rejected against the posterior of the
    symmetric beta (the seeds ignored), which lies far more than the TV bound away."""
    counts, wrong = _histogram("sequential"), _posterior(seeded=False)
    n = int(counts.sum())
    bound = tv_bound(wrong, n, FAMILY_ALPHA / 2)
    assert tv(wrong, _posterior()) > 3 * bound
    assert tv(counts / n, wrong) > bound
    assert pooled_chisquare_p(counts, wrong) < 1e-12


# ------------------------------------------------------------------------------------------
# real short texts: seed words end up in their topics


@pytest.fixture(scope="module")
def tweet():
    from conftest import SHARED_DATA
    from jaxtopics.datasets import load_shared

    if not (SHARED_DATA / "gsdmm" / "Tweet.jsonl").exists():
        pytest.skip("../shared/data/gsdmm/Tweet.jsonl not present")
    return load_shared("tweet", root=SHARED_DATA)


@pytest.mark.slow
def test_default_kernel_pulls_seed_words_into_their_topics(tweet) -> None:
    """On Tweet (2,472 short texts, K=20, P=100, the default parallel kernel and seed weight,
    40 sweeps), two seed lists end up in the topics they are seeded in, in either placement:
    over half of their tokens sit in their topic, its top word is a seed and at least two seeds
    are in its top 10 (behaviour bars, not statistical ones). Both placements run the same
    seed, so a kernel that ignored the seeds would put each list in the same topic both times."""
    fishing = ["fishing", "fish", "bass", "trout"]
    diet = ["acai", "berry", "weight", "diet"]
    word_ids = np.asarray(tweet.word_ids)
    for placement in ({0: fishing, 1: diet}, {1: fishing, 0: diet}):
        model = jt.PTM(num_topics=20, num_pseudo_docs=100, seed_words=placement).fit(
            tweet, num_sweeps=40, seed=3, progress=False)
        z = np.asarray(model.assignments)
        for topic, words in placement.items():
            mask = np.isin(word_ids, [tweet.vocab.index(w) for w in words])
            top = [w for w, _ in model.top_words(10)[topic]]
            assert float(np.mean(z[mask] == topic)) > 0.5, (topic, words)
            assert top[0] in words and len(set(top) & set(words)) >= 2, (topic, top)


# ------------------------------------------------------------------------------------------
# facade, files, downstream read-outs, errors


TEXTS = ["apple banana apple cherry pear", "car engine wheel car road",
         "apple pear cherry banana", "road wheel engine car"] * 6


def _corpus() -> Corpus:
    return Corpus.from_texts(TEXTS)


def test_estimates_and_start_use_the_seeded_prior() -> None:
    """phi = (n_kw + beta_kw) / (n_k + sum_w beta_kw); the fitted beta is the [K, V] prior; a
    seeded chain starts its seed words' tokens in their topic; the symmetric chain keeps a
    float beta and PTM's Params default to no seeds (what a model file without the field ran
    with)."""
    corpus = _corpus()
    est = jt.PTM(num_topics=2, num_pseudo_docs=3, seed_words={0: ["car"], 1: {"apple": 3.0}})
    model = est.fit(corpus, num_sweeps=5, seed=0, progress=False)
    beta = np.full((2, corpus.num_words), 0.01, np.float32)
    beta[0, corpus.vocab.index("car")] += 1.0
    beta[1, corpus.vocab.index("apple")] += 3.0
    np.testing.assert_allclose(model.beta, beta)
    nkw = np.zeros((2, corpus.num_words))
    np.add.at(nkw, (np.asarray(model.assignments), np.asarray(corpus.word_ids)), 1)
    np.testing.assert_allclose(model.topic_word, (nkw + beta) / (nkw.sum(1) + beta.sum(1))[:, None],
                               rtol=1e-5)
    assert "seed_words=2 words in 2 topics" in model.summary()
    start = np.asarray(est.fit(corpus, num_sweeps=0, seed=0, progress=False).assignments)
    w = np.asarray(corpus.word_ids)
    assert (start[w == corpus.vocab.index("car")] == 0).all()
    assert (start[w == corpus.vocab.index("apple")] == 1).all()
    plain = jt.PTM(num_topics=2, num_pseudo_docs=3).fit(corpus, num_sweeps=5, seed=0, progress=False)
    assert np.ndim(plain.beta) == 0
    assert ptm.Params(2, 3).seed_words == () and ptm.PARAMS_ADDED_LATER["seed_words"] == ()


@pytest.mark.parametrize("sampler", ["parallel", "sequential"])
def test_model_file_round_trip_and_bitwise_resume(tmp_path, sampler) -> None:
    corpus = _corpus()
    est = jt.PTM(num_topics=2, num_pseudo_docs=3, sampler=sampler,
                 seed_words={1: ["road", "wheel"]}, seed_weight=0.5)
    whole = est.fit(corpus, num_sweeps=6, seed=4, progress=False)
    half = est.fit(corpus, num_sweeps=3, seed=4, progress=False)
    half.save(tmp_path / "half.jtm")
    loaded = jt.load(tmp_path / "half.jtm")
    assert loaded.params.seed_words == half.params.seed_words == (
        (1, corpus.vocab.index("road"), 0.5), (1, corpus.vocab.index("wheel"), 0.5))
    resumed = loaded.resume(corpus, num_sweeps=3, progress=False)
    np.testing.assert_array_equal(resumed.assignments, whole.assignments)
    np.testing.assert_array_equal(resumed.topic_word, whole.topic_word)


def test_transform_and_held_out_use_the_seeded_phi() -> None:
    """Fold-in reads the seeded phi; the held-out score's log phi is the seeded one."""
    corpus = _corpus()
    model = jt.PTM(num_topics=2, num_pseudo_docs=3, seed_words={0: ["apple"], 1: ["car"]},
                   seed_weight=5.0).fit(corpus, num_sweeps=30, seed=1, progress=False)
    theta = np.asarray(model.transform(Corpus.from_texts(["apple pear banana", "car road"]),
                                       num_sweeps=40, seed=0))
    assert theta[0, 0] > 0.7 and theta[1, 1] > 0.7
    pieces = ptm.held_out_prior(model._state, model.params)
    np.testing.assert_allclose(np.exp(np.asarray(pieces.log_phi)), model.topic_word, rtol=1e-5)
    assert np.isfinite(model.perplexity(["apple pear banana cherry"]))


def test_sharded_fit_takes_the_seeds() -> None:
    """fit(devices=2) (the sharded parallel kernel): every seed word's tokens land in its topic."""
    if len(jax.devices()) < 2:
        pytest.skip("needs 2 devices (tests/conftest.py splits the CPU)")
    corpus = _corpus()
    model = jt.PTM(num_topics=2, num_pseudo_docs=3, seed_words={0: ["apple", "pear"],
                                                                1: ["car", "road"]},
                   seed_weight=5.0).fit(corpus, num_sweeps=20, seed=0, progress=False, devices=2)
    z, w = np.asarray(model.assignments), np.asarray(corpus.word_ids)
    for topic, words in ((0, ["apple", "pear"]), (1, ["car", "road"])):
        mask = np.isin(w, [corpus.vocab.index(x) for x in words])
        assert (z[mask] == topic).mean() > 0.9


def test_errors_name_the_problem() -> None:
    corpus = _corpus()
    with pytest.raises(ParameterError, match="'bus' \\(topic 1\\) is not in the corpus vocabulary"):
        jt.PTM(num_topics=2, num_pseudo_docs=3, seed_words={1: ["car", "bus"]}).fit(
            corpus, 1, progress=False)
    skipped = jt.PTM(num_topics=2, num_pseudo_docs=3, seed_words={1: ["car", "bus"]},
                     unknown_seed_words="skip").fit(corpus, 1, progress=False)
    assert skipped.params.seed_words == ((1, corpus.vocab.index("car"), 1.0),)
    with pytest.raises(ParameterError, match="topic 2 must be an integer in \\[0, 2\\)"):
        jt.PTM(num_topics=2, seed_words={2: ["car"]})
    with pytest.raises(ParameterError, match="optimize_beta"):
        jt.PTM(num_topics=2, seed_words={0: ["car"]}, optimize_beta=True)
    with pytest.raises(ParameterError, match="weight"):
        jt.PTM(num_topics=2, seed_words={0: ["car"]}, seed_weight=0.0)
    with pytest.raises(ParameterError, match="outside the vocabulary"):
        ptm.prepare(corpus, ptm.Params(2, 3, seed_words=((0, 999, 1.0),)))
    # learned alpha is fine with seeds (alpha is not the topic-word prior)
    jt.PTM(num_topics=2, seed_words={0: ["car"]}, optimize_alpha="symmetric")
    with pytest.raises(ParameterError, match="SentenceLDA does not support seed_words.*"
                                             "block_log_predictive.*LDA and PTM"):
        jt.SentenceLDA(num_topics=2, seed_words={0: ["car"]})


def test_cli_fit_ptm_with_a_seed_words_file(tmp_path, capsys) -> None:
    """`jaxtopics fit --model ptm --seed-words FILE --seed-weight W`: the saved model holds the
    seeds; Sentence-LDA takes no --seed-words."""
    from jaxtopics.cli import main

    src = tmp_path / "docs.txt"
    src.write_text("\n".join(TEXTS), encoding="utf-8")
    seeds = tmp_path / "seeds.tsv"
    seeds.write_text("# guided topics\n1\tcar road\n0\tapple\n", encoding="utf-8")
    base = ["fit", "--input", str(src), "--num-topics", "2", "--sweeps", "4", "--no-progress",
            "--devices", "1"]
    assert main([*base, "--model", "ptm", "--num-pseudo-docs", "3", "--out", str(tmp_path / "o"),
                 "--seed-words", str(seeds), "--seed-weight", "3"]) == 0
    vocab = Corpus.from_texts(TEXTS).vocab
    saved = jt.load(tmp_path / "o" / "model.jtm")
    assert saved.params.seed_words == ((0, vocab.index("apple"), 3.0),
                                       (1, vocab.index("car"), 3.0), (1, vocab.index("road"), 3.0))
    capsys.readouterr()
    assert main([*base, "--model", "slda", "--out", str(tmp_path / "s"),
                 "--seed-words", str(seeds)]) == 2
    assert "--seed-words does not apply to --model slda" in capsys.readouterr().err
