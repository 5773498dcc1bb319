"""What a fitted model reads out: its summary (empty clusters left out; HDP's sampled
concentrations), ``top_word_ids``, HDP's ``to_lda`` (the same after load), DP-MRM's
``doc_topic`` and ``doc_new_topic``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import LabelWarning, ParameterError
from jaxtopics.models import dpmrm
from small_texts import TEXTS


def test_summary_leaves_out_empty_clusters():
    c = jt.Corpus.from_token_lists([["a", "b"], ["c", "d"], ["a", "b", "b"]] * 3)
    text = jt.DMM(num_clusters=10).fit(c, num_sweeps=3).summary()
    assert "empty topics / clusters not shown" in text and text.count("\n  #") <= 3


def test_top_word_ids_takes_ids_or_a_mask_and_nothing_else(small_corpus):
    """Review: a boolean mask was read as the ids 0 and 1, floats were truncated, and a scalar
    raised a bare TypeError."""
    m = jt.LDA(num_topics=3).fit(small_corpus, num_sweeps=1, progress=False)
    every = m.top_word_ids(2)
    np.testing.assert_array_equal(m.top_word_ids(2, topics=np.array([True, False, True])),
                                  every[[0, 2]])
    np.testing.assert_array_equal(m.top_word_ids(2, topics=range(2)), every[:2])
    assert m.top_word_ids(2, topics=[]).shape == (0, 2)
    for bad, message in (([0.0], "integer topic ids"), (1, "1-D sequence"), ([[0]], "1-D"),
                         ([True], "one entry per topic")):
        with pytest.raises(ParameterError, match=message):
            m.top_word_ids(2, topics=bad)


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
