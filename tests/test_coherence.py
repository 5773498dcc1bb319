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

    def npmi(a, b):              # the smoothed joint capped at the marginals (module docstring)
        joint = min(p(a, b) + EPS, p(a), p(b))
        return 1.0 if joint >= 1 else math.log(joint / (p(a) * p(b))) / -math.log(joint)

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
        (dict(eps=0), jt.ParameterError, "eps must be a number in \\(0, 1\\)"),
        (dict(eps=0.0), jt.ParameterError, "eps must be a number in \\(0, 1\\)"),
        (dict(eps=1), jt.ParameterError, "eps must be a number in \\(0, 1\\)"),
        (dict(eps=2.5), jt.ParameterError, "eps must be a number in \\(0, 1\\)"),
        (dict(eps=float("inf")), jt.ParameterError, "eps must be a number in \\(0, 1\\)"),
        (dict(eps=True), jt.ParameterError, "eps must be a number in \\(0, 1\\), got True"),
        (dict(eps=np.bool_(True)), jt.ParameterError, "eps must be a number in \\(0, 1\\)"),
        (dict(eps="1e-12"), jt.ParameterError, "eps must be a number in \\(0, 1\\)"),
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
    # clusters that hold fewer than 2 distinct words (none: no or only empty documents) score
    # NaN, the others their words' coherence
    dmm = jt.DMM(num_clusters=40).fit(corpus, num_sweeps=3, progress=False)
    scores = dmm.coherence(corpus, "u_mass", top_n=3)
    distinct = np.array([len({w for d in np.flatnonzero(dmm.labels == k) for w in docs[d]})
                         for k in range(40)])
    assert (dmm.cluster_sizes == 0).any() and (distinct == 1).any() and (distinct > 1).any()
    assert np.isnan(scores[distinct < 2]).all() and np.isfinite(scores[distinct >= 2]).all()


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
    z, w = model.assignments, corpus.word_ids
    distinct = np.array([np.unique(w[z == k]).size for k in range(30)])
    scores = model.coherence(corpus, "u_mass", top_n=3)
    assert np.isnan(scores[distinct < 2]).all() and np.isfinite(scores[distinct >= 2]).all()
    # LDA-C words that never occur: not top words of any topic that holds others, so the
    # coherence on the training corpus is computed (it refused them before) and written
    (tmp_path / "v.txt").write_text("\n".join([f"unused{i}" for i in range(12)] + list("abcdefg")) + "\n")
    (tmp_path / "c.ldac").write_text("".join(f"2 {12 + i % 7}:2 {12 + (i + 3) % 7}:1\n" for i in range(6)))
    out = tmp_path / "run"
    assert main(["fit", "--input", str(tmp_path / "c.ldac"), "--vocab", str(tmp_path / "v.txt"),
                 "--out", str(out), "--num-topics", "2", "--sweeps", "2", "--no-progress",
                 "--devices", "1", "--coherence", "u_mass"]) == 0
    assert (out / "model.jtm").exists() and (out / "topics.txt").exists()
    rows = list(csv.reader((out / "coherence.csv").open()))
    assert len(rows) == 3 and all(not r[2].startswith("unused") for r in rows[1:])
    assert jt.topic_coherence([["a", "b"]], jt.Corpus.from_token_lists([["a", "b"]]), "c_v",
                              window_size=2**70).shape == (1,)


@pytest.mark.parametrize("eps", [5e-324, 1e-300, 1e-12, np.float32(1e-6), 0.01, 0.5, 0.999])
def test_every_accepted_eps_gives_finite_scores_and_npmi_in_range(eps):
    """Issue 35: eps = 0 gave NaN / -inf, eps = 0.5 or 1 NPMI -8.35 / -inf and c_v NaN. Now eps
    is in (0, 1), the smoothed joint probability is capped at the marginals, and NPMI (each
    pair's, so c_npmi too) stays in [-1, 1]."""
    from jaxtopics.coherence import coherence_scores

    docs = _random_docs(8, num_docs=40, words=15) + [["only", "these"], ["never", "else"]] * 3
    corpus = jt.Corpus.from_token_lists(docs)
    rng = np.random.default_rng(9)
    topics = [list(rng.choice(corpus.vocab, 5, replace=False)) for _ in range(20)]
    topics += [["only", "these", "never", "else", "w0"], ["only", "these"] * 2 + ["w1"]]
    index = {w: i for i, w in enumerate(corpus.vocab)}
    for measure, default in MEASURES.items():
        for size in (default, None, 2, 1):
            got = jt.topic_coherence(topics, corpus, measure, window_size=size, eps=eps)
            assert np.isfinite(got).all(), (measure, size)
            if measure in ("c_npmi", "c_v"):
                assert (got >= -1).all() and (got <= 1).all(), (measure, size, got)
            if measure == "c_npmi":        # every pair alone: its NPMI, in [-1, 1]
                pairs = [list(p) for t in topics for p in itertools.combinations(t, 2)]
                counts = window_counts([[index[w] for w in p] for p in pairs], corpus, size)
                one = coherence_scores(counts, "c_npmi", eps)
                assert ((one >= -1) & (one <= 1)).all()
    # words that never co-occur: NPMI in [-1, 0) while eps is a smoothing, below 1 / windows
    # (a larger eps outweighs real co-occurrence); words that always co-occur: exactly 1
    never = jt.topic_coherence([["only", "else"]], corpus, "c_npmi", window_size=2, eps=eps)[0]
    assert -1 <= never < 0 if eps < 1 / window_counts([[0, 1]], corpus, 2).windows else never <= 1
    assert jt.topic_coherence([["only", "these"]], corpus, "c_npmi", window_size=2, eps=eps)[0] == 1


def test_default_eps_matches_the_uncapped_gensim_formulas():
    """The cap at the marginals moves a default-eps score by ~eps / P only (gensim's numbers)."""
    docs = _random_docs(3, num_docs=60, words=12)
    corpus = jt.Corpus.from_token_lists(docs)
    rng = np.random.default_rng(4)
    topics = [list(rng.choice(corpus.vocab, 5, replace=False)) for _ in range(8)]
    windows = _windows(docs, 10)

    def p(*words):
        return sum(all(w in win for w in words) for win in windows) / len(windows)

    def npmi(a, b):               # gensim's: no cap
        return 1.0 if p(a, b) >= 1 else (math.log((p(a, b) + EPS) / (p(a) * p(b)))
                                         / -math.log(p(a, b) + EPS))
    want = [np.mean([npmi(a, b) for a, b in itertools.permutations(t, 2)]) for t in topics]
    np.testing.assert_allclose(jt.topic_coherence(topics, corpus, "c_npmi"), want, atol=1e-9)


def test_coherence_scores_refuses_words_that_occur_nowhere():
    from jaxtopics.coherence import WindowCounts, coherence_scores

    counts = WindowCounts(4, np.array([[2, 0]]), np.array([[[2, 0], [0, 0]]]))
    with pytest.raises(jt.CorpusError, match="occurs in no window"):
        coherence_scores(counts, "c_npmi")


def test_words_no_token_uses_do_not_outrank_counted_words_and_coherence_scores_held_words():
    """Issue 35: a vocabulary with words no document uses (built on train + test): they tied
    under a small topic's phi, won on lowest id, and the coherence on the training corpus
    itself refused them ("... e.g. the training corpus")."""
    docs = [["apple", "banana", "cherry", "apple"], ["banana", "date", "elder"],
            ["apple", "date", "fig", "grape"], ["cherry", "fig"], ["grape", "apple", "banana"]]
    vocab = ["aaa_unused", "aab_unused"] + sorted({w for d in docs for w in d}) + ["zzz_unused"]
    corpus = jt.Corpus.from_token_lists(docs, vocab=vocab)
    model = jt.LDA(num_topics=6, beta=0.01).fit(corpus, num_sweeps=3, progress=False)
    z, w = model.assignments, corpus.word_ids
    counts = np.zeros((6, len(vocab)), int)
    np.add.at(counts, (z, w), 1)
    top = model.top_word_ids(len(vocab))
    used = counts.sum(0) > 0
    for k in range(6):
        held = int((counts[k] > 0).sum())
        # held words first (by phi), then words other topics hold, then unused ones, by id
        assert (counts[k, top[k, :held]] > 0).all()
        rest = top[k, held:]
        assert (counts[k, rest] == 0).all()
        np.testing.assert_array_equal(rest, np.concatenate([np.flatnonzero(used & (counts[k] == 0)),
                                                            np.flatnonzero(~used)]))
    assert [w for w, _ in model.top_words(len(vocab), topic=0)] == [vocab[i] for i in top[0]]
    # coherence on the training corpus: each topic on the top_n words it holds
    for measure in MEASURES:
        got = model.coherence(corpus, measure, top_n=4)
        for k in range(6):
            size = min(4, int((counts[k] > 0).sum()))
            if size < 2:
                assert np.isnan(got[k])
            else:
                want = jt.topic_coherence([[vocab[i] for i in top[k, :size]]], corpus, measure)
                np.testing.assert_array_equal(got[k], want[0])
    assert np.isfinite(model.coherence(corpus, "c_npmi", top_n=4)).sum() >= 1
    # a reference corpus without a scored word: named with its real topic id; no contradiction
    k = int(np.flatnonzero(np.isfinite(model.coherence(corpus, "u_mass", top_n=4)))[-1])
    missing = next(vocab[i] for i in top[k, :4] if counts[k, i] > 0)
    other = jt.Corpus.from_token_lists([[w for w in d if w != missing] for d in docs])
    with pytest.raises(jt.CorpusError, match=f"{missing!r} \\(topic {k}\\).*which holds every word"):
        model.coherence(other, "u_mass", top_n=4, topics=[k])
    with pytest.raises(jt.ParameterError, match="at least 2 top words"):
        model.coherence(corpus, top_n=1)


def test_a_model_whose_phi_hides_its_counts_ranks_by_phi_and_says_so(monkeypatch):
    """Where phi is not (n_kw + beta) / (n_k + V beta) (no built-in model), counts cannot be
    read off it: top words by phi then id, and a refused word's message names top_n, not the
    training corpus (which may be the very corpus given)."""
    docs = [["apple", "banana"], ["banana", "cherry"], ["apple", "cherry", "apple"]]
    corpus = jt.Corpus.from_token_lists(docs, vocab=["aaa_unused", "apple", "banana", "cherry"])
    model = jt.LDA(num_topics=8).fit(corpus, num_sweeps=2, progress=False)
    monkeypatch.setattr(model, "_count_floors", lambda: None)
    phi = model.topic_word
    np.testing.assert_array_equal(model.top_word_ids(4), np.argsort(-phi, axis=1, kind="stable"))
    held = np.flatnonzero(np.bincount(model.assignments, minlength=8) > 0)
    sparse = [k for k in held if np.unique(corpus.word_ids[model.assignments == k]).size < 3]
    assert sparse                           # a topic holding fewer than 3 words: fill-in ranks
    with pytest.raises(jt.CorpusError, match="'aaa_unused'.*or fewer top words \\(top_n\\)") as e:
        model.coherence(corpus, "u_mass", top_n=4, topics=sparse)
    assert "training corpus" not in str(e.value)
