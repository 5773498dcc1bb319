"""A fit's trace (``model.trace``): sweeps and seconds go on counting over a resume; a zero-sweep
fit records its initial state, read the same after load; HDP's ``to_lda`` starts its trace
with the log joint."""

from __future__ import annotations

import numpy as np
import pytest

import jaxtopics as jt
from small_texts import TEXTS


def test_trace_seconds_keep_counting_over_a_resume():
    c = jt.Corpus.from_token_lists([["a", "b", "c"], ["b", "c", "d"]])
    m = jt.LDA(2).fit(c, num_sweeps=4, eval_every=2)
    m.resume(c, num_sweeps=4, eval_every=2)
    clock = [p.seconds for p in m.trace]          # the trace column, not a timing of the test
    assert [p.sweep for p in m.trace] == [2, 4, 6, 8]
    assert all(b >= a for a, b in zip(clock, clock[1:]))


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


def test_hdp_to_lda_starts_its_trace_with_the_log_joint():
    h = jt.HDP(initial_topics=3).fit(jt.Corpus.from_texts(TEXTS * 4), num_sweeps=2)
    a = h.to_lda()
    assert [p.sweep for p in a.trace] == [0]
    assert a.trace[0].log_joint_per_token == pytest.approx(a.log_joint_per_token())
    assert "log joint per token:" in a.summary()
