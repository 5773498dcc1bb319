"""Choosing K (jaxtopics.selection): the report's rows, its best K on a planted corpus, the
held-out split, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.datasets import synthetic_lda
from jaxtopics.errors import CorpusError, ParameterError
from jaxtopics.selection import split_documents


@pytest.mark.slow
def test_compare_num_topics_reports_every_k_and_picks_the_planted_one():
    syn = synthetic_lda(num_docs=300, num_words=200, num_topics=8, mean_doc_length=40, seed=1)
    # init="incremental": from a uniform start a K=8 chain can sit in an optimum with merged
    # topics for hundreds of sweeps (held-out perplexity 9.5-10 against 8.6; issue 34), and K=32
    # then scores better; the incremental start avoids it (passed through **options)
    report = jt.compare_num_topics(jt.LDA, syn.corpus, [2, 8, 32], seeds=(0, 1), num_sweeps=60,
                                   init="incremental")
    assert [r.num_topics for r in report.rows] == [2, 8, 32] and report.best == 8
    assert report.method == "left_to_right" and report.num_held_out_docs == 30
    for r in report.rows:
        assert len(r.per_seed_perplexity) == 2 and r.perplexity == pytest.approx(np.mean(r.per_seed_perplexity))
        assert r.perplexity_std == pytest.approx(np.std(r.per_seed_perplexity, ddof=1))
        assert np.isfinite(r.coherence)
    text = str(report)
    assert "<- best" in text and text.count("\n") == 4
    # HDP on the same training documents infers a K near the planted one (README)
    hdp = jt.HDP().fit(split_documents(syn.corpus)[0], num_sweeps=100, seed=0)
    assert 6 <= hdp.num_active_topics <= 10


def test_dmm_uses_num_clusters_and_a_given_held_out_corpus():
    syn = synthetic_lda(num_docs=40, num_words=30, num_topics=3, mean_doc_length=8, seed=0)
    train, held = split_documents(syn.corpus, 0.25, seed=3)
    assert train.num_docs == 30 and held.num_docs == 10
    report = jt.compare_num_topics(jt.DMM, train, [2, 4], held_out=held, seeds=(0,), num_sweeps=5,
                                   coherence=None)
    assert report.method == "exact" and report.rows[0].perplexity_std == 0.0
    assert np.isnan(report.rows[0].coherence) and "coherence" not in str(report)


def test_bad_input():
    corpus = jt.Corpus.from_token_lists([["a", "b"], ["b", "c"], ["c", "a"]])
    with pytest.raises(ParameterError, match="num_topics must list"):
        jt.compare_num_topics(jt.LDA, corpus, [])
    with pytest.raises(ParameterError, match="held_out must be a Corpus or a fraction"):
        jt.compare_num_topics(jt.LDA, corpus, [2], held_out=1.5)
    with pytest.raises(CorpusError, match="at least 2"):
        split_documents(jt.Corpus.from_token_lists([["a"]]))


def test_bad_settings_are_refused_before_any_fit():
    corpus = jt.Corpus.from_token_lists([["a", "b"], ["b", "c"], ["c", "a"], ["a", "c"]])
    with pytest.raises(ParameterError, match="method must be one of"):
        jt.compare_num_topics(jt.LDA, corpus, [2], method="bogus", num_sweeps=100000)
    with pytest.raises(ParameterError, match="measure"):
        jt.compare_num_topics(jt.LDA, corpus, [2], coherence="bogus", num_sweeps=100000)
    with pytest.raises(ParameterError, match="HDP infers its number of topics"):
        jt.compare_num_topics(jt.HDP, corpus, [2])
    with pytest.raises(ParameterError, match="estimator class"):
        jt.compare_num_topics(jt.LDA(2), corpus, [2])
    unknown = jt.Corpus.from_token_lists([["zzz"]])
    with pytest.raises(CorpusError, match="no token of the held-out documents"):
        jt.compare_num_topics(jt.LDA, corpus, [2], held_out=unknown, num_sweeps=100000)
    report = jt.compare_num_topics(jt.LDA, corpus, [2], seeds=(-1,), num_sweeps=2, coherence=None)
    assert report.rows[0].per_seed_perplexity and np.isfinite(report.rows[0].perplexity)


def test_repeated_ks_or_seeds_and_a_bad_coherence_are_refused():
    corpus = synthetic_lda(num_docs=20, num_words=30, num_topics=2, mean_doc_length=8, seed=0).corpus
    with pytest.raises(ParameterError, match="num_topics lists 2 more than once"):
        jt.compare_num_topics(jt.LDA, corpus, [2, 2], num_sweeps=1)
    with pytest.raises(ParameterError, match="seeds lists 0 more than once"):
        jt.compare_num_topics(jt.LDA, corpus, [2], seeds=(0, 0), num_sweeps=1)
    with pytest.raises(ParameterError, match="^coherence: measure must be one of"):
        jt.compare_num_topics(jt.LDA, corpus, [2], coherence="bogus", num_sweeps=1)
