"""Learned Dirichlet priors of Sentence-LDA and PTM (``optimize_alpha`` / ``optimize_beta``, the
rules of ``jaxtopics.learned_priors`` that LDA follows, tests/test_hyper.py): every kernel learns,
resume continues the learned values bitwise, the trace records them, sharded learning is
reproducible with equal priors on every shard, planted priors are recovered, and a learned
asymmetric alpha enters the kernels' conditionals exactly (against numpy: eq. (10), Sentence-LDA's
split-merge move, PTM's eq. (36)); a chain that learns nothing is bitwise the chain of the code
before learned priors, and that code's model files load.

The fixtures were written by the code before this change (commit 03d8e5d, checked out with
``git worktree add``), in this suite's ``optimized`` setting (XLA_FLAGS
``--xla_cpu_use_fusion_emitters=false``, full optimisation, 4 CPU devices), on the corpora of
:func:`_slda_corpus` / :func:`_ptm_corpus` with the estimators of ``MODELS`` (no learning):

- ``{slda,ptm}_format_before_learned_priors.jtm``: ``make().fit(corpus, 6, seed=2)`` saved;
- ``slda_ptm_before_learned_priors.npz``, for sampler in (parallel, sequential),
  ``m = make(sampler=sampler).fit(corpus, 8, seed=3, eval_every=4)``: ``<model>.<sampler>.``
  assignments, theta (doc_topic), phi (topic_word), trace (log p(w, z)/N at sweeps 4 and 8),
  transform (``m.transform(held, num_sweeps=6, seed=1)``), left_to_right
  (``m.log_likelihood(held, "left_to_right", seed=1, num_particles=2)``), completion
  (``m.log_likelihood(held, "completion", seed=1, num_sweeps=6)``) and the model's extra
  read-outs; ``<model>.sharded.`` assignments and trace of ``make().fit(corpus, 8, seed=3,
  eval_every=4, devices=2)``. ``held`` is the corpus function with seed 6 and 4 documents.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxtopics as jt
import jaxtopics.datasets
from jaxtopics import distributed as dist
from jaxtopics import hyper
from jaxtopics.corpus import Corpus
from jaxtopics.errors import JaxTopicsError, ParameterError
from jaxtopics.models import ptm, slda

FIXTURES = Path(__file__).parent / "fixtures"


@functools.lru_cache(maxsize=None)
def _slda_corpus(seed: int = 5, docs: int = 12) -> Corpus:
    return jt.datasets.synthetic_slda(num_docs=docs, num_words=30, num_topics=3, mean_sentences=4,
                                      mean_sentence_length=5, seed=seed).corpus


@functools.lru_cache(maxsize=None)
def _ptm_corpus(seed: int = 5, docs: int = 16) -> Corpus:
    return jt.datasets.synthetic_lda(num_docs=docs, num_words=30, num_topics=3,
                                     mean_doc_length=6, seed=seed).corpus


def _slda(**kw) -> jt.SentenceLDA:
    return jt.SentenceLDA(3, **{"alpha": 0.2, "beta": 0.05, "num_blocks": 4, **kw})


def _ptm(**kw) -> jt.PTM:
    return jt.PTM(3, 4, **{"alpha": 0.2, "beta": 0.05, "lam": 0.3, "num_blocks": 4, **kw})


#: model name -> (its corpus function, its estimator with the fixtures' settings, its module)
MODELS = {"slda": (_slda_corpus, _slda, slda), "ptm": (_ptm_corpus, _ptm, ptm)}
#: both priors learned from 1.0 and 0.5, updated after sweeps 4, 6, 8, ...
LEARN = dict(alpha=1.0, beta=0.5, optimize_alpha="asymmetric", optimize_beta=True, burn_in=2,
             optimize_every=2)


@pytest.mark.parametrize("name", MODELS)
def test_learning_settings_are_checked(name):
    make = MODELS[name][1]
    with pytest.raises(ParameterError, match="optimize_alpha must be"):
        make(optimize_alpha="yes")
    with pytest.raises(ParameterError, match="optimize_beta must be True or False"):
        make(optimize_beta=1)
    with pytest.raises(ParameterError, match="optimize_every"):
        make(optimize_alpha="symmetric", optimize_every=0)
    with pytest.raises(ParameterError, match="optimizer must be"):
        make(optimize_beta=True, optimizer="adam")
    with pytest.raises(ParameterError, match="burn_in=3 applies to learned priors only"):
        make(burn_in=3)
    ours = inspect.signature(type(make()).__init__).parameters     # keyword-only, as LDA's
    lda = inspect.signature(jt.LDA.__init__).parameters
    for arg in ("optimize_alpha", "optimize_beta", "optimize_every", "burn_in", "optimizer"):
        assert ours[arg].kind is inspect.Parameter.KEYWORD_ONLY, arg
        assert ours[arg].default == lda[arg].default, arg


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("sampler, mode", [("parallel", "asymmetric"), ("sequential", "symmetric")])
def test_every_kernel_learns_the_priors(name, sampler, mode):
    """Both kernels (and with them the split-merge move of Sentence-LDA, the fold-in of
    transform and the held-out likelihood) run on the learned values: they move from their
    start, stay finite and positive, and the trace records them at every point."""
    corpus_of, make, _ = MODELS[name]
    corpus = corpus_of()
    m = make(**{**LEARN, "sampler": sampler, "optimize_alpha": mode}).fit(corpus, 8, seed=0,
                                                                         eval_every=4)
    alpha = np.atleast_1d(m.alpha)
    assert alpha.shape == ((3,) if mode == "asymmetric" else (1,))
    assert np.all(np.isfinite(alpha)) and np.all(alpha > hyper.FLOOR)
    assert not np.allclose(alpha, 1.0)
    assert np.isfinite(m.beta) and m.beta > hyper.FLOOR and m.beta != 0.5
    assert "(learned; started at 1.0)" in m.summary()
    assert "(learned; started at 0.5)" in m.summary()
    np.testing.assert_allclose(m.doc_topic.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(m.topic_word.sum(1), 1.0, rtol=1e-5)
    assert np.isfinite(m.log_joint_per_token())
    assert np.isfinite(m.perplexity(corpus, num_particles=2))
    theta = m.transform(corpus, num_sweeps=4)
    assert np.all(np.isfinite(theta)) and np.allclose(theta.sum(1), 1.0, rtol=1e-5)
    # the trace: sweeps 4 and 8, each after an update (4, 6, 8), the last the fitted values
    assert [p.sweep for p in m.trace] == [4, 8]
    last = m.trace[-1].priors
    assert set(last) == {"alpha", "beta"} and m.trace[0].priors != last
    np.testing.assert_array_equal(np.asarray(last["alpha"], np.float32),
                                  np.asarray(m.alpha, np.float32))
    assert np.float32(last["beta"]) == np.float32(m.beta)


@pytest.mark.parametrize("name", MODELS)
def test_resume_continues_the_learned_priors_bitwise(name, tmp_path):
    """fit 16 == fit 8, save, load, resume 8: the same latents, priors and trace; the model
    file keeps the trace's priors."""
    corpus_of, make, _ = MODELS[name]
    corpus = corpus_of()
    est = make(**{**LEARN, "burn_in": 4, "optimize_every": 3})
    straight = est.fit(corpus, 16, seed=3, eval_every=4)
    half = est.fit(corpus, 8, seed=3, eval_every=4)
    half.save(tmp_path / "m.jtm")
    again = jt.load(tmp_path / "m.jtm")
    assert again.trace == half.trace
    np.testing.assert_array_equal(again.alpha, half.alpha)
    again.resume(corpus, 8, eval_every=4)
    for field, x, y in zip(straight.state._fields, again.state, straight.state):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=field)
    np.testing.assert_array_equal(again.alpha, straight.alpha)
    assert again.beta == straight.beta
    resumed = {t.sweep: (t.log_joint_per_token, t.priors) for t in again.trace}
    assert {t.sweep: resumed[t.sweep] for t in straight.trace} == {
        t.sweep: (t.log_joint_per_token, t.priors) for t in straight.trace}


def _reference_run(name: str) -> dict[str, np.ndarray]:
    """What the fixture script computed, computed by today's code (module docstring)."""
    corpus_of, make, _ = MODELS[name]
    corpus, held = corpus_of(), corpus_of(6, 4)
    out = {}
    for sampler in ("parallel", "sequential"):
        m = make(sampler=sampler).fit(corpus, 8, seed=3, eval_every=4)
        assert m.alpha == 0.2 and isinstance(m.alpha, float) and m.beta == 0.05
        assert "learned" not in m.summary() and all(p.priors is None for p in m.trace)
        p = f"{name}.{sampler}."
        out[p + "assignments"] = m.assignments
        out[p + "theta"] = m.doc_topic
        out[p + "phi"] = m.topic_word
        out[p + "trace"] = np.array([t.log_joint_per_token for t in m.trace])
        for extra in ("sentence_topics", "pseudo_labels", "pseudo_doc_topic"):
            if extra in m._estimates():
                out[p + extra] = getattr(m, extra)
        if sampler == "sequential":       # the read-outs below are the parallel fit's programs
            continue                      # again (the fixture has them for both)
        out[p + "transform"] = m.transform(held, num_sweeps=6, seed=1)
        out[p + "left_to_right"] = m.log_likelihood(held, "left_to_right", seed=1, num_particles=2)
        out[p + "completion"] = m.log_likelihood(held, "completion", seed=1, num_sweeps=6)
    sharded = make().fit(corpus, 8, seed=3, eval_every=4, devices=2)
    out[f"{name}.sharded.assignments"] = sharded.assignments
    out[f"{name}.sharded.trace"] = np.array([t.log_joint_per_token for t in sharded.trace])
    return out


@pytest.mark.parametrize("name", MODELS)
def test_a_chain_that_learns_nothing_is_the_chain_before_learned_priors(name, optimized):
    """Both kernels (Sentence-LDA's with its split-merge move), a sharded run, the read-outs,
    the fold-in of transform and both held-out methods give, bitwise, what the code before
    learned priors gave (the fixture): with nothing learned the kernels read the Params' Python
    floats, as before."""
    with np.load(FIXTURES / "slda_ptm_before_learned_priors.npz") as f:
        before = {k: f[k] for k in f.files if k.startswith(name + ".")}
    now = _reference_run(name)
    assert set(now) <= set(before) and len(now) >= 12
    for key, value in now.items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)


@pytest.mark.parametrize("name", MODELS)
def test_an_older_model_file_loads_and_continues_the_same_chain(name, optimized):
    """A model file written before the State held alpha and beta (module docstring): they are
    filled in from its params, and resuming it is the chain today's code runs from the start."""
    corpus_of, make, module = MODELS[name]
    path = FIXTURES / f"{name}_format_before_learned_priors.jtm"
    with np.load(path, allow_pickle=False) as f:
        assert "state.alpha.npy" not in f.zip.namelist() and "state.alpha" not in f.files
    old = jt.load(path)
    assert old.alpha == 0.2 and old.beta == 0.05 and old.params.optimize_alpha is None
    # PTM's file predates Params.draw: it resumes with the dense draw it ran with ("auto" is
    # the dense draw at this K, so the chains below agree)
    drawn = {"draw": "dense"} if "draw" in old.params._fields else {}
    assert old.params == make().params._replace(**drawn)
    np.testing.assert_array_equal(np.asarray(old.state.alpha), np.full(3, 0.2, np.float32))
    assert np.asarray(old.state.beta) == np.float32(0.05)
    old.resume(corpus_of(), 4)
    fresh = make().fit(corpus_of(), 10, seed=2)
    for field, x, y in zip(fresh.state._fields, old.state, fresh.state):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=field)


@pytest.mark.parametrize("name", MODELS)
def test_a_file_whose_fixed_prior_was_edited_is_refused(name, tmp_path):
    corpus_of, make, _ = MODELS[name]
    m = make().fit(corpus_of(), 2, seed=0)
    m._state = m.state._replace(alpha=jnp.full(3, 0.3, jnp.float32))
    m.save(tmp_path / "m.jtm")
    with pytest.raises(jt.FormatError, match="alpha differs from the parameter alpha=0.2"):
        jt.load(tmp_path / "m.jtm")


@pytest.mark.parametrize("name", MODELS)
def test_sharded_learning_is_reproducible_and_equal_on_every_shard(name):
    """devices=2: the same seed gives the same chain and priors; the trace records them. One
    sharded learning step leaves the same alpha and beta on both devices, the fit of the whole
    corpus: Sentence-LDA's alpha table (sentences per topic of each document) is split over the
    shards and its statistics summed (psum); PTM's (topics of each pseudo-document) is global,
    whole on every shard, as the topic-word table is for both."""
    corpus_of, make, module = MODELS[name]
    corpus = corpus_of()
    est = make(**LEARN)
    a = est.fit(corpus, 8, seed=1, devices=2)
    b = est.fit(corpus, 8, seed=1, devices=2)
    assert np.all(np.isfinite(a.alpha)) and np.all(a.alpha > hyper.FLOOR) and np.isfinite(a.beta)
    assert not np.allclose(a.alpha, 1.0) and a.beta != 0.5
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.beta == b.beta
    np.testing.assert_array_equal(a.assignments, b.assignments)
    np.testing.assert_array_equal(np.asarray(a.trace[-1].priors["alpha"], np.float32), a.alpha)

    params = est.params._replace(burn_in=0, optimize_every=1)
    mesh = dist.make_mesh(2)
    sdata = dist.prepare(corpus, params, 2)
    state, sdata = dist.place(dist.init(jax.random.key(0), sdata, params), sdata, mesh)
    learned = jax.jit(lambda st, sd: dist.Sharded(module, mesh).learn(st, sd, params,
                                                                      jnp.int32(0)))(state, sdata)
    for field in ("alpha", "beta"):
        shards = [np.asarray(s.data) for s in getattr(learned, field).addressable_shards]
        assert len(shards) == 2
        np.testing.assert_array_equal(shards[0], shards[1], err_msg=field)
    whole = dist.gather(state, sdata)
    table = whole.doc_topic if name == "slda" else whole.pseudo_topic
    np.testing.assert_allclose(np.asarray(learned.alpha),
                               np.asarray(hyper.minka(jnp.ones(3), table).value), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(learned.beta),
                               np.asarray(hyper.minka(jnp.float32(0.5), whole.word_topic,
                                                      axis=0).value), rtol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_command_line_flags(name):
    """--optimize-alpha, --optimize-beta, --optimize-every and --burn-in reach lda, slda and ptm
    (one declaration in jaxtopics.options); a model without learned priors refuses them."""
    from jaxtopics.cli import _estimator, build_parser
    from jaxtopics.options import LEARNED_PRIORS, MODEL_OPTIONS

    for model in ("lda", "slda", "ptm"):
        assert all(o in MODEL_OPTIONS[model] for o in LEARNED_PRIORS)
        assert all(model in o.help for o in LEARNED_PRIORS)
    flags = ["--optimize-alpha", "asymmetric", "--optimize-beta", "--burn-in", "4",
             "--optimize-every", "2"]
    args = build_parser().parse_args(["fit", "-i", "x", "-o", "y", "--model", name, *flags])
    p = _estimator(args).params
    assert (p.optimize_alpha, p.optimize_beta, p.burn_in, p.optimize_every) == ("asymmetric", True,
                                                                               4, 2)
    other = sorted(m for m, opts in MODEL_OPTIONS.items() if LEARNED_PRIORS[1] not in opts)[0]
    args = build_parser().parse_args(["fit", "-i", "x", "-o", "y", "--model", other,
                                      "--optimize-beta"])
    with pytest.raises(JaxTopicsError, match=f"--optimize-beta does not apply to --model {other}"):
        _estimator(args)


# --------------------------------------------------------------------------------------------
# recovery of planted priors


def _oracle(counts: np.ndarray, start: float, axis: int = -1) -> float:
    """The prior learned from the planted counts themselves (``hyper.minka``, the same Gamma
    guard): what a sampler that found the planted latents would learn."""
    return float(hyper.minka(jnp.float32(start), jnp.asarray(counts), axis=axis).value)


def test_sentence_lda_recovers_planted_priors(optimized):
    """Planted alpha = 0.3 over sentence topics and a symmetric beta = 0.02 (zipf_exponent=0),
    200 documents of ~10 sentences, K=6; learned from 1.0 and 0.1. The chain finds the planted
    sentence topics, so the learned values are those of the planted counts (the oracle): over
    seeds 0-4 within 0.5 % (alpha) and 0.8 % (beta) of it, 4 of 5 to four digits (seed 0 here:
    alpha 0.3290 vs 0.3275, beta 0.02152 vs 0.02169). The oracle itself is one corpus's
    estimate of the truth: over the same seeds alpha 0.280-0.340 and beta 0.0185-0.0251, so the
    learned values are held within 20 % and 30 % of the planted ones."""
    syn = jt.datasets.synthetic_slda(num_docs=200, num_words=200, num_topics=6, mean_sentences=10,
                                     mean_sentence_length=8, alpha=0.3, beta=0.02,
                                     zipf_exponent=0.0, seed=0)
    corpus = syn.corpus
    starts = corpus.sentence_offsets[:-1]
    doc_of_sentence = np.searchsorted(corpus.doc_offsets, starts, side="right") - 1
    sentences = np.zeros((corpus.num_docs, 6), np.int32)
    np.add.at(sentences, (doc_of_sentence, syn.assignments[starts]), 1)
    words = np.zeros((corpus.num_words, 6), np.int32)
    np.add.at(words, (corpus.word_ids, syn.assignments), 1)
    m = jt.SentenceLDA(6, alpha=1.0, beta=0.1, optimize_alpha="symmetric", optimize_beta=True,
                       burn_in=20, optimize_every=5).fit(corpus, 60, seed=0)
    assert m.alpha == pytest.approx(_oracle(sentences, 1.0), rel=0.03)
    assert m.beta == pytest.approx(_oracle(words, 0.1, axis=0), rel=0.03)
    assert m.alpha == pytest.approx(0.3, rel=0.2)
    assert m.beta == pytest.approx(0.02, rel=0.3)


def _planted_ptm(seed: int, pseudo_docs: int = 12, topics: int = 6, words: int = 200,
                 length: int = 800, short: int = 12):
    """A PTM corpus from ``datasets.synthetic_lda``: its `pseudo_docs` long documents (theta_l ~
    Dir(0.3), ~`length` tokens, symmetric phi ~ Dir(0.02)) are the pseudo-documents, each cut
    into short documents of `short` tokens (an LDA document's tokens are exchangeable given
    theta, so this is PTM's generative process given the pseudo-document labels), shuffled.
    Returns (corpus, planted pseudo-document-topic counts [P, K], word-topic counts [V, K])."""
    syn = jt.datasets.synthetic_lda(num_docs=pseudo_docs, num_words=words, num_topics=topics,
                                    mean_doc_length=length, alpha=0.3, beta=0.02,
                                    zipf_exponent=0.0, seed=seed)
    c = syn.corpus
    pieces = [(a, min(a + short, c.doc_offsets[p + 1])) for p in range(pseudo_docs)
              for a in range(c.doc_offsets[p], c.doc_offsets[p + 1], short)]
    pieces = [pieces[i] for i in np.random.default_rng(seed).permutation(len(pieces))]
    tokens = np.concatenate([np.arange(a, b) for a, b in pieces])
    lengths = np.array([b - a for a, b in pieces])
    corpus = Corpus.from_arrays(c.word_ids[tokens], np.concatenate([[0], np.cumsum(lengths)]),
                                c.vocab)
    pseudo = np.zeros((pseudo_docs, topics), np.int32)
    np.add.at(pseudo, (c.doc_index, syn.assignments), 1)
    word_topic = np.zeros((words, topics), np.int32)
    np.add.at(word_topic, (c.word_ids, syn.assignments), 1)
    return corpus, pseudo, word_topic


def test_ptm_recovers_planted_priors(optimized):
    """12 planted pseudo-documents cut into ~800 short documents of 12 tokens, K=6, alpha=0.3,
    beta=0.02; PTM with P=12 learns both from 1.0 and 0.1. A short document's pseudo-document
    is uncertain (NMI of the sampled labels to the planted ones 0.69-0.83), so a sample's
    pseudo-document rows mix several planted ones (alpha up) and its word counts are less
    sparse than the planted (beta up); the values are averaged over the trace points after
    sweep 50 (10 updates). Over seeds 0-5 those averages were within -7 % .. +21 % (alpha) and
    +4 % .. +15 % (beta) of the oracle, the values of the planted counts (seed 0 here: alpha
    0.306 vs 0.270, beta 0.0216 vs 0.0205): held within 30 % and 25 %."""
    corpus, pseudo, word_topic = _planted_ptm(0)
    m = jt.PTM(6, 12, alpha=1.0, beta=0.1, lam=0.1, optimize_alpha="symmetric", optimize_beta=True,
               burn_in=20, optimize_every=5).fit(corpus, 150, seed=0, eval_every=10)
    late = [t.priors for t in m.trace if t.sweep > 50]
    alpha, beta = (np.mean([p[name] for p in late]) for name in ("alpha", "beta"))
    assert alpha == pytest.approx(_oracle(pseudo, 1.0), rel=0.3)
    assert beta == pytest.approx(_oracle(word_topic, 0.1, axis=0), rel=0.25)


# --------------------------------------------------------------------------------------------
# a learned asymmetric alpha in the kernels: their conditionals against numpy (float64)


def _log_rising(x: float, n: int) -> float:
    return float(sum(math.log(x + j) for j in range(int(n))))


def _with_alpha(module, state, params, alpha: np.ndarray):
    """(state, params) of a chain that learns an asymmetric alpha, now at `alpha` (never updated
    here: burn_in is past every sweep these tests run)."""
    params = module.check_params(params._replace(optimize_alpha="asymmetric", burn_in=10**6))
    return state._replace(alpha=jnp.asarray(alpha, jnp.float32)), params


#: Sentence-LDA's enumeration case K3S5 of tests/test_slda_kernels.py, with alpha_k per topic
SLDA_DOCS = [[[0, 1, 1], [2, 0]], [[1, 2, 2], [0, 0, 3]], [[3, 1]]]
SLDA_ALPHA = np.array([0.15, 0.6, 1.4])


def _slda_case():
    corpus = Corpus.from_token_lists([[[f"w{w}" for w in s] for s in d] for d in SLDA_DOCS],
                                     sentences=True)
    sentences = [np.array([corpus.vocab.index(f"w{w}") for w in s]) for d in SLDA_DOCS for s in d]
    sent_doc = np.repeat(np.arange(len(SLDA_DOCS)), [len(d) for d in SLDA_DOCS])
    return corpus, sentences, sent_doc


def _slda_log_joint(z, sentences, sent_doc, alpha, beta, k, v) -> float:
    """log p(w, z): sum_m [sum_k log alpha_k^(c_mk) - log A^(S_m)] + sum_k [sum_w log beta^(n_kw)
    - log (V beta)^(n_k)], rising factorials as products (A = sum_k alpha_k)."""
    c = np.zeros((sent_doc.max() + 1, k), np.int64)
    n = np.zeros((k, v), np.int64)
    for s, t in enumerate(z):
        c[sent_doc[s], t] += 1
        np.add.at(n[t], sentences[s], 1)
    return (sum(sum(_log_rising(a, x) for a, x in zip(alpha, row)) - _log_rising(alpha.sum(), row.sum())
                for row in c)
            + sum(sum(_log_rising(beta, x) for x in row) - _log_rising(v * beta, row.sum())
                  for row in n))


def test_sentence_lda_conditional_with_an_asymmetric_alpha():
    """Eq. (10) with alpha_k: the kernel's log weights for one sentence are the conditional of
    the collapsed joint with a Dirichlet(alpha_1..alpha_K) over each document's sentence topics
    (ratios of joints, every state of 3 topics and 5 sentences, every sentence); log_joint is
    that joint."""
    corpus, sentences, sent_doc = _slda_case()
    k, v, s = 3, corpus.num_words, len(sentences)
    params = slda.check_params(slda.Params(k, alpha=0.3, beta=0.2))
    data = slda.prepare(corpus, params)
    states = np.array(list(itertools.product(range(k), repeat=s)), np.int32)
    joint = np.array([_slda_log_joint(z, sentences, sent_doc, SLDA_ALPHA, 0.2, k, v)
                      for z in states])

    def weights(z, i):
        st, p = _with_alpha(slda, slda.state_from_assignments(z, data, params), params, SLDA_ALPHA)
        pos = i[None]
        lw = slda._log_weights(slda._sentence_inputs(data, pos), st.z[pos], st, p, v)[0]
        return jax.nn.softmax(lw), slda.log_joint(st, data, p)

    got, lj = jax.jit(jax.vmap(jax.vmap(weights, (None, 0)), (0, None)))(jnp.asarray(states),
                                                                         jnp.arange(s))
    np.testing.assert_allclose(np.asarray(lj[:, 0], np.float64), joint, rtol=1e-5)
    index = {tuple(z): i for i, z in enumerate(states)}
    for i in range(s):
        others = states.copy()
        want = np.empty((len(states), k))
        for t in range(k):
            others[:, i] = t
            want[:, t] = joint[[index[tuple(z)] for z in others]]
        want = np.exp(want - want.max(1, keepdims=True))
        np.testing.assert_allclose(np.asarray(got[:, i]), want / want.sum(1, keepdims=True),
                                   atol=2e-6, err_msg=f"sentence {i}")


def test_sentence_lda_split_merge_keeps_the_posterior_with_an_asymmetric_alpha():
    """From exact posterior draws under alpha_k (K=2, the pair is always both topics, dealt
    as a, b in either order: the move must take alpha_a and alpha_b in that order), one
    split-merge move leaves the law unchanged: TV and chi-square within their bounds for
    40,000 chains (false alarm <= 1e-3), and the move changes > 5 % of the states."""
    from enumeration_stats import pooled_chisquare_p, tv, tv_bound
    docs = [[[0, 0, 1], [1, 2]], [[2, 3, 3], [0, 1]], [[3, 3, 2, 0], [1], [2, 2]]]
    alpha = np.array([0.2, 1.5])
    corpus = Corpus.from_token_lists([[[f"w{w}" for w in s] for s in d] for d in docs],
                                     sentences=True)
    sentences = [np.array([corpus.vocab.index(f"w{w}") for w in s]) for d in docs for s in d]
    sent_doc = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    states = np.array(list(itertools.product(range(2), repeat=len(sentences))), np.int32)
    joint = np.array([_slda_log_joint(z, sentences, sent_doc, alpha, 0.2, 2, corpus.num_words)
                      for z in states])
    post = np.exp(joint - joint.max())
    post /= post.sum()
    chains = 40_000
    start = states[np.random.default_rng(3).choice(len(post), size=chains, p=post)]
    params = slda.check_params(slda.Params(2, alpha=0.3, beta=0.2, sampler="sequential"))
    data = slda.prepare(corpus, params)

    def move(key, z):
        st, p = _with_alpha(slda, slda.state_from_assignments(z, data, params), params, alpha)
        return slda._reallocate(key, st, data, p)[0].z[:-1]

    z = np.asarray(jax.jit(jax.vmap(move))(jax.random.split(jax.random.key(5), chains),
                                           jnp.asarray(start)))
    counts = np.bincount(np.ravel_multi_index(tuple(z.T), (2,) * len(sentences)),
                         minlength=len(states))
    assert (z != start).any(1).mean() > 0.05
    assert tv(counts / chains, post) < tv_bound(post, chains, 1e-3 / 2)
    assert pooled_chisquare_p(counts, post) > 1e-3 / 2


def test_ptm_pseudo_document_step_with_an_asymmetric_alpha():
    """Eq. (36) with alpha_k: prod_k (N_l^k + alpha_k)^(N_m^k) / (N_l + sum_k alpha_k)^(N_m), the
    document's own counts left out, in float64 against the kernel's log weights (documents of
    0 to 40 tokens, repeated topics); log_joint's p(z | l) term uses the same alpha_k."""
    rng = np.random.default_rng(3)
    lengths = np.array([3, 0, 40, 7, 1, 12])
    alpha, lam, k, p = np.array([0.05, 0.3, 0.9, 2.0, 0.4]), 0.2, 5, 4
    corpus = Corpus.from_arrays(rng.integers(0, 30, size=int(lengths.sum())).astype(np.int32),
                                np.concatenate([[0], np.cumsum(lengths)]),
                                [f"w{i}" for i in range(30)])
    params = ptm.check_params(ptm.Params(k, p, alpha=0.1, lam=lam))
    data = ptm.prepare(corpus, params)
    state, params = _with_alpha(ptm, jax.jit(ptm.init, static_argnums=2)(jax.random.key(4), data,
                                                                         params), params, alpha)
    logits = np.asarray(jax.jit(lambda st: ptm._pseudo_logits(
        st.z[data.doc_tokens], data.doc_valid, st.pseudo, st.doc_topic, st.pseudo_topic,
        st.pseudo_docs, params, ptm._priors(st, params)[0]))(state), np.float64)
    z, labels = np.asarray(state.z)[:-1], np.asarray(state.pseudo)
    for m in range(corpus.num_docs):
        nlk = np.zeros((p, k), np.int64)
        np.add.at(nlk, (labels[corpus.doc_index], z), 1)
        nl = np.bincount(labels, minlength=p)
        mine = np.bincount(z[corpus.doc_offsets[m]:corpus.doc_offsets[m + 1]], minlength=k)
        nlk[labels[m]] -= mine
        nl[labels[m]] -= 1
        want = np.array([math.log(nl[j] + lam)
                         + sum(_log_rising(nlk[j, t] + alpha[t], mine[t]) for t in range(k))
                         - _log_rising(nlk[j].sum() + alpha.sum(), mine.sum()) for j in range(p)])
        np.testing.assert_allclose(logits[m] - np.logaddexp.reduce(logits[m]),
                                   want - np.logaddexp.reduce(want), atol=1e-4, err_msg=f"doc {m}")
    pseudo = np.asarray(state.pseudo_topic)
    term = sum(sum(_log_rising(a, x) for a, x in zip(alpha, row)) - _log_rising(alpha.sum(), row.sum())
               for row in pseudo)
    rest = ptm.log_joint(state._replace(alpha=jnp.full(k, 0.1, jnp.float32)), None,
                         params._replace(optimize_alpha=None))
    fixed = sum(sum(_log_rising(0.1, x) for x in row) - _log_rising(k * 0.1, row.sum())
                for row in pseudo)
    np.testing.assert_allclose(float(ptm.log_joint(state, data, params)),
                               float(rest) - fixed + term, rtol=1e-5)
