"""Sentence-LDA through the facade and the CLI: read-outs, reproducibility, resume, bad input."""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import CorpusError, ParameterError

TEXTS = [
    "The cat sat on the mat. Cats chase mice! The dog chased the cat around the garden.",
    "Stock markets fell sharply today. Investors sold shares and bonds. Markets may recover.",
    "Apples and pears are fruit. Fruit salad has apples, pears and grapes.",
    "The dog barked at the mice. Mice ran under the garden shed.",
    "Bond markets rallied while shares fell. Investors bought bonds.",
    "Grapes and apples grow in the garden. The fruit is sweet.",
] * 4


@functools.lru_cache(maxsize=None)
def _corpus() -> jt.Corpus:
    return jt.Corpus.from_texts(TEXTS, sentences=True)


def _same_state(a: jt.FittedModel, b: jt.FittedModel) -> None:
    for x, y in zip(a.state, b.state):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_read_outs_from_texts_and_token_lists() -> None:
    corpus = _corpus()
    assert corpus.num_sentences > corpus.num_docs
    m = jt.SentenceLDA(num_topics=3, alpha=0.1, beta=0.01).fit(corpus, num_sweeps=15, seed=0,
                                                               progress=False)
    k, v, d, s = 3, corpus.num_words, corpus.num_docs, corpus.num_sentences
    assert m.model == "slda" and m.num_topics == k
    assert m.topic_word.shape == (k, v) and m.doc_topic.shape == (d, k)
    np.testing.assert_allclose(m.topic_word.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(m.doc_topic.sum(1), 1.0, rtol=1e-5)
    assert m.sentence_topics.shape == (s,) and m.sentence_topics.dtype == np.int32
    assert "sentence_topics" in dir(m)
    # every token carries its sentence's topic
    sent = np.repeat(np.arange(s), np.diff(corpus.sentence_offsets))
    np.testing.assert_array_equal(m.assignments, m.sentence_topics[sent])
    assert len(m.top_words(4)) == k and len(m.top_words(4, topic=1)) == 4
    assert "<SLDA K=3" in m.summary() and np.isfinite(m.log_joint_per_token())
    assert m.log_joint_per_token() == pytest.approx(m.trace[-1].log_joint_per_token, rel=1e-6)

    # the same documents as token lists of sentences give the same corpus, hence the same chain
    docs = []
    for d_ in range(d):
        lo, hi = corpus.doc_offsets[d_], corpus.doc_offsets[d_ + 1]
        bounds = [b for b in corpus.sentence_offsets if lo <= b <= hi]
        docs.append([[corpus.vocab[w] for w in corpus.word_ids[a:b]]
                     for a, b in zip(bounds[:-1], bounds[1:])])
    again = jt.Corpus.from_token_lists(docs, vocab=corpus.vocab, sentences=True)
    assert again.fingerprint() == corpus.fingerprint()
    m2 = jt.SentenceLDA(num_topics=3).fit(again, num_sweeps=15, seed=0, progress=False)
    _same_state(m, m2)


@pytest.mark.parametrize("sampler", ["parallel", "sequential"])
def test_same_seed_is_bitwise_identical(sampler: str) -> None:
    corpus = _corpus()
    a = jt.SentenceLDA(3, sampler=sampler).fit(corpus, num_sweeps=12, seed=7, progress=False)
    b = jt.SentenceLDA(3, sampler=sampler).fit(corpus, num_sweeps=12, seed=7, progress=False)
    c = jt.SentenceLDA(3, sampler=sampler).fit(corpus, num_sweeps=12, seed=8, progress=False)
    _same_state(a, b)
    assert [p[:3] for p in a.trace] == [p[:3] for p in b.trace]
    assert not np.array_equal(a.sentence_topics, c.sentence_topics)


@pytest.mark.parametrize("sampler", ["parallel", "sequential"])
def test_save_load_resume_equals_uninterrupted(tmp_path, sampler: str) -> None:
    corpus = _corpus()
    est = jt.SentenceLDA(3, alpha=0.2, beta=0.05, sampler=sampler, num_blocks=8)
    straight = est.fit(corpus, num_sweeps=50, seed=3, eval_every=10, progress=False)
    first = est.fit(corpus, num_sweeps=20, seed=3, eval_every=10, progress=False)
    first.save(tmp_path / "m.jtm")
    loaded = jt.load(tmp_path / "m.jtm")
    assert loaded.params == first.params and loaded.model == "slda"
    np.testing.assert_array_equal(loaded.sentence_topics, first.sentence_topics)
    np.testing.assert_array_equal(loaded.assignments, first.assignments)   # without the corpus
    np.testing.assert_array_equal(loaded.doc_topic, first.doc_topic)
    loaded.resume(corpus, num_sweeps=30, eval_every=10, progress=False)
    _same_state(straight, loaded)
    assert loaded.sweeps_done == 50
    assert ([p.log_joint_per_token for p in loaded.trace]
            == [p.log_joint_per_token for p in straight.trace])


def test_transform_unseen_documents() -> None:
    corpus = _corpus()
    m = jt.SentenceLDA(3).fit(corpus, num_sweeps=30, seed=1, progress=False)
    new = jt.Corpus.from_token_lists(
        [[["markets", "investors", "bonds"], ["shares", "markets"]], [["apples", "pears"]], []],
        vocab=m.vocab, sentences=True)
    theta = m.transform(new, num_sweeps=20)
    assert theta.shape == (3, 3)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(theta[2], 1 / 3, rtol=1e-5)         # an empty document: the prior
    # the two documents load on the topics that carry their words
    phi = m.topic_word
    for row, words in ((theta[0], ["markets", "bonds"]), (theta[1], ["apples", "pears"])):
        ids = [m.vocab.index(w) for w in words]
        assert int(np.argmax(row)) == int(np.argmax(np.log(phi[:, ids]).sum(1)))


def test_corpus_without_sentences_is_refused() -> None:
    flat = jt.Corpus.from_texts(TEXTS)
    with pytest.raises(CorpusError, match=r"sentence boundaries.*sentences=True"):
        jt.SentenceLDA(num_topics=3).fit(flat, num_sweeps=1)


@pytest.mark.parametrize("kwargs,field", [
    (dict(num_topics=0), "num_topics"), (dict(num_topics=-2), "num_topics"),
    (dict(num_topics=True), "num_topics"), (dict(num_topics=2.5), "num_topics"),
    (dict(alpha=0.0), "alpha"), (dict(alpha=-1.0), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(alpha=float("inf")), "alpha"), (dict(alpha=1e-40), "alpha"), (dict(alpha="x"), "alpha"),
    (dict(beta=0.0), "beta"), (dict(beta=-0.5), "beta"), (dict(beta=float("nan")), "beta"),
    (dict(beta=float("inf")), "beta"), (dict(beta=1e31), "beta"),
    (dict(sampler="uncollapsed"), "sampler"), (dict(num_blocks=0), "num_blocks"),
    (dict(chunk_size=True), "chunk_size"),
])
def test_bad_parameters_are_refused(kwargs, field: str) -> None:
    args = dict(num_topics=3) | kwargs
    with pytest.raises(ParameterError, match=field):
        jt.SentenceLDA(**args)


def test_sharding_needs_the_parallel_kernel() -> None:
    with pytest.raises(ParameterError, match="'parallel' kernel"):
        jt.SentenceLDA(3, sampler="sequential").fit(_corpus(), num_sweeps=1, devices=2)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_cli_fit_and_show(tmp_path) -> None:
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(TEXTS), encoding="utf-8")
    out = tmp_path / "run"
    # --model slda implies --sentences for a text input
    r = _cli("fit", "--model", "slda", "--num-topics", "3", "--sweeps", "10", "--eval-every", "5",
             "--sampler", "sequential", "--input", str(src), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "SentenceLDA(num_topics=3" in r.stdout and "<SLDA K=3" in r.stdout
    assert (out / "model.jtm").exists() and len((out / "topics.txt").read_text().splitlines()) == 3
    shown = _cli("show", str(out / "model.jtm"), "--top-words", "4")
    assert shown.returncode == 0, shown.stderr
    assert "<SLDA K=3" in shown.stdout and "sweeps=10" in shown.stdout
    loaded = jt.load(out / "model.jtm")
    assert loaded.sentence_topics.shape == (_corpus().num_sentences,)
    # an LDA-C input has no sentences: a clear error, no traceback
    ldac = tmp_path / "c.ldac"
    ldac.write_text("2 0:1 1:2\n1 1:1\n", encoding="utf-8")
    (tmp_path / "c.tokens").write_text("a\nb\n", encoding="utf-8")
    r = _cli("fit", "--model", "slda", "--input", str(ldac), "--vocab", str(tmp_path / "c.tokens"),
             "--out", str(tmp_path / "o2"), "--sweeps", "1", "--no-progress")
    assert r.returncode == 2 and "sentence" in r.stderr and "Traceback" not in r.stderr
