"""Fitted models pickle and deep-copy right after fit and resume (sharded or not; Sentence-LDA
with either kernel), and the copy goes on with the same chain."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import jaxtopics as jt
from small_texts import TEXTS


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
