"""The facade: fit/resume/save/load, reproducibility, read-outs, bad parameters."""

from __future__ import annotations

import re
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
    ({"sampler": "sequential", "mh_steps": 2}, "mh_steps applies to the 'parallel' sampler"),
    ({"sampler": "uncollapsed", "mh_steps": 1}, "mh_steps applies to the 'parallel' sampler"),
    ({"draw": "fast"}, "draw must be one of"),
    ({"draw": "sparse", "mh_steps": 2}, "draw='sparse'"),
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


def test_transform_raw_texts_after_load_and_without_text_options(fruit_cars, small_corpus, tmp_path):
    """#1: the tokenizer settings travel in the model file; a model of a corpus not built from
    texts refuses raw texts (it cannot know how to tokenise them) but maps a Corpus."""
    corpus, m = fruit_cars
    m.save(tmp_path / "m.jtm")
    r = jt.load(tmp_path / "m.jtm")
    assert r.text_options == m.text_options
    np.testing.assert_array_equal(r.transform(["car engine road"], seed=2),
                                  m.transform(["car engine road"], seed=2))
    c = jt.Corpus.from_texts(TRAIN, stop_words=["apple"], min_length=3, lowercase=False)
    m2 = jt.LDA(2).fit(c, num_sweeps=2, progress=False)
    m2.save(tmp_path / "m2.jtm")
    r2 = jt.load(tmp_path / "m2.jtm")
    assert r2.text_options == c.text_options == jt.corpus.TextOptions(None, False, ("apple",), 3)
    with pytest.warns(jt.UnknownWordsWarning, match="'Car'"):
        r2.transform(["Car apple car"])
    assert r2.last_transform.num_tokens == 1             # 'apple' is a stop word, 'Car' unknown
    custom = jt.Corpus.from_texts(TRAIN, tokenizer=str.split)
    m3 = jt.LDA(2).fit(custom, num_sweeps=1, progress=False)
    m3.transform(["car engine"])                          # in memory the callable is kept
    m3.save(tmp_path / "m3.jtm")
    with pytest.raises(ParameterError, match="custom tokenizer"):
        jt.load(tmp_path / "m3.jtm").transform(["car engine"])
    plain = jt.LDA(2).fit(small_corpus, num_sweeps=1, progress=False)
    with pytest.raises(ParameterError, match="pass a Corpus"):
        plain.transform(["w00001 w00002"])


@pytest.mark.parametrize("bad", [2.5, True, 0, -1, "3"])
def test_transform_validates_num_sweeps_and_seed(fruit_cars, bad):
    """#8: num_sweeps is validated as fit does (2.5 gave rows summing to 1.33; True a TypeError)."""
    corpus, m = fruit_cars
    with pytest.raises(ParameterError, match="num_sweeps"):
        m.transform(corpus, num_sweeps=bad)
    with pytest.raises(ParameterError, match="seed"):
        m.transform(corpus, seed=1.5)


def test_fit_refuses_bool_sweep_counts(small_corpus):
    """#8 sibling: bools are not counts anywhere (num_sweeps, eval_every, checkpoint_every)."""
    for kw in ({"num_sweeps": True}, {"eval_every": True}, {"checkpoint_every": True}):
        with pytest.raises(ParameterError, match=next(iter(kw))):
            jt.LDA(2).fit(small_corpus, **{"num_sweeps": 1, **kw})


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


def test_summary_shares_are_token_shares():
    """#10: one long document and ten short ones: the summary prints n_k / N, not mean theta."""
    long_doc = ["alpha"] * 90
    short = [["beta"]] * 10
    corpus = jt.Corpus.from_token_lists([long_doc] + short)
    m = jt.LDA(2, alpha=0.1, beta=0.01).fit(corpus, num_sweeps=30, seed=0, progress=False)
    z = m.assignments
    shares = np.bincount(z, minlength=2) / z.size
    s = m.summary()
    assert "share of tokens" in s
    for k in range(2):
        assert f"#{k:<3d} {shares[k]:6.1%}" in s
    assert not np.allclose(shares, m.doc_topic.mean(0), atol=0.05)   # the old, mislabelled value


def test_model_file_vocabulary_is_compact_and_lossless(small_corpus, tmp_path):
    """#11: one 2000-character word no longer multiplies the file by V x 2000 x 4 bytes;
    #17: a word ending in "\\x00" (or a lone surrogate) survives save/load."""
    words = list(small_corpus.vocab)
    base = jt.LDA(3).fit(small_corpus, num_sweeps=1, progress=False)
    base.save(tmp_path / "base.jtm")
    words[5] = "x" * 2000
    words[6] = "nul\x00"
    words[7] = "sur\udcff"
    c = jt.Corpus.from_arrays(small_corpus.word_ids, small_corpus.doc_offsets, words)
    m = jt.LDA(3).fit(c, num_sweeps=1, progress=False)
    m.save(tmp_path / "m.jtm")
    grow = (tmp_path / "m.jtm").stat().st_size - (tmp_path / "base.jtm").stat().st_size
    assert grow < 3 * 2000, grow
    r = jt.load(tmp_path / "m.jtm")
    assert r.vocab == c.vocab and r.vocab[6] == "nul\x00"
    r.resume(c, num_sweeps=1, progress=False)


def test_resume_checks_the_vocabulary_word_by_word(small_corpus, tmp_path):
    """#17: resume compares the model's vocabulary with the corpus's, not just the fingerprint."""
    words = list(small_corpus.vocab)
    words[3] = "nul\x00"
    c = jt.Corpus.from_arrays(small_corpus.word_ids, small_corpus.doc_offsets, words)
    m = jt.LDA(3).fit(c, num_sweeps=1, progress=False)
    m.vocab = tuple(w.rstrip("\x00") for w in m.vocab)      # what the old file format did
    with pytest.raises(CorpusError, match="vocabulary differs.*word 3"):
        m.resume(c, num_sweeps=1)


@pytest.mark.parametrize("seed", [2**63, 2**64 + 5, -(2**70), 2**1000])
def test_any_integer_seed_works(small_corpus, tmp_path, seed):
    """#12: seeds >= 2**63 raised OverflowError in fit and transform; they are folded into the
    key, reproducibly, and survive save/load."""
    a = jt.LDA(3).fit(small_corpus, num_sweeps=3, seed=seed, progress=False)
    b = jt.LDA(3).fit(small_corpus, num_sweeps=3, seed=seed, progress=False)
    _same_state(a, b)
    a.transform(small_corpus.subset([0]), num_sweeps=2, seed=seed)
    a.save(tmp_path / "m.jtm")
    assert jt.load(tmp_path / "m.jtm").seed == seed


def test_distinct_large_seeds_give_distinct_chains(small_corpus):
    """#12 sibling: JAX keeps only a seed's low 32 bits, so 2**32 gave the chain of seed 0."""
    from jaxtopics.validate import seed_key
    import jax

    assert jax.random.key_data(jax.random.key(2**32)).tolist() == jax.random.key_data(
        jax.random.key(0)).tolist()                         # the JAX behaviour worked around
    a = jt.LDA(3).fit(small_corpus, num_sweeps=2, seed=0, progress=False)
    b = jt.LDA(3).fit(small_corpus, num_sweeps=2, seed=2**32, progress=False)
    assert not np.array_equal(a.assignments, b.assignments)
    for s in (0, 1, 2**32 - 1):                              # small seeds: the keys of before
        assert (jax.random.key_data(seed_key(s)).tolist()
                == jax.random.key_data(jax.random.key(s)).tolist())


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


@pytest.mark.parametrize("n", [-3, 0, True, 2.0])
def test_top_words_refuses_n_below_one(fruit_cars, n):
    """#15: top_words(-3) returned all but 3 words."""
    _, m = fruit_cars
    with pytest.raises(ParameterError, match="number of top words"):
        m.top_words(n)
    with pytest.raises(ParameterError, match="number of top words"):
        m.summary(n)
    with pytest.raises(ParameterError, match="topic"):
        m.top_words(3, topic=True)


def test_log_joint_after_loading_a_zero_sweep_fit(small_corpus, tmp_path):
    """#16: the state is in the file, so the log joint is computed from it (it was NaN)."""
    m = jt.LDA(3).fit(small_corpus, num_sweeps=0, seed=1, progress=False)
    assert [p.sweep for p in m.trace] == [0] and np.isfinite(m.log_joint_per_token())
    m.save(tmp_path / "m.jtm")
    r = jt.load(tmp_path / "m.jtm")
    assert r.log_joint_per_token() == pytest.approx(m.log_joint_per_token(), rel=1e-6)


# -- #4: jt.load trusts nothing in the file ---------------------------------------------------

def _rewrite(path, out, *, meta=None, drop=(), arrays=None, checksum=False):
    """Copy a model file with metadata edits (None deletes a key), arrays dropped or replaced.
    The copy has no checksum, as a file saved before checksums existed, so that load's own
    checks of every entry are what it meets (`checksum=True` keeps the stale one)."""
    import json

    with np.load(path) as z:
        stored = {k: z[k] for k in z.files}
    m = json.loads(str(stored["__meta__"][()]))
    if not checksum:
        m.pop("checksum", None)
        m["format_version"] = min(m["format_version"], 2)   # formats without checksums
    for k, v in (meta or {}).items():
        if v is None:
            m.pop(k, None)
        else:
            m[k] = v
    stored["__meta__"] = np.array(json.dumps(m))
    for k in drop:
        del stored[k]
    stored.update(arrays or {})
    with open(out, "wb") as f:
        np.savez(f, **stored)
    return out


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    from jaxtopics.datasets import synthetic_lda

    corpus = synthetic_lda(num_docs=12, num_words=20, num_topics=3, mean_doc_length=8, seed=2).corpus
    m = jt.LDA(3).fit(corpus, num_sweeps=4, seed=0, eval_every=2, progress=False)
    path = tmp_path_factory.mktemp("model") / "m.jtm"
    m.save(path)
    return path, m


def _params(m, **kw):
    return {**m.params._asdict(), **kw}


@pytest.mark.parametrize("edit, match", [
    (lambda m: {"meta": {"seed": None}}, "lacks 'seed'"),
    (lambda m: {"meta": {"seed": "x"}}, "'seed'"),
    (lambda m: {"meta": {"num_tokens": None}}, "lacks 'num_tokens'"),
    (lambda m: {"meta": {"num_docs": 0}}, "'num_docs'"),
    (lambda m: {"meta": {"sweeps_done": -1}}, "'sweeps_done'"),
    (lambda m: {"meta": {"shards": 0}}, "'shards'"),
    (lambda m: {"meta": {"shards": 13}}, "'shards'.*<= 12"),      # more shards than documents
    (lambda m: {"meta": {"corpus_fingerprint": 7}}, "'corpus_fingerprint'"),
    (lambda m: {"meta": {"params": _params(m, extra=1)}}, "unknown parameter 'extra'"),
    (lambda m: {"meta": {"params": {"alpha": 0.1}}}, "lacks 'num_topics'"),
    (lambda m: {"meta": {"params": _params(m, sampler="bogus")}}, "sampler"),
    (lambda m: {"meta": {"params": _params(m, alpha=-1)}}, "alpha"),
    (lambda m: {"meta": {"params": _params(m, num_topics=5)}}, "state.doc_topic.*expected int32\\[12, 5\\]"),
    (lambda m: {"meta": {"params": "x"}}, "'params' must be an object"),
    (lambda m: {"meta": {"text_options": {"tokenizer": 3}}}, "text_options"),
    (lambda m: {"drop": ["trace"]}, "lacks array 'trace'"),
    (lambda m: {"drop": ["vocab.utf8"]}, "'vocab.utf8'"),
    (lambda m: {"drop": ["vocab.utf8", "vocab.offsets"]}, "lacks the vocabulary"),
    (lambda m: {"drop": ["state.z"]}, "lacks array 'state.z'"),
    (lambda m: {"arrays": {"trace": np.zeros((2, 3))}}, "array 'trace'"),
    (lambda m: {"arrays": {"trace": np.array([[9.0, -1, 0, 0]])}}, "sweep numbers"),
    (lambda m: {"arrays": dict(zip(("vocab.utf8", "vocab.offsets"),
                                   jt.io.encode_strings(m.vocab[:-1])))}, "state.word_topic"),
    (lambda m: {"arrays": dict(zip(("vocab.utf8", "vocab.offsets"),
                                   jt.io.encode_strings(m.vocab[:-1] + m.vocab[:1])))}, "duplicate"),
    (lambda m: {"arrays": {"vocab.offsets": np.array([0, 5, 3])}}, "offsets"),
    (lambda m: {"arrays": {"state.z": np.zeros(3, np.int32)}}, "state.z"),
    (lambda m: {"arrays": {"state.topic": np.asarray(m.state.topic) + 1}}, "topic counts disagree"),
    (lambda m: {"arrays": {"state.z": np.asarray(m.state.z) + 7}}, "outside \\[0, 3\\)"),
    (lambda m: {"arrays": {"state.doc_topic": np.asarray(m.state.doc_topic, np.float32)}},
     "state.doc_topic"),
])
def test_load_checks_everything_in_the_file(saved_model, tmp_path, edit, match):
    """#4: KeyError, TypeError, IndexError, NaN theta or rows summing to 0.94 before: now a
    FormatError naming the file and the entry, before any model is returned."""
    path, m = saved_model
    bad = _rewrite(path, tmp_path / "bad.jtm", **edit(m))
    with pytest.raises(FormatError, match=match) as e:
        jt.load(bad)
    assert str(e.value).startswith(str(bad))


@pytest.mark.parametrize("make, field", [
    (lambda: jt.DMM(num_clusters=4), "word_cluster"),
    (lambda: jt.PTM(num_topics=3, num_pseudo_docs=4), "pseudo_topic"),
    (lambda: jt.HDP(), "word_topic"),
])
def test_resume_refuses_tables_that_disagree_with_the_saved_assignments(tmp_path, make, field):
    """Every model, not only LDA (check_state on load): resume recounts the tables from the
    saved latents (``rebuild``) and refuses a file whose tables disagree, instead of silently
    repairing or trusting them."""
    from jaxtopics.datasets import synthetic_lda

    corpus = synthetic_lda(num_docs=12, num_words=20, num_topics=3, mean_doc_length=8, seed=2).corpus
    m = make().fit(corpus, num_sweeps=3, seed=0, progress=False)
    m.save(tmp_path / "m.jtm")
    jt.load(tmp_path / "m.jtm").resume(corpus, 1, progress=False)           # intact: fine
    table = np.array(getattr(m.state, field))
    table[(0,) * table.ndim] += 1
    bad = _rewrite(tmp_path / "m.jtm", tmp_path / "bad.jtm", arrays={f"state.{field}": table})
    with pytest.raises(FormatError, match=f"inconsistent state: {field} (counts )?disagree"):
        jt.load(bad).resume(corpus, 1, progress=False)


@pytest.mark.parametrize("edit", [
    {"arrays": {"state.topic": np.array([1, 2, 3], np.int32)}},
    {"meta": {"sweeps_done": 10**12}},
    {"meta": {"num_tokens": 9999}},
    {"drop": ["trace"]},
])
def test_a_damaged_or_edited_file_fails_its_checksum(saved_model, tmp_path, edit):
    """Every model file carries a SHA-256 of its arrays and metadata: any change after saving
    (a damaged file, a hand edit) is one FormatError naming the file, whatever the model, before
    its values can break a read-out or a resumed chain (a review reproduced NaN chains, shape
    mismatches and IndexErrors from edited files of the other models)."""
    path, m = saved_model
    assert jt.load(path).sweeps_done == m.sweeps_done                  # intact: loads
    bad = _rewrite(path, tmp_path / "bad.jtm", checksum=True, **edit)
    with pytest.raises(FormatError, match="checksum mismatch") as e:
        jt.load(bad)
    assert str(e.value).startswith(str(bad))


def test_every_damaged_byte_of_the_archive_directory_is_a_format_error(saved_model, tmp_path):
    """Review: a flipped flag bit of a member's zip directory entry raised RuntimeError ("is
    encrypted"), a flipped compression method NotImplementedError, through `show` and
    `--resume` as tracebacks. Every byte of every directory entry, flipped, either still loads
    the same model or is one FormatError naming the file."""
    import zipfile
    path, m = saved_model
    data = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        start = min(i for i in range(len(data)) if data.startswith(b"PK\x01\x02", i))
        assert len(z.infolist()) >= 5
    outcomes = {"loads": 0, "refused": 0}
    for i in range(start, len(data)):
        bad = tmp_path / "bad.jtm"
        damaged = bytearray(data)
        damaged[i] ^= 0x01 if i % 2 else 0xFF
        bad.write_bytes(bytes(damaged))
        try:
            loaded = jt.load(bad)
        except FormatError as e:
            assert str(e).startswith(str(bad))
            outcomes["refused"] += 1
            continue
        np.testing.assert_array_equal(loaded.assignments, m.assignments)
        outcomes["loads"] += 1
    assert outcomes["refused"] > 0 and outcomes["loads"] > 0, outcomes


def test_a_current_file_without_its_checksum_is_refused(saved_model, tmp_path):
    """Only files of the formats before checksums (<= 2) may lack one: deleting it from a
    current file does not turn the checks off."""
    path, _ = saved_model
    bad = _rewrite(path, tmp_path / "nosum.jtm", meta={"format_version": 3, "seed": 12345})
    with pytest.raises(FormatError, match="lacks its 'checksum'"):
        jt.load(bad)
    assert jt.load(_rewrite(path, tmp_path / "v2.jtm")).seed == 0      # an older file loads


def test_an_older_file_whose_read_outs_fail_is_a_format_error(tmp_path, monkeypatch):
    """A file from before checksums with latents edited out of range: one FormatError at load
    (and from `jaxtopics show`), not an IndexError or ValueError from the read-outs. Every model
    has a check_state that refuses this edit first; the read-out check is the net for a model
    without one (DPMM's taken away here)."""
    from jaxtopics.datasets import synthetic_lda
    from jaxtopics.models import dpmm

    monkeypatch.delattr(dpmm, "check_state")

    corpus = synthetic_lda(num_docs=12, num_words=20, num_topics=3, mean_doc_length=8, seed=2).corpus
    path = tmp_path / "dpmm.jtm"
    jt.DPMM().fit(corpus, num_sweeps=2, progress=False).save(path)
    with np.load(path) as z:
        bad_z = z["state.z"].copy()
    bad_z[0] = 10**6
    bad = _rewrite(path, tmp_path / "bad.jtm", arrays={"state.z": bad_z})
    with pytest.raises(FormatError, match="inconsistent state: its read-outs fail"):
        jt.load(bad)
    assert jt.load(_rewrite(path, tmp_path / "fine.jtm")).summary().startswith("<DPMM")


def _tiny_fit(name, path):
    """A 2-sweep fit of model `name` on a 4-document corpus (sentences, labels), saved at
    `path`."""
    docs = [[["a", "b"], ["c", "a"]], [["d", "e", "a"]], [["b", "c"], ["e"]], [["a", "d"]]]
    corpus = jt.Corpus.from_token_lists(docs, sentences=True,
                                        labels=[["x"], ["x", "y"], ["y"], ["x"]] if name == "DPMRM" else None)
    model = {"LDA": jt.LDA(num_topics=2), "DMM": jt.DMM(num_clusters=3),
             "PTM": jt.PTM(num_topics=2, num_pseudo_docs=2),
             "SentenceLDA": jt.SentenceLDA(num_topics=2), "DPMM": jt.DPMM(capacity=4),
             "HDP": jt.HDP(), "HDP_CRF": jt.HDP(sampler="crf"), "DPMRM": jt.DPMRM()}[name]
    model.fit(corpus, num_sweeps=2, progress=False).save(path)
    return path


@pytest.mark.parametrize("name, field", [("DMM", "z"), ("DMM", "doc_items"), ("PTM", "z"),
                                         ("PTM", "pseudo"), ("SentenceLDA", "z"),
                                         ("SentenceLDA", "token_sentence"), ("DPMM", "z"),
                                         ("DPMM", "doc_items"), ("HDP", "z"), ("HDP_CRF", "t"),
                                         ("HDP_CRF", "z"), ("HDP_CRF", "table_topic"), ("DPMRM", "table"),
                                         ("DPMRM", "dish"), ("DPMRM", "topic_label")])
def test_an_older_file_with_latents_out_of_range_is_refused_at_load(tmp_path, name, field):
    """The models' check_state: a latent edited out of range in a file without checksum (PTM's
    pseudo = -1 even passed resume's recount, wrapping to the last pseudo-document). DPMM's
    z may be -1 (a document not seated yet), not -2."""
    low = -2 if (name, field) == ("DPMM", "z") else -1
    path = _tiny_fit(name, tmp_path / "m.jtm")
    assert jt.load(_rewrite(path, tmp_path / "fine.jtm")).sweeps_done == 2
    with np.load(path) as z:
        latent = z[f"state.{field}"].copy()
    for value in (low, 10**6):
        latent[0] = value
        bad = _rewrite(path, tmp_path / "bad.jtm", arrays={f"state.{field}": latent})
        # Sentence-LDA's token_sentence must also rise from 0 in steps of 0 or 1
        refused = f"inconsistent state: {field} (holds values outside|must rise)"
        with pytest.raises(FormatError, match=refused):
            jt.load(bad)


@pytest.mark.parametrize("name", ["LDA", "DMM", "PTM", "SentenceLDA", "DPMM", "HDP", "HDP_CRF",
                                  "DPMRM"])
def test_an_array_cut_short_along_any_axis_is_refused_at_load(tmp_path, name):
    """Review: HDP's z shortened by one was refused as "z's last (dummy) slot must be 0". Every
    model declares its ``state_shapes`` now: an array one shorter along any axis is a
    FormatError at load, and where the file fixes that length (the corpus sizes, K, or a
    capacity that other arrays share) the message names the array (or, for a shared capacity,
    the array it disagrees with) and the expected shape."""
    from jaxtopics.estimators import MODELS
    from jaxtopics.models.base import kernel_module

    path = _tiny_fit(name, tmp_path / "m.jtm")
    model = jt.load(path)
    module = kernel_module(MODELS[model.model].module, model.params)
    with np.load(path) as f:
        arrays = {k[len("state."):]: f[k] for k in f.files if k.startswith("state.")}
    specs = module.state_shapes(model.params, model.num_tokens, 4, len(model.vocab))._asdict()
    for field, a in arrays.items():
        for axis in range(a.ndim):
            cut = np.take(a, np.arange(a.shape[axis] - 1), axis=axis)
            bad = _rewrite(path, tmp_path / "bad.jtm", arrays={f"state.{field}": cut})
            fixed = specs[field].shape[axis] != -1
            with pytest.raises(FormatError) as e:
                jt.load(bad)
            if fixed:
                assert re.search(r"array 'state\.\w+' is (int|float)32\[.*\], expected",
                                 str(e.value))
                assert f"'state.{field}'" in str(e.value), (field, axis, str(e.value))


def _longer(a):
    return np.append(a, np.zeros(1, a.dtype))


def _vocab_edited(arrays, i, word):
    """The vocabulary arrays of a model file with word `i` replaced by `word`."""
    from jaxtopics.io import decode_strings, encode_strings
    vocab = list(decode_strings(arrays["vocab.utf8"], arrays["vocab.offsets"]))
    vocab[i] = word
    return dict(zip(("vocab.utf8", "vocab.offsets"), encode_strings(vocab)))


def _moved(a, axis, to=None):
    """`a` with one unit moved from its first non-zero cell to the next cell along `axis` (or
    to index `to` along it), every total over the other axes kept."""
    a = a.copy()
    i = np.unravel_index(np.flatnonzero(a)[0], a.shape)
    j = list(i)
    j[axis] = (j[axis] + 1) % a.shape[axis] if to is None else to
    a[i] -= 1
    a[tuple(j)] += 1
    return a


@pytest.mark.parametrize("name, edit, match", [
    ("SentenceLDA", lambda f: {"arrays": {"state.z": _longer(f["state.z"])}},
     "z holds 8 entries for the 6 sentences"),
    ("DPMRM", lambda f: {"arrays": {"state.label_tables": _longer(f["state.label_tables"])}},
     "state.label_tables' is int32\\[3\\], expected int32\\[2\\]"),
    ("DPMRM", lambda f: {"meta": {"label_names": ["x"]}}, "state.label_tables"),
    ("DPMRM", lambda f: {"meta": {"label_names": ["x", "x"]}}, "'label_names' repeats a label"),
    ("DPMRM", lambda f: {"meta": {"label_names": None}}, "needs metadata 'label_names'"),
    ("DPMRM", lambda f: {"meta": {"label_names": ["x", ""]}}, "'label_names' holds an empty label"),
    ("DPMRM", lambda f: {"meta": {"label_names": [" ", "x"]}}, "'label_names' holds an empty label"),
    ("LDA", lambda f: {"arrays": _vocab_edited(f, 1, "")}, "vocabulary word 1 \\(''\\) is empty"),
    ("LDA", lambda f: {"arrays": _vocab_edited(f, 0, "a\nb")}, "word 0 .* holds a line break"),
    ("DPMM", lambda f: {"arrays": {"state.z": np.concatenate([[-1], f["state.z"][1:]]).astype(np.int32)}},
     "seats some documents and leaves others unseated"),
    ("DMM", lambda f: {"arrays": {"state.doc_items": f["state.doc_items"][:, :1],
                                  "state.doc_counts": f["state.doc_counts"][:, :1]}},
     "counts disagree with the documents. words and clusters z"),
    ("DMM", lambda f: {"arrays": {"state.word_cluster": _moved(f["state.word_cluster"], 0)}},
     "word_cluster counts disagree with the documents' words"),
    ("DPMM", lambda f: {"arrays": {"state.cluster_docs": _moved(f["state.cluster_docs"], 0)}},
     "cluster_docs counts disagree"),
    ("DMM", lambda f: {"arrays": {"state.doc_counts": _moved(f["state.doc_counts"], 0, -1)}},
     "doc_counts has words in its padding row"),
    ("DMM", lambda f: {"meta": {"num_tokens": 1000}},
     "metadata 'num_tokens' is 1000, but the state's documents hold \\d+ tokens"),
    ("DPMM", lambda f: {"meta": {"num_tokens": 1000}}, "metadata 'num_tokens' is 1000"),
    ("LDA", lambda f: {"arrays": {"state.bogus": np.zeros(3, np.int32)}},
     "array 'state.bogus', which a lda state does not have"),
])
def test_edits_the_shape_checks_let_through_are_refused_at_load(tmp_path, name, edit, match):
    """Review: each of these edits of a file without checksum loaded into a wrong model (a
    sentence topic too many, a label table for 4 labels with 3 label names, a DPMM document
    unseated among seated ones, DMM documents that lost words, a DMM or DPMM file's token count,
    an unknown array, an empty label name or vocabulary word)."""
    path = _tiny_fit(name, tmp_path / "m.jtm")
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    bad = _rewrite(path, tmp_path / "bad.jtm", **edit(arrays))
    with pytest.raises(FormatError, match=match):
        jt.load(bad)


def test_an_older_hdp_file_with_bad_concentrations_is_refused_at_load(tmp_path):
    """Review: HDP's sampled alpha and gamma edited to -1, NaN or 0 in a file without checksum
    loaded, and resume ran on (log joint NaN). check_state refuses them."""
    corpus = jt.Corpus.from_token_lists([["a", "b", "c"], ["c", "d"], ["a", "d", "e"]])
    path = tmp_path / "m.jtm"
    jt.HDP(resample_concentrations=True).fit(corpus, num_sweeps=2, progress=False).save(path)
    assert jt.load(_rewrite(path, tmp_path / "fine.jtm")).sweeps_done == 2
    for name, value in (("alpha", -1.0), ("alpha", np.nan), ("gamma", 0.0)):
        bad = _rewrite(path, tmp_path / "bad.jtm", arrays={f"state.{name}": np.float32(value)})
        with pytest.raises(FormatError, match=f"inconsistent state: {name} must be a finite number > 0"):
            jt.load(bad)


def test_a_model_before_its_first_sweep_has_read_outs(tmp_path):
    """fit(num_sweeps=0) reads out the initial state; DPMM's incremental start, whose documents
    are seated only in the first sweep, refuses it (its read-outs had no clusters)."""
    corpus = jt.Corpus.from_token_lists([["a", "b"], ["c"], ["a", "c", "d"]])
    with pytest.raises(ParameterError, match="incremental start"):
        jt.DPMM().fit(corpus, num_sweeps=0, progress=False)
    m = jt.DPMM(init="one").fit(corpus, num_sweeps=0, progress=False)
    assert m.summary().startswith("<DPMM") and (np.asarray(m.labels) == 0).all()
    m.save(tmp_path / "m.jtm")
    assert jt.load(tmp_path / "m.jtm").summary() == m.summary()


def test_every_model_file_carries_a_checksum(tmp_path):
    from jaxtopics.datasets import synthetic_lda
    from jaxtopics.io import load_model_file, model_checksum

    corpus = synthetic_lda(num_docs=12, num_words=20, num_topics=3, mean_doc_length=8, seed=2).corpus
    for make in (lambda: jt.DMM(num_clusters=4), lambda: jt.HDP(), lambda: jt.DPMM()):
        make().fit(corpus, num_sweeps=2, progress=False).save(tmp_path / "m.jtm")
        arrays, meta = load_model_file(tmp_path / "m.jtm")
        assert meta["checksum"] == model_checksum(arrays, meta)
        arrays["state.z"] = arrays["state.z"] + 1
        assert model_checksum(arrays, meta) != meta["checksum"]


def test_load_reads_format_1_files(saved_model, tmp_path):
    """The previous model format (unicode vocab array, no num_docs) still loads, checked too."""
    path, m = saved_model
    old = _rewrite(path, tmp_path / "v1.jtm", meta={"format_version": 1, "num_docs": None,
                                                    "text_options": None},
                   drop=["vocab.utf8", "vocab.offsets"], arrays={"vocab": np.asarray(m.vocab)})
    r = jt.load(old)
    assert r.vocab == m.vocab
    np.testing.assert_array_equal(r.doc_topic, m.doc_topic)
    bad = _rewrite(old, tmp_path / "v1bad.jtm", meta={"params": _params(m, num_topics=4)})
    with pytest.raises(FormatError, match="state.doc_topic.*\\[\\*, 4\\]"):
        jt.load(bad)


def test_checkpoint_location_is_checked_before_sweeping(small_corpus, tmp_path):
    """#3 sibling in the API: fit(checkpoint_path=) into a missing directory failed only at the
    first checkpoint, after the sweeps before it, naming a temporary file."""
    with pytest.raises(FileNotFoundError) as e:
        jt.LDA(2).fit(small_corpus, num_sweeps=50, checkpoint_path=tmp_path / "no" / "m.jtm",
                      checkpoint_every=25, progress=False)
    assert e.value.filename == str(tmp_path / "no" / "m.jtm")
    with pytest.raises(IsADirectoryError):
        jt.LDA(2).fit(small_corpus, num_sweeps=1, checkpoint_path=tmp_path, checkpoint_every=1,
                      progress=False)
    assert not list(tmp_path.iterdir())                   # no probe file left behind


def test_devices_of_the_wrong_type_and_sweep_numbers_past_int32_are_refused(saved_model, tmp_path):
    """Review: devices=[...] was a TypeError from a comparison; sweeps_done = 10**12 in a
    (checksum-less) file loaded and then overflowed int32 inside JAX on resume."""
    import jax

    from jaxtopics.datasets import synthetic_lda
    path, m = saved_model
    corpus = synthetic_lda(num_docs=12, num_words=20, num_topics=3, mean_doc_length=8, seed=2).corpus
    with pytest.raises(ParameterError, match="devices must be a positive integer, 'auto' or None"):
        jt.LDA(3).fit(corpus, num_sweeps=1, devices=jax.devices()[:2], progress=False)
    with pytest.raises(FormatError, match="sweeps_done"):
        jt.load(_rewrite(path, tmp_path / "huge.jtm", meta={"sweeps_done": 10**12}))
    late = jt.load(_rewrite(path, tmp_path / "late.jtm", meta={"sweeps_done": 2**31 - 2}))
    with pytest.raises(ParameterError, match="passes the last sweep number"):
        late.resume(corpus, 5, progress=False)


def test_progress_must_be_a_bool_and_a_numpy_device_count_is_stored_as_an_int():
    """Review: progress="x" was accepted (a bar or not, by its truth); devices=np.int64(2)
    came back as model.shards of type np.int64."""
    from jaxtopics.datasets import synthetic_lda
    corpus = synthetic_lda(num_docs=12, num_words=20, num_topics=3, mean_doc_length=8, seed=2).corpus
    for bad in ("x", 1, "False"):
        with pytest.raises(ParameterError, match="progress must be True, False or None"):
            jt.LDA(3).fit(corpus, num_sweeps=1, progress=bad)
    m = jt.LDA(3).fit(corpus, num_sweeps=1, devices=np.int64(2), progress=np.False_)
    assert type(m.shards) is int and m.shards == 2
    with pytest.raises(ParameterError, match="progress must be"):
        m.resume(corpus, 1, progress="no")


def _labelled(corpus: jt.Corpus) -> jt.Corpus:
    """`corpus` with two labels, each document tagged by its parity (and every 3rd by both)."""
    sets = [["even" if d % 2 == 0 else "odd"] + (["even", "odd"] if d % 3 == 0 else [])
            for d in range(corpus.num_docs)]
    docs = [list(corpus.words(d)) for d in range(corpus.num_docs)]
    return jt.Corpus.from_token_lists(docs, labels=[sorted(set(s)) for s in sets],
                                      label_names=["even", "odd"])


def _sentences(corpus: jt.Corpus) -> jt.Corpus:
    docs = [list(corpus.words(d)) for d in range(corpus.num_docs)]
    return jt.Corpus.from_token_lists([[d[i:i + 6] for i in range(0, len(d), 6)] for d in docs],
                                      sentences=True)


X64_MODELS = {
    "lda": (lambda: jt.LDA(4), {}),
    "lda-uncollapsed": (lambda: jt.LDA(4, sampler="uncollapsed"), {}),
    "lda-2-devices": (lambda: jt.LDA(4), {"devices": 2}),
    "hdp": (lambda: jt.HDP(), {}),
    "dmm": (lambda: jt.DMM(num_clusters=6), {}),
    "dpmm": (lambda: jt.DPMM(capacity=4), {}),
    "ptm": (lambda: jt.PTM(num_topics=4, num_pseudo_docs=6), {}),
    "slda": (lambda: jt.SentenceLDA(num_topics=4), {"corpus": _sentences}),
    "dpmrm": (lambda: jt.DPMRM(topic_capacity=4), {"corpus": _labelled}),
}


@pytest.mark.parametrize("name", list(X64_MODELS))
def test_64_bit_mode_gives_the_same_chain(name, small_corpus, tmp_path):
    """A user with ``jax_enable_x64`` on (for other work) fits, resumes, saves, loads and reads
    out every model as with it off, bitwise: the facade runs in 32 bits (it once failed in
    the sweeps' loop carries, int32 against int64)."""
    import jax

    make, options = X64_MODELS[name]
    corpus = options.get("corpus", lambda c: c)(small_corpus)
    fit = {k: v for k, v in options.items() if k != "corpus"}
    if fit.get("devices", 1) > len(jax.devices()):
        pytest.skip("needs 2 devices")
    plain = make().fit(corpus, num_sweeps=3, seed=4, eval_every=1, progress=False, **fit)
    plain.resume(corpus, num_sweeps=2, eval_every=1, progress=False)
    with jax.enable_x64(True):
        wide = make().fit(corpus, num_sweeps=3, seed=4, eval_every=1, progress=False, **fit)
        wide.save(tmp_path / "m.jtm")
        wide = jt.load(tmp_path / "m.jtm")
        wide.resume(corpus, num_sweeps=2, eval_every=1, progress=False)
        read = (wide.topic_word, wide.doc_topic, wide.assignments, wide.log_joint_per_token())
        if hasattr(wide, "to_lda"):
            wide.to_lda()
    _same_state(plain, wide)
    assert [p[:3] for p in plain.trace] == [p[:3] for p in wide.trace]
    np.testing.assert_array_equal(read[0], plain.topic_word)
    np.testing.assert_array_equal(read[1], plain.doc_topic)
    np.testing.assert_array_equal(read[2], plain.assignments)
    assert read[3] == plain.log_joint_per_token()
    assert [np.asarray(x).dtype for x in wide.state] == [np.asarray(x).dtype for x in plain.state]


def test_64_bit_mode_transform_and_perplexity(small_corpus):
    import jax

    lda = jt.LDA(4).fit(small_corpus, num_sweeps=3, seed=4, progress=False)
    labelled = _labelled(small_corpus)
    dpmrm = jt.DPMRM(topic_capacity=4).fit(labelled, num_sweeps=3, seed=4, progress=False)
    docs, held_out = small_corpus.subset(np.arange(5)), labelled.subset(np.arange(5))
    theta, ppl = lda.transform(docs, num_sweeps=3), dpmrm.perplexity(held_out, num_sweeps=3)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(lda.transform(docs, num_sweeps=3), theta)
        assert dpmrm.perplexity(held_out, num_sweeps=3) == ppl


@pytest.mark.parametrize("name", list(X64_MODELS))
def test_transform_in_a_loop_compiles_once(name, small_corpus):
    """Review: every LDA transform traced and compiled its fold-in sweeps anew (an eager
    ``lax.scan`` over a fresh closure: 0.35 s and ~4.5 MB that were never freed, per call), and
    PTM's too. A second and third transform of documents of the same shape trace nothing."""
    import jax

    make, fit = X64_MODELS[name]
    corpus = fit.get("corpus", lambda c: c)(small_corpus)
    model = make().fit(corpus, num_sweeps=2, seed=1, progress=False,
                       **{k: v for k, v in fit.items() if k != "corpus"})
    new = corpus.subset(np.arange(3))
    first = model.transform(new, num_sweeps=4)
    traced = []

    def listen(event, _seconds, **_):
        if event == "/jax/core/compile/jaxpr_trace_duration":
            traced.append(event)
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        again = [model.transform(new, num_sweeps=4) for _ in range(2)]
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert traced == []
    for theta in again:
        np.testing.assert_array_equal(theta, first)


def test_hdp_fits_a_corpus_of_one_token():
    """A split-merge move needs two tokens; with one it crashed (ZeroDivisionError)."""
    m = jt.HDP().fit(jt.Corpus.from_texts(["apple"]), num_sweeps=2, progress=False)
    assert m.num_active_topics == 1 and m.topic_sizes.tolist() == [1]
