"""Topic coherence (jaxtopics.coherence) against brute force: every window of every document
listed explicitly, and the measures' formulas written out with plain Python loops."""

from __future__ import annotations

import csv
import itertools
import math

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.coherence import MEASURES, window_counts

EPS = 1e-12


def _windows(docs: list[list[str]], size: int | None) -> list[set[str]]:
    """Every virtual document: a whole document (size None, or one shorter than the window),
    else each run of `size` consecutive tokens."""
    out = []
    for doc in docs:
        if size is None or len(doc) <= size:
            out.append(set(doc))
        else:
            out.extend(set(doc[t:t + size]) for t in range(len(doc) - size + 1))
    return out


def _reference(docs: list[list[str]], topic: list[str], measure: str, size: int | None) -> float:
    """Röder et al. (2015)'s definitions with explicit loops."""
    windows = _windows(docs, size)

    def p(*words):
        return sum(all(w in win for w in words) for win in windows) / len(windows)

    def pmi(a, b):
        return math.log((p(a, b) + EPS) / (p(a) * p(b)))

    def npmi(a, b):
        return 1.0 if p(a, b) >= 1 else pmi(a, b) / -math.log(p(a, b) + EPS)

    n = len(topic)
    if measure == "u_mass":
        vals = [math.log((p(topic[i], topic[j]) + EPS) / p(topic[j]))
                for i in range(n) for j in range(i)]
    elif measure in ("c_uci", "c_npmi"):
        f = pmi if measure == "c_uci" else npmi
        vals = [f(a, b) for a, b in itertools.permutations(topic, 2)]
    else:
        vectors = [[npmi(a, b) for b in topic] for a in topic]
        whole = [sum(col) for col in zip(*vectors)]
        norm = math.sqrt(sum(x * x for x in whole))
        vals = [sum(x * y for x, y in zip(v, whole)) / (math.sqrt(sum(x * x for x in v)) * norm)
                for v in vectors]
    return sum(vals) / len(vals)


def _random_docs(seed: int, num_docs: int = 40, words: int = 9) -> list[list[str]]:
    """Documents of 0..60 tokens from a skewed vocabulary: words repeat inside windows."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice([0, 1, 2, 5, 9, 10, 11, 30, 60], size=num_docs)
    lengths[0] = 17                                   # no corpus of empty documents only
    return [[f"w{i}" for i in np.minimum(rng.zipf(1.5, n) - 1, words - 1)] for n in lengths]


@pytest.mark.parametrize("size", [None, 1, 2, 3, 10, 110])
@pytest.mark.parametrize("seed", [0, 1])
def test_window_counts_equal_brute_force(seed, size):
    docs = _random_docs(seed)
    corpus = jt.Corpus.from_token_lists(docs)
    rng = np.random.default_rng(seed + 10)
    topics = [list(rng.choice(corpus.vocab, 4, replace=False)) for _ in range(6)]
    index = {w: i for i, w in enumerate(corpus.vocab)}
    counts = window_counts([[index[w] for w in t] for t in topics], corpus, size)
    windows = _windows(docs, size)
    assert counts.windows == len(windows)
    for k, topic in enumerate(topics):
        for i, a in enumerate(topic):
            assert counts.word[k, i] == sum(a in w for w in windows)
            for j, b in enumerate(topic):
                assert counts.pair[k, i, j] == sum(a in w and b in w for w in windows), (k, a, b)


@pytest.mark.parametrize("measure", list(MEASURES))
def test_every_measure_equals_its_definition(measure):
    docs = _random_docs(3, num_docs=60, words=12)
    corpus = jt.Corpus.from_token_lists(docs)
    rng = np.random.default_rng(4)
    topics = [list(rng.choice(corpus.vocab, 5, replace=False)) for _ in range(8)]
    for size in ("default", None, 4):
        window = MEASURES[measure] if size == "default" else size
        got = jt.topic_coherence(topics, corpus, measure, window_size=size)
        want = [_reference(docs, t, measure, window) for t in topics]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{measure} {size}")


def test_small_cases_by_hand():
    corpus = jt.Corpus.from_token_lists([["a", "b"], ["a", "c"], ["b", "c", "a"]])
    # u_mass over documents: D(a) = 3, D(b) = 2, D(a, b) = 2, pair (b | a)
    np.testing.assert_allclose(jt.topic_coherence([["a", "b"]], corpus, "u_mass"), [math.log(2 / 3)])
    # windows of 2: {a,b}, {a,c}, {b,c}, {c,a}: P(a) = 3/4, P(b) = 1/2, P(a,b) = 1/4
    pmi = math.log((0.25 + EPS) / (0.75 * 0.5))
    np.testing.assert_allclose(jt.topic_coherence([["a", "b"]], corpus, "c_uci", window_size=2), [pmi])
    np.testing.assert_allclose(jt.topic_coherence([["a", "b"]], corpus, "c_npmi", window_size=2),
                               [pmi / -math.log(0.25 + EPS)])
    # words that hold every window: NPMI 1 (complete co-occurrence), so c_v is 1
    both = jt.Corpus.from_token_lists([["x", "y"], ["y", "x", "x"]])
    np.testing.assert_allclose(jt.topic_coherence([["x", "y"]], both, "c_npmi"), [1.0])
    np.testing.assert_allclose(jt.topic_coherence([["x", "y"]], both, "c_v"), [1.0])


def test_counts_add_over_documents_and_words_match_by_string():
    docs = _random_docs(5, num_docs=50)
    corpus = jt.Corpus.from_token_lists(docs)
    ids = np.array([[0, 1, 2], [3, 4, 1]])
    for size in (None, 3):
        whole = window_counts(ids, corpus, size)
        parts = window_counts(ids, corpus.subset(np.arange(20)), size) + \
            window_counts(ids, corpus.subset(np.arange(20, 50)), size)
        assert whole.windows == parts.windows
        np.testing.assert_array_equal(whole.pair, parts.pair)
    # the same documents under another vocabulary order score the same
    topics = [[corpus.vocab[i] for i in row] for row in ids]
    reordered = jt.Corpus.from_token_lists(docs, vocab=sorted(corpus.vocab, reverse=True))
    assert reordered.vocab != corpus.vocab
    for measure in MEASURES:
        np.testing.assert_array_equal(jt.topic_coherence(topics, corpus, measure),
                                      jt.topic_coherence(topics, reordered, measure))


def test_bad_input_is_refused():
    corpus = jt.Corpus.from_token_lists([["a", "b"], ["a", "c"]])
    cases = [
        (dict(topics=[["a", "zebra"], ["b", "c"]]), jt.CorpusError, "'zebra' \\(topic 0\\)"),
        (dict(measure="c_x"), jt.ParameterError, "measure must be one of"),
        (dict(window_size=0), jt.ParameterError, "window_size"),
        (dict(eps=-1.0), jt.ParameterError, "eps"),
        (dict(eps=float("nan")), jt.ParameterError, "eps"),
        (dict(topics=[["a", "b"], ["a"]]), jt.ParameterError, "same number of top words"),
        (dict(topics=[["a"]]), jt.ParameterError, "at least 2 top words"),
        (dict(topics=["a", "b"]), jt.ParameterError, "not of single words"),
        (dict(topics=[["a", 3]]), jt.ParameterError, "not a string"),
        (dict(corpus=[["a", "b"]]), jt.CorpusError, "expects a jaxtopics.Corpus"),
    ]
    for change, error, match in cases:
        kwargs = dict(topics=[["a", "b"]], corpus=corpus, measure="c_v", window_size="default",
                      eps=EPS) | change
        with pytest.raises(error, match=match):
            jt.topic_coherence(kwargs.pop("topics"), kwargs.pop("corpus"), **kwargs)
    assert jt.topic_coherence([], corpus).shape == (0,)


def test_a_fitted_model_scores_its_topics(tmp_path):
    docs = _random_docs(6, num_docs=80, words=30)
    corpus = jt.Corpus.from_token_lists(docs)
    model = jt.LDA(num_topics=4).fit(corpus, num_sweeps=5, progress=False)
    words = [[w for w, _ in t] for t in model.top_words(6)]
    for measure in MEASURES:
        got = model.coherence(corpus, measure, top_n=6)
        assert got.shape == (4,)
        np.testing.assert_array_equal(got, jt.topic_coherence(words, corpus, measure))
    np.testing.assert_array_equal(model.coherence(corpus, top_n=6, topics=[2, 0]),
                                  jt.topic_coherence([words[2], words[0]], corpus))
    with pytest.raises(jt.ParameterError, match="at least 2 top words"):
        model.coherence(corpus, top_n=1)
    # clusters that hold no token (none or only empty documents) score NaN, the others their
    # words' coherence
    dmm = jt.DMM(num_clusters=40).fit(corpus, num_sweeps=3, progress=False)
    scores = dmm.coherence(corpus, "u_mass", top_n=3)
    words = np.zeros(40, int)
    np.add.at(words, dmm.labels, corpus.doc_lengths)
    assert (dmm.cluster_sizes == 0).any()
    assert np.isnan(scores[words == 0]).all() and np.isfinite(scores[words > 0]).all()


def test_the_command_line_writes_each_topics_coherence(tmp_path):
    from jaxtopics.cli import main

    src = tmp_path / "docs.txt"
    src.write_text("\n".join(" ".join(d) for d in _random_docs(7, num_docs=60, words=25) if d) + "\n")
    out = tmp_path / "run"
    assert main(["fit", "--input", str(src), "--out", str(out), "--num-topics", "3", "--sweeps",
                 "4", "--no-progress", "--devices", "1", "--coherence", "c_npmi",
                 "--top-words", "5"]) == 0
    rows = list(csv.reader((out / "coherence.csv").open()))
    assert rows[0] == ["topic", "c_npmi", "top_words"] and len(rows) == 4
    model = jt.load(out / "model.jtm")
    corpus = jt.Corpus.from_text_file(src)
    np.testing.assert_array_equal([float(r[1]) for r in rows[1:]],
                                  model.coherence(corpus, "c_npmi", top_n=5))
    assert main(["fit", "--input", str(src), "--out", str(out), "--coherence", "c_v",
                 "--top-words", "1"]) == 2


def test_empty_lda_topics_score_nan_and_a_refused_word_loses_no_fit(tmp_path):
    from jaxtopics.cli import main

    corpus = jt.Corpus.from_token_lists([["apple", "banana", "cherry"], ["banana", "date"],
                                         ["apple", "date", "fig"]])
    model = jt.LDA(num_topics=30).fit(corpus, num_sweeps=2, progress=False)
    held = np.bincount(model.assignments, minlength=30) > 0
    scores = model.coherence(corpus, "u_mass", top_n=3)
    assert np.isnan(scores[~held]).all() and np.isfinite(scores[held]).all()
    # LDA-C words that never occur: tied top words the coherence refuses; the fit is still saved
    (tmp_path / "v.txt").write_text("\n".join([f"unused{i}" for i in range(12)] + list("abcdefg")) + "\n")
    (tmp_path / "c.ldac").write_text("".join(f"2 {12 + i % 7}:2 {12 + (i + 3) % 7}:1\n" for i in range(6)))
    out = tmp_path / "run"
    assert main(["fit", "--input", str(tmp_path / "c.ldac"), "--vocab", str(tmp_path / "v.txt"),
                 "--out", str(out), "--num-topics", "2", "--sweeps", "2", "--no-progress",
                 "--devices", "1", "--coherence", "u_mass"]) == 0
    assert (out / "model.jtm").exists() and (out / "topics.txt").exists()
    assert not (out / "coherence.csv").exists()
    assert jt.topic_coherence([["a", "b"]], jt.Corpus.from_token_lists([["a", "b"]]), "c_v",
                              window_size=2**70).shape == (1,)
