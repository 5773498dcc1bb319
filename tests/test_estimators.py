"""The facade: fit/resume/save/load, reproducibility, read-outs, bad parameters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import CorpusError, FormatError, ParameterError


def _same_state(a: jt.FittedModel, b: jt.FittedModel) -> None:
    for x, y in zip(a.state, b.state):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("sampler", ["parallel", "sequential", "uncollapsed"])
def test_same_seed_is_bitwise_identical(small_corpus, sampler):
    a = jt.LDA(4, sampler=sampler).fit(small_corpus, num_sweeps=12, seed=7, progress=False)
    b = jt.LDA(4, sampler=sampler).fit(small_corpus, num_sweeps=12, seed=7, progress=False)
    c = jt.LDA(4, sampler=sampler).fit(small_corpus, num_sweeps=12, seed=8, progress=False)
    _same_state(a, b)
    assert [p[:3] for p in a.trace] == [p[:3] for p in b.trace]      # all but wall time
    assert not np.array_equal(a.assignments, c.assignments)


@pytest.mark.parametrize("sampler", ["parallel", "sequential"])
def test_resume_equals_uninterrupted(small_corpus, tmp_path, sampler):
    straight = jt.LDA(4, sampler=sampler).fit(small_corpus, num_sweeps=25, seed=3, eval_every=5,
                                             progress=False)
    first = jt.LDA(4, sampler=sampler).fit(small_corpus, num_sweeps=10, seed=3, eval_every=5,
                                          progress=False)
    first.save(tmp_path / "m.jtm")
    resumed = jt.load(tmp_path / "m.jtm").resume(small_corpus, num_sweeps=15, eval_every=5,
                                                  progress=False)
    _same_state(straight, resumed)
    assert resumed.sweeps_done == 25
    assert [p.sweep for p in resumed.trace] == [5, 10, 15, 20, 25]
    assert [p.log_joint_per_token for p in resumed.trace] == [p.log_joint_per_token for p in straight.trace]
    # in-memory resume is the same chain too, whatever the eval cadence
    first.resume(small_corpus, num_sweeps=15, eval_every=7, progress=False)
    _same_state(straight, first)


def test_checkpoints_are_resumable(small_corpus, tmp_path):
    path = tmp_path / "ckpt.jtm"
    straight = jt.LDA(4).fit(small_corpus, num_sweeps=30, seed=5, progress=False)
    jt.LDA(4).fit(small_corpus, num_sweeps=20, seed=5, progress=False, checkpoint_path=path,
                  checkpoint_every=10)
    saved = jt.load(path)
    assert saved.sweeps_done == 20
    saved.resume(small_corpus, num_sweeps=10, progress=False)
    _same_state(straight, saved)
    assert not list(tmp_path.glob("*.tmp*")), "a temporary file was left behind"


def test_save_load_round_trip(small_corpus, tmp_path):
    m = jt.LDA(4, alpha=0.2, beta=0.05).fit(small_corpus, num_sweeps=10, seed=1, progress=False)
    m.save(tmp_path / "m.jtm")
    r = jt.load(tmp_path / "m.jtm")
    assert r.params == m.params and r.vocab == m.vocab and r.seed == 1 and r.sweeps_done == 10
    np.testing.assert_array_equal(r.topic_word, m.topic_word)
    np.testing.assert_array_equal(r.doc_topic, m.doc_topic)
    np.testing.assert_array_equal(r.assignments, m.assignments)
    assert r.top_words(5) == m.top_words(5)
    assert r.trace == m.trace
    assert r.log_joint_per_token() == pytest.approx(m.log_joint_per_token(), rel=1e-6)


def test_resume_rejects_a_different_corpus(small_corpus, tmp_path, reuters):
    m = jt.LDA(4).fit(small_corpus, num_sweeps=2, seed=0, progress=False)
    m.save(tmp_path / "m.jtm")
    with pytest.raises(CorpusError, match="not the one the model was fitted on"):
        jt.load(tmp_path / "m.jtm").resume(reuters, num_sweeps=1)


def test_load_rejects_other_files(tmp_path):
    p = tmp_path / "x.npz"
    np.savez(p, a=np.zeros(3))
    with pytest.raises(FormatError):
        jt.load(p)


def test_readouts(small_corpus):
    m = jt.LDA(4).fit(small_corpus, num_sweeps=20, seed=0, progress=False)
    phi, theta = m.topic_word, m.doc_topic
    assert phi.shape == (4, small_corpus.num_words) and theta.shape == (small_corpus.num_docs, 4)
    np.testing.assert_allclose(phi.sum(1), 1, rtol=1e-5)
    np.testing.assert_allclose(theta.sum(1), 1, rtol=1e-5)
    z = m.assignments
    assert z.shape == (small_corpus.num_tokens,) and z.min() >= 0 and z.max() < 4
    top = m.top_words(3)
    assert len(top) == 4 and all(len(t) == 3 for t in top)
    assert all(p1 >= p2 for t in top for (_, p1), (_, p2) in zip(t, t[1:]))
    assert m.top_words(2, topic=1) == [(w, p) for w, p in top[1][:2]]
    s = m.summary()
    assert "K=4" in s and "log joint per token" in s and top[0][0][0] in s
    assert m.log_joint_per_token() == pytest.approx(m.trace[-1].log_joint_per_token, rel=1e-6)
    assert [p.sweep for p in m.trace] == [10, 20]
    theta_new = m.transform(small_corpus.subset([0, 1, 2]), num_sweeps=10)
    assert theta_new.shape == (3, 4)
    np.testing.assert_allclose(theta_new.sum(1), 1, rtol=1e-5)


def test_empty_documents_are_kept(small_corpus):
    corpus = jt.Corpus.from_token_lists([["a", "b", "a"], [], ["b", "c"]])
    m = jt.LDA(2).fit(corpus, num_sweeps=3, seed=0, progress=False)
    theta = m.doc_topic
    assert theta.shape == (3, 2)
    np.testing.assert_allclose(theta[1], 0.5)          # the prior mean for an empty document


@pytest.mark.parametrize("kwargs, match", [
    ({"num_topics": 0}, "num_topics"),
    ({"num_topics": 2.5}, "num_topics"),
    ({"alpha": 0.0}, "alpha"),
    ({"beta": -1.0}, "beta"),
    ({"alpha": float("nan")}, "alpha"),
    ({"sampler": "gibbs"}, "sampler"),
    ({"num_blocks": 0}, "num_blocks"),
    ({"mh_steps": -1}, "mh_steps"),
])
def test_bad_parameters(kwargs, match):
    args = {"num_topics": 3, **kwargs}
    with pytest.raises(ParameterError, match=match):
        jt.LDA(**args)


def test_bad_fit_arguments(small_corpus):
    with pytest.raises(ParameterError, match="num_sweeps"):
        jt.LDA(3).fit(small_corpus, num_sweeps=-1)
    with pytest.raises(ParameterError, match="seed"):
        jt.LDA(3).fit(small_corpus, num_sweeps=1, seed="x")
    with pytest.raises(CorpusError, match="Corpus"):
        jt.LDA(3).fit([["a", "b"]], num_sweeps=1)
    m = jt.LDA(3).fit(small_corpus, num_sweeps=1, progress=False)
    with pytest.raises(ParameterError, match="topic"):
        m.top_words(3, topic=7)


def test_transform_recovers_the_fitted_document_topics():
    """Fold-in of the training documents with the fitted topics gives back (nearly) their theta."""
    from jaxtopics.datasets import synthetic_lda

    corpus = synthetic_lda(num_docs=80, num_words=120, num_topics=4, mean_doc_length=60,
                           alpha=0.1, beta=0.05, seed=3).corpus
    m = jt.LDA(4, alpha=0.1, beta=0.05).fit(corpus, num_sweeps=100, seed=0, progress=False)
    folded = m.transform(corpus, num_sweeps=40, seed=1)
    agree = np.mean(folded.argmax(1) == m.doc_topic.argmax(1))
    assert agree >= 0.9, agree
    assert np.abs(folded - m.doc_topic).mean() < 0.1
    with pytest.raises(ParameterError, match="num_sweeps"):
        m.transform(corpus, num_sweeps=0)


def test_incremental_init_is_consistent_and_better_than_uniform(small_corpus):
    """init="incremental" draws each block from the conditional given earlier blocks: its counts
    match its z, and its log joint beats a uniform init's (that is what it is for)."""
    import jax

    from jaxtopics.models import lda

    logs = {}
    for init in ("random", "incremental"):
        p = lda.Params(num_topics=4, init=init, num_blocks=16)
        data = lda.prepare(small_corpus, p)
        state = lda.init(jax.random.key(0), data, p)
        recount = lda.state_from_assignments(lda.assignments(state), data, p)
        for a, b in zip(state, recount):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        logs[init] = float(lda.log_joint(state, data, p))
    assert logs["incremental"] > logs["random"]
    with pytest.raises(ParameterError, match="init"):
        jt.LDA(3, init="kmeans")


# -- issue #9: defects found by a new user --------------------------------------------------

TRAIN = ["apple banana cherry apple banana", "cherry apple fruit salad", "car engine wheel car",
         "engine wheel tire road car", "apple fruit banana", "road tire car engine"] * 5


@pytest.fixture(scope="module")
def fruit_cars():
    corpus = jt.Corpus.from_texts(TRAIN)
    return corpus, jt.LDA(num_topics=2).fit(corpus, num_sweeps=200, seed=0, progress=False)


def test_transform_maps_a_corpus_with_its_own_vocabulary_by_word(fruit_cars):
    """#1: ids of a new corpus's own vocabulary are mapped by word, not trusted."""
    corpus, m = fruit_cars
    new = jt.Corpus.from_texts(["car car engine road tire wheel", "apple banana fruit cherry salad"])
    assert new.vocab != m.vocab[:new.num_words]          # the ids do not agree
    same = jt.Corpus.from_token_lists([new.words(0), new.words(1)], vocab=m.vocab)
    theta = m.transform(new, seed=3)
    np.testing.assert_array_equal(theta, m.transform(same, seed=3))
    cars, fruit = m.doc_topic[2].argmax(), m.doc_topic[0].argmax()
    assert cars != fruit and theta[0].argmax() == cars and theta[1].argmax() == fruit
    assert theta.max(1).min() > 0.9
    assert m.last_transform == jt.TransformInfo(2, 11, 0, (), ())


def test_transform_takes_raw_texts_tokenised_as_the_training_texts(fruit_cars):
    """#1: raw texts go through the training corpus's tokenizer settings (lowercase, stop words,
    min length, NFC); unknown words are dropped, counted and warned about; a document left empty
    gets the prior mean instead of crashing."""
    corpus, m = fruit_cars
    assert m.text_options == corpus.text_options and corpus.text_options is not None
    texts = ["The CAR and the engine, a road; the tire & wheel!", "Apple, banana and zebra",
             "zebra giraffe", ""]
    with pytest.warns(jt.UnknownWordsWarning, match="3 of 10 tokens"):
        theta = m.transform(texts, seed=1)
    info = m.last_transform
    assert info == jt.TransformInfo(4, 7, 3, ("zebra", "giraffe"), (2, 3))
    ids = jt.Corpus.from_token_lists([["car", "engine", "road", "tire", "wheel"], ["apple", "banana"]],
                                     vocab=m.vocab)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # nothing unknown: no warning
        np.testing.assert_array_equal(theta[:2], m.transform(ids, seed=1))
    np.testing.assert_allclose(theta[2:], 0.5)            # prior mean (symmetric alpha)
    with pytest.warns(jt.UnknownWordsWarning):
        np.testing.assert_allclose(m.transform(["zebra only"]), [[0.5, 0.5]])
    with pytest.raises(CorpusError, match="single string"):
        m.transform("car engine")
    with pytest.raises(CorpusError, match="texts\\[1\\]"):
        m.transform(["car", ["car"]])


@pytest.mark.parametrize("bad", [2.5, True, 0, -1, "3"])
def test_transform_validates_num_sweeps_and_seed(fruit_cars, bad):
    """#8: num_sweeps is validated as fit does (2.5 gave rows summing to 1.33; True a TypeError)."""
    corpus, m = fruit_cars
    with pytest.raises(ParameterError, match="num_sweeps"):
        m.transform(corpus, num_sweeps=bad)
    with pytest.raises(ParameterError, match="seed"):
        m.transform(corpus, seed=1.5)


@pytest.mark.parametrize("value", [1e-39, 1e39, 1e-40, 1e300, 5e-324, float("inf"), True, "0.1"])
@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_hyper_parameters_outside_float32_are_refused(name, value):
    """#9: alpha/beta that float32 cannot hold gave NaN silently; bools and strings are not numbers."""
    with pytest.raises(ParameterError, match=name):
        jt.LDA(2, **{name: value})


def test_extreme_hyper_parameters_inside_float32_still_work(small_corpus):
    """#9: 1e-30 and 1e30 keep working (finite estimates and log joint)."""
    for kw in ({"alpha": 1e-30}, {"alpha": 1e30}, {"beta": 1e-30}, {"beta": 1e30}):
        m = jt.LDA(3, **kw).fit(small_corpus, num_sweeps=2, progress=False)
        assert np.isfinite(m.log_joint_per_token()) and np.isfinite(m.doc_topic).all()
        assert np.isfinite(m.topic_word).all()
    with pytest.raises(ParameterError, match="K \\* alpha"):
        jt.LDA(100, alpha=1e37)
    with pytest.raises(ParameterError, match="V \\* beta"):
        jt.LDA(2, beta=1e37).fit(small_corpus, num_sweeps=1)


@pytest.mark.parametrize("k", [True, False, 2**31, 3.0, np.float64(2)])
def test_num_topics_refuses_bools_floats_and_beyond_int32(k):
    """#14: LDA(num_topics=True) ran as K=1; LDA(2**31).fit raised OverflowError."""
    with pytest.raises(ParameterError, match="num_topics"):
        jt.LDA(k)


def test_kernel_sizes_refuse_values_beyond_int32():
    """#14 sibling: num_blocks, mh_steps, chunk_size are bounded to int32 like num_topics."""
    for name in ("num_blocks", "mh_steps", "chunk_size"):
        with pytest.raises(ParameterError, match=name):
            jt.LDA(2, **{name: 2**31})
    assert jt.LDA(np.int64(3)).params.num_topics == 3 and type(jt.LDA(np.int64(3)).params.num_topics) is int
