"""Regressions from driving every model as a new user would (README in hand): each test failed
before its fix."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import LabelWarning, ParameterError
from jaxtopics.models import dpmrm

TEXTS = ["apple banana cherry apple", "car truck road car", "lake river water lake"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_hdp_to_lda_of_a_loaded_model_equals_the_in_memory_one(tmp_path):
    corpus = jt.Corpus.from_texts(TEXTS * 10)
    h = jt.HDP().fit(corpus, num_sweeps=10, seed=0)
    h.save(tmp_path / "h.jtm")
    mem, loaded = h.to_lda(), jt.load(tmp_path / "h.jtm").to_lda()
    for name in ("doc_topic", "topic_word", "assignments"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(mem, name))
    assert loaded.log_joint_per_token() == mem.log_joint_per_token() < 0
    assert [w for w, _ in loaded.top_words(1)[0]] != [w for w, _ in loaded.top_words(1)[1]]
    loaded.save(tmp_path / "l.jtm")                  # a file load accepts
    again = jt.load(tmp_path / "l.jtm")
    np.testing.assert_array_equal(again.doc_topic, mem.doc_topic)
    a = again.resume(corpus, num_sweeps=3)
    b = mem.resume(corpus, num_sweeps=3)
    np.testing.assert_array_equal(a.assignments, b.assignments)


def test_dpmrm_document_whose_labels_own_no_topic_gets_a_distribution():
    texts = TEXTS * 4 + [""]
    labels = [["a"]] * 12 + [["lonely"]]
    with pytest.warns(LabelWarning, match="'lonely' is only on documents with no tokens"):
        r = jt.DPMRM().fit(jt.Corpus.from_texts(texts, labels=labels), num_sweeps=5, seed=0)
    np.testing.assert_allclose(r.doc_topic.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(r.doc_topic[-1], 1.0 / r.num_topics, rtol=1e-6)
    assert r.doc_new_topic.shape == (13,) and r.doc_new_topic[-1] == pytest.approx(1.0)
    assert np.all((r.doc_new_topic[:-1] > 0) & (r.doc_new_topic[:-1] < 1))
    new = jt.Corpus.from_token_lists([["apple", "car"], ["apple"]], labels=[["lonely"], ["a"]])
    with pytest.warns(LabelWarning, match="document 0 .1 in all. has no label that owns"):
        theta = r.transform(new)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(theta[0], 1.0 / r.num_topics, rtol=1e-6)


def test_dpmrm_doc_new_topic_is_the_left_out_share_of_the_corrected_theta():
    corpus = jt.Corpus.from_texts(TEXTS * 4, labels=[["a"], ["b"], ["a", "b"]] * 4)
    r = jt.DPMRM(alpha=2.0, gamma=0.5).fit(corpus, num_sweeps=5, seed=1)
    st, p = r.state, r.params
    pi, ndc = dpmrm._label_weights(st, p)
    mt = np.asarray(st.topic_tables, np.float64)
    ml = np.asarray(st.label_tables, np.float64)
    share = np.where(mt > 0, mt / (ml[np.asarray(st.topic_label)] + p.gamma), 0.0)
    active = (ndc + p.alpha * pi * share).sum(1)
    n = ndc.sum(1)
    np.testing.assert_allclose(r.doc_new_topic, 1.0 - active / (n + p.alpha), rtol=1e-5)


def test_dpmrm_topic_slots_beyond_int32_are_a_parameter_error(tmp_path):
    corpus = jt.Corpus.from_texts(TEXTS, labels=[["a"], ["b"], ["c"]])
    with pytest.raises(ParameterError, match="initial_topics must be an integer <= 1048576"):
        jt.DPMRM(initial_topics=1_000_000_000)
    many = jt.Corpus.from_texts(TEXTS * 400, labels=[[f"l{i}"] for i in range(1200)])
    with pytest.raises(ParameterError, match=r"needs 2516582400 topic slots \(1200 labels x "
                                             r"initial_topics=1048576, doubled"):
        jt.DPMRM(initial_topics=2**20).fit(many, num_sweeps=1)
    assert jt.DPMRM(initial_topics=2).fit(corpus, num_sweeps=1).num_topics >= 1
    (tmp_path / "t.txt").write_text("".join(f"a--b\t{t}\n" for t in TEXTS))
    out = _cli("fit", "--model", "dpmrm", "--initial-topics", "1000000000", "--sweeps", "1",
               "-i", str(tmp_path / "t.txt"), "-o", str(tmp_path / "o"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--initial-topics must be an integer <= 1048576" in out.stderr


@pytest.mark.parametrize("devices", [None, 2])
def test_pickle_and_deepcopy_right_after_fit_and_resume(devices):
    corpus = jt.Corpus.from_texts(TEXTS * 6)
    m = jt.LDA(num_topics=2).fit(corpus, num_sweeps=3, seed=0, devices=devices)
    for copied in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        np.testing.assert_array_equal(copied.assignments, m.assignments)
    m.resume(corpus, num_sweeps=2)
    p, q = pickle.loads(pickle.dumps(m)), copy.deepcopy(m)
    for copied in (p, q):
        np.testing.assert_array_equal(copied.doc_topic, m.doc_topic)
    p.resume(corpus, num_sweeps=2)
    m.resume(corpus, num_sweeps=2)
    np.testing.assert_array_equal(p.assignments, m.assignments)      # the same chain


def test_models_without_labels_ignore_unseen_labels_in_transform():
    train = jt.Corpus.from_texts(TEXTS[:2] * 5, labels=[["fruit"], ["cars"]] * 5)
    m = jt.LDA(num_topics=2).fit(train, num_sweeps=3)
    theta = m.transform(jt.Corpus.from_texts(["apple car"], labels=[["politics"]]))
    assert theta.shape == (1, 2)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-6)
    assert m.transform(jt.Corpus.from_texts(["apple car", "car"], labels=[3, 7])).shape == (2, 2)


@pytest.mark.parametrize("name", ["lda", "slda", "dmm", "ptm", "hdp", "dpmm"])
def test_zero_sweeps_read_the_initial_state_the_same_after_load(name, tmp_path):
    texts = [t + ". " + t for t in TEXTS] * 5
    corpus = jt.Corpus.from_texts(texts, sentences=name == "slda")
    est = {"lda": jt.LDA(num_topics=2), "slda": jt.SentenceLDA(num_topics=2),
           "dmm": jt.DMM(num_clusters=3), "ptm": jt.PTM(num_topics=2, num_pseudo_docs=3),
           "hdp": jt.HDP(), "dpmm": jt.DPMM(init="random", init_clusters=2)}[name]
    m = est.fit(corpus, num_sweeps=0)
    assert [p.sweep for p in m.trace] == [0]
    lj = m.log_joint_per_token()
    assert np.isfinite(lj) and lj < 0
    m.save(tmp_path / "m.jtm")
    assert jt.load(tmp_path / "m.jtm").log_joint_per_token() == lj
    m.resume(corpus, num_sweeps=0)
    assert len(m.trace) == 1                      # resume(0) of an evaluated state adds nothing
    m.resume(corpus, num_sweeps=2)
    assert [p.sweep for p in m.trace] == [0, 2]
    np.testing.assert_allclose(m.doc_topic.sum(1), 1.0, rtol=1e-5)


def test_dpmm_incremental_start_needs_a_sweep():
    corpus = jt.Corpus.from_texts(TEXTS * 5)
    with pytest.raises(ParameterError, match="incremental start .* at least 1 sweep"):
        jt.DPMM().fit(corpus, num_sweeps=0)
    m = jt.DPMM().fit(corpus, num_sweeps=1)
    assert m.num_topics >= 1
    np.testing.assert_allclose(m.doc_topic.sum(1), 1.0, rtol=1e-5)


def test_checkpoint_path_alone_is_refused_as_the_docstring_says(tmp_path):
    corpus = jt.Corpus.from_texts(TEXTS * 3)
    with pytest.raises(ParameterError, match="checkpoint_path needs checkpoint_every"):
        jt.LDA(num_topics=2).fit(corpus, num_sweeps=2, checkpoint_path=tmp_path / "x.jtm")
    assert "(default: every eval)" not in jt.LDA.fit.__doc__
    assert "the two go together" in jt.LDA.fit.__doc__


def test_demo_refuses_a_labelled_model_before_loading_the_corpus():
    out = _cli("demo", "--model", "dpmrm")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "jaxtopics: error: the demo corpus (docstrings) has no label sets, which --model dpmrm "
        "needs: use `jaxtopics fit --model dpmrm` on a text file of 'label1--label2<TAB>text' lines"]
    assert out.stdout == ""


def test_numpy_numbers_become_python_numbers():
    corpus = jt.Corpus.from_texts([t + ". " + t for t in TEXTS] * 5, sentences=True)
    for est in (jt.SentenceLDA(num_topics=np.int32(2)), jt.DMM(num_clusters=np.int32(3)),
                jt.DPMM(capacity=np.int64(8), alpha=np.float64(1.0))):
        assert "np." not in repr(est)
        assert all(not isinstance(v, np.generic) for v in est.params)
        m = est.fit(corpus, num_sweeps=np.int64(2))
        assert type(m.trace[-1].sweep) is int and type(m.sweeps_done) is int
        assert "np." not in repr(m) and "np." not in m.summary()


def test_save_to_an_empty_path_says_so(tmp_path):
    m = jt.LDA(num_topics=2).fit(jt.Corpus.from_texts(TEXTS * 3), num_sweeps=1)
    for bad in ("", "  "):
        with pytest.raises(ParameterError, match="model file path is empty"):
            m.save(bad)
        with pytest.raises(ParameterError, match="model file path is empty"):
            jt.LDA(num_topics=2).fit(jt.Corpus.from_texts(TEXTS * 3), num_sweeps=2,
                                     checkpoint_path=bad, checkpoint_every=1)


def test_cli_counts_one_device_in_the_singular(tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(TEXTS * 4) + "\n")
    out = _cli("fit", "-i", str(tmp_path / "t.txt"), "--model", "lda", "--num-topics", "2", "--sweeps", "2",
               "--devices", "1", "-o", str(tmp_path / "o"))
    assert out.returncode == 0, out.stderr
    assert "1 cpu devices" not in out.stdout + out.stderr


def test_hdp_summary_shows_the_sampled_concentrations():
    h = jt.HDP(resample_concentrations=True).fit(jt.Corpus.from_texts(TEXTS * 10), num_sweeps=10,
                                                 seed=0)
    line = h.summary().splitlines()[1]
    assert f"alpha={h.sampled_alpha:.4g} (sampled; started at 1.0)" in line
    assert f"gamma={h.sampled_gamma:.4g} (sampled; started at 1.0)" in line
    plain = jt.HDP().fit(jt.Corpus.from_texts(TEXTS * 10), num_sweeps=2, seed=0)
    assert "alpha=1.0, gamma=1.0," in plain.summary()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "sampled" not in plain.summary()


# -- from the outside review of the fixes above ----------------------------------------------


def test_dpmrm_refuses_more_initial_topics_than_tokens_can_fill():
    many = jt.Corpus.from_texts(["apple banana"] * 300,
                                labels=[[f"l{i}", f"m{i % 7}"] for i in range(300)])
    with pytest.raises(ParameterError, match=r"initial_topics=1000 gives 307000 initial topics "
                                             r"\(307 labels x 1000\) for a corpus of 600 tokens"):
        jt.DPMRM(initial_topics=1000).fit(many, num_sweeps=1)
    for value in (2**30, 10**9):          # one message for the limit
        with pytest.raises(ParameterError, match="initial_topics must be an integer <= 1048576"):
            jt.DPMRM(initial_topics=value)


@pytest.mark.parametrize("sampler", ["parallel", "sequential"])
def test_sentence_lda_pickles_after_fit_and_resume(sampler, tmp_path):
    texts = ["apple banana apple cherry", "banana cherry date date", "egg fig grape egg"] * 2
    corpus = jt.Corpus.from_texts([t + ". " + t for t in texts], sentences=True)
    m = jt.SentenceLDA(num_topics=2, sampler=sampler).fit(corpus, num_sweeps=2)
    copied = pickle.loads(pickle.dumps(m))
    copy.deepcopy(m)
    m.resume(corpus, num_sweeps=2)
    copied.resume(corpus, num_sweeps=2)
    np.testing.assert_array_equal(copied.sentence_topics, m.sentence_topics)
    m.save(tmp_path / "s.jtm")
    copy.deepcopy(jt.load(tmp_path / "s.jtm").resume(corpus, num_sweeps=2))


def test_v_measure_with_beta_zero_is_homogeneity():
    from jaxtopics import metrics
    assert metrics.v_measure([0, 0], [0, 1], beta=0.0) == 1.0
    assert metrics.v_measure([0, 1, 1], [0, 0, 1], beta=0.0) == pytest.approx(
        metrics.homogeneity([0, 1, 1], [0, 0, 1]))


def test_label_names_are_nfc_normalised_like_words():
    import unicodedata
    nfd, nfc = unicodedata.normalize("NFD", "école"), unicodedata.normalize("NFC", "école")
    c = jt.Corpus.from_texts(["apple pie", "dog cat"], labels=[[nfd], [nfc]])
    assert c.label_names == (nfc,)
    with pytest.raises(jt.CorpusError, match="label_names entries 0 .* and 1 .* same name"):
        jt.Corpus.from_token_lists([["a"], ["b"]], labels=[[nfd], [nfc]], label_names=[nfd, nfc])


def test_hdp_to_lda_starts_its_trace_with_the_log_joint():
    h = jt.HDP(initial_topics=3).fit(jt.Corpus.from_texts(TEXTS * 4), num_sweeps=2)
    a = h.to_lda()
    assert [p.sweep for p in a.trace] == [0]
    assert a.trace[0].log_joint_per_token == pytest.approx(a.log_joint_per_token())
    assert "log joint per token:" in a.summary()


def test_jsonl_label_set_points_at_the_label_set_formats(tmp_path):
    (tmp_path / "m.jsonl").write_text('{"text": "apple banana", "labels": ["a", 1]}\n')
    with pytest.raises(jt.FormatError, match="labelled=True"):
        jt.Corpus.from_jsonl(tmp_path / "m.jsonl", label_key="labels")


def test_float32_parameters_show_their_shortest_decimal():
    est = jt.LDA(num_topics=2, alpha=np.float32(0.1))
    assert "alpha=0.1," in repr(est)
    assert jt.DMM(num_clusters=2, alpha=np.float32(0.1)).params.alpha == 0.1
