"""Interop (issue 33): Corpus.from_sparse, to_pyldavis / pandas frames of every model, the
fit callback (every model; sharded; fit_chains), and `jaxtopics show --html`."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.sparse as sp

import jaxtopics as jt
from cli_helpers import run_cli

TEXTS = ["apple banana apple cherry. fruit salad apple.", "car engine wheel car. road tire engine."] * 8


# -- Corpus.from_sparse ------------------------------------------------------------------------

X = np.array([[2, 0, 1, 0], [0, 0, 0, 0], [0, 3, 0, 0], [1, 1, 1, 0]])
VOCAB = ["apple", "car", "pie", "unused"]


@pytest.mark.parametrize("make", [np.asarray, sp.csr_matrix, sp.csc_matrix, sp.coo_matrix,
                                  sp.csr_array, lambda a: sp.csr_matrix(a.astype(np.float32)),
                                  lambda a: a.astype(np.uint8), lambda a: a.astype(float)])
def test_from_sparse_any_format(make):
    corpus = jt.Corpus.from_sparse(make(X), vocab=VOCAB)
    assert corpus.vocab == tuple(VOCAB)
    assert corpus.doc_lengths.tolist() == [3, 0, 3, 3]           # the empty row kept, in order
    assert corpus.words(0) == ["apple", "apple", "pie"] and corpus.words(3) == ["apple", "car", "pie"]
    assert corpus.word_counts().tolist() == [3, 4, 2, 0]           # the all-zero column stays


def test_from_sparse_coo_duplicates_and_explicit_zeros():
    coo = sp.coo_matrix(([1, 2, 0, 4], ([0, 0, 1, 2], [1, 1, 0, 0])), shape=(3, 2))
    corpus = jt.Corpus.from_sparse(coo)
    assert corpus.vocab == ("0", "1") and corpus.doc_lengths.tolist() == [3, 0, 4]


@pytest.mark.parametrize("bad, match", [
    (-X, "X\\[0, 0\\] = -2 is negative"),
    (X + 0.5, "X\\[0, 0\\] = 2.5 is not an integer count"),
    (np.where(X > 0, np.nan, 0.0), "not a finite count"),
    (np.zeros((2, 3)), "holds no token"),
    (np.array([1, 2]), "2-D"),
    (np.array([["a", "b"]]), "numbers"),
])
def test_from_sparse_refuses(bad, match):
    with pytest.raises(jt.CorpusError, match=match):
        jt.Corpus.from_sparse(bad)


def test_from_sparse_vocab_length():
    with pytest.raises(jt.CorpusError, match="vocab has 2 words for the 4 columns"):
        jt.Corpus.from_sparse(X, vocab=["a", "b"])


def test_from_sparse_one_row_and_count_vectorizer():
    sklearn = pytest.importorskip("sklearn.feature_extraction.text")
    vec = sklearn.CountVectorizer()
    counts = vec.fit_transform(["apple pie apple", "car road"])
    corpus = jt.Corpus.from_sparse(counts, vocab=vec.get_feature_names_out())
    assert corpus.words(0) == ["apple", "apple", "pie"] and corpus.words(1) == ["car", "road"]
    one = jt.Corpus.from_sparse(counts[:1], vocab=vec.get_feature_names_out())
    assert one.num_docs == 1 and one.num_tokens == 3


# -- every model: callback, pyLDAvis, frames ---------------------------------------------------

def _models():
    return {"lda": jt.LDA(3), "slda": jt.SentenceLDA(3), "dmm": jt.DMM(4), "dpmm": jt.DPMM(),
            "ptm": jt.PTM(num_topics=3, num_pseudo_docs=4), "dpmrm": jt.DPMRM(), "hdp": jt.HDP()}


@pytest.fixture(scope="module")
def corpus():
    return jt.Corpus.from_texts(TEXTS, sentences=True, labels=[["fruit"], ["car"]] * 8,
                                doc_names=[f"doc{i}" for i in range(len(TEXTS))])


@pytest.fixture(scope="module")
def stopped(corpus):
    """Every model fitted for 20 sweeps with a callback stopping it after 10."""
    out = {}
    for name, est in _models().items():
        seen = []

        def stop(point, model, seen=seen):
            seen.append((point.sweep, model.sweeps_done, model.doc_topic.shape[0]))
            return point.sweep < 10
        out[name] = (est.fit(corpus, 20, seed=1, eval_every=5, callback=stop, progress=False), seen)
    return out


@pytest.mark.parametrize("name", list(_models()))
def test_callback_stops_and_resumes_bitwise(name, corpus, stopped, tmp_path):
    model, seen = stopped[name]
    assert seen == [(5, 5, corpus.num_docs), (10, 10, corpus.num_docs)]
    assert model.sweeps_done == 10 and [p.sweep for p in model.trace] == [5, 10]
    model.save(tmp_path / "m.jtm")
    again = jt.load(tmp_path / "m.jtm").resume(corpus, 10, eval_every=5)
    straight = _models()[name].fit(corpus, 20, seed=1, eval_every=5, progress=False)
    np.testing.assert_array_equal(again.assignments, straight.assignments)
    assert [p.sweep for p in again.trace] == [5, 10, 15, 20]


@pytest.mark.parametrize("name", list(_models()))
def test_pyldavis_and_frames(name, corpus, stopped):
    pyLDAvis = pytest.importorskip("pyLDAvis")
    pd = pytest.importorskip("pandas")
    model = stopped[name][0]
    kw = model.to_pyldavis(corpus)
    k = kw["topic_term_dists"].shape[0]
    assert kw["doc_topic_dists"].shape == (corpus.num_docs, k) and kw["sort_topics"] is False
    np.testing.assert_allclose(kw["doc_topic_dists"].sum(1), 1, rtol=1e-6)
    vis = pyLDAvis.prepare(**kw, n_jobs=1)
    assert len(vis.topic_coordinates) == k
    theta = model.doc_topic_frame(corpus)
    assert isinstance(theta, pd.DataFrame) and list(theta.index[:2]) == ["doc0", "doc1"]
    assert theta.shape == model.doc_topic.shape and theta.columns.name == "topic"
    phi = model.topic_word_frame()
    assert list(phi.columns) == list(model.vocab) and phi.shape == model.topic_word.shape
    np.testing.assert_allclose(phi.sum(axis=1), 1, rtol=1e-5)
    assert model.doc_topic_frame().index.equals(pd.RangeIndex(corpus.num_docs, name="document"))


def test_pyldavis_refuses_another_corpus(stopped):
    with pytest.raises(jt.CorpusError, match="to_pyldavis: this corpus is not the one"):
        stopped["lda"][0].to_pyldavis(jt.Corpus.from_texts(TEXTS[:4]))


def test_pyldavis_leaves_out_empty_topics_and_unused_words():
    corpus = jt.Corpus.from_sparse(X[[0, 2, 3] * 5], vocab=VOCAB)
    model = jt.DMM(6).fit(corpus, 10, seed=0, progress=False)
    kw = model.to_pyldavis(corpus)
    assert kw["topic_term_dists"].shape == (model.num_active_clusters, 3)
    assert kw["vocab"] == VOCAB[:3] and kw["term_frequency"].tolist() == [15, 20, 10]
    assert set(np.unique(kw["doc_topic_dists"])) <= {0.0, 1.0}     # DMM: memberships


def test_pyldavis_one_topic(tmp_path):
    # pyLDAvis's own scaling failed a bare `assert mds_res.shape == (K, 2)` on a single topic
    # (LDA(1), or an HDP / DPMM / DMM that keeps one): the topic now sits at the origin
    pyLDAvis = pytest.importorskip("pyLDAvis")
    corpus = jt.Corpus.from_texts(TEXTS)
    model = jt.LDA(1).fit(corpus, 2, seed=0, progress=False)
    vis = pyLDAvis.prepare(**model.to_pyldavis(corpus), n_jobs=1)
    assert vis.topic_coordinates[["x", "y"]].values.tolist() == [[0.0, 0.0]]
    pyLDAvis.save_html(vis, str(tmp_path / "vis.html"))
    assert "mds" not in jt.LDA(2).fit(corpus, 2, seed=0, progress=False).to_pyldavis(corpus)


# -- callback: errors, sharded, fit_chains -----------------------------------------------------

def test_callback_exception_propagates_and_leaves_no_partial_file(tmp_path):
    corpus = jt.Corpus.from_texts(TEXTS)
    path = tmp_path / "ckpt.jtm"

    def boom(point, model):
        if point.sweep == 10:
            raise RuntimeError("stop here")
    with pytest.raises(RuntimeError, match="stop here"):
        jt.LDA(2).fit(corpus, 30, eval_every=5, checkpoint_every=4, checkpoint_path=path,
                      callback=boom, progress=False)
    assert jt.load(path).sweeps_done == 8            # the last whole checkpoint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.jtm"]
    with pytest.raises(jt.ParameterError, match="callback must be a function"):
        jt.LDA(2).fit(corpus, 5, callback="print")


def test_callback_stop_writes_the_checkpoint(tmp_path):
    corpus = jt.Corpus.from_texts(TEXTS)
    model = jt.LDA(2).fit(corpus, 40, eval_every=5, checkpoint_every=20, progress=False,
                          checkpoint_path=tmp_path / "c.jtm", callback=lambda p, m: p.sweep < 15)
    assert model.sweeps_done == 15 and jt.load(tmp_path / "c.jtm").sweeps_done == 15


def test_callback_sharded():
    corpus = jt.Corpus.from_texts(TEXTS)
    points = []
    model = jt.LDA(2).fit(corpus, 20, seed=3, eval_every=5, devices=2, progress=False,
                          callback=lambda p, m: points.append(m.doc_topic.shape) or p.sweep < 10)
    assert model.sweeps_done == 10 and model.shards == 2 and len(points) == 2
    model.resume(corpus, 10)
    straight = jt.LDA(2).fit(corpus, 20, seed=3, eval_every=5, devices=2, progress=False)
    np.testing.assert_array_equal(model.assignments, straight.assignments)


def test_in_a_multi_process_run_any_process_stopping_stops_every_process(monkeypatch):
    """The stop is summed over the processes at each trace point (``fit._stops_everywhere``):
    a process whose own callback says go on stops where another process's said stop, and one
    without a callback takes part in the sum (they exchange counts every sweep: a process
    stopping alone would leave the others waiting)."""
    from jaxtopics import fit, processes

    asked = []
    others_stop_at = 10

    def process_sum(value):                      # this process's answer + the other process's
        asked.append(value)
        return value + int(len(asked) * 5 >= others_stop_at)

    monkeypatch.setattr(processes, "process_sum", process_sum)
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    assert fit._stops_everywhere(False) is False and fit._stops_everywhere(False) is True
    assert fit._stops_everywhere(True) is True


def test_callback_fit_chains():
    corpus = jt.Corpus.from_texts(TEXTS)
    calls = []

    def cb(point, model):
        calls.append((model.seed, point.sweep))
        return not (point.sweep >= 10 and model.seed == 1) and not point.sweep >= 15
    chains = jt.LDA(2).fit_chains(corpus, 30, seeds=(0, 1), eval_every=5, callback=cb)
    assert [c.sweeps_done for c in chains] == [15, 15]          # they stop when both asked
    assert calls[-2:] == [(0, 15), (1, 15)]
    assert [p.sweep for p in chains[0].trace] == [5, 10, 15]
    alone = jt.DPMM().fit_chains(corpus, 20, seeds=(0, 1), eval_every=5,
                                 callback=lambda p, m: p.sweep < 5 * (m.seed + 1))
    assert [c.sweeps_done for c in alone] == [5, 10]           # one after another: each its own


# -- jaxtopics show --html --------------------------------------------------------------------

def test_show_html(tmp_path):
    pytest.importorskip("pyLDAvis")
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(t.replace(".", "") for t in TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    r = run_cli("fit", "--input", str(docs), "--out", str(out), "--num-topics", "2", "--sweeps",
                "10", "--no-progress", "--devices", "1")
    assert r.returncode == 0, r.stderr
    r = run_cli("show", str(out), "--html", str(tmp_path / "vis.html"), "--input", str(docs))
    assert r.returncode == 0, r.stderr
    assert "K=2" in r.stdout and "LDAvis" in (tmp_path / "vis.html").read_text(encoding="utf-8")
    r = run_cli("show", str(out), "--html", str(tmp_path / "x.html"))
    assert r.returncode == 2 and "--html and --input go together" in r.stderr
    other = tmp_path / "other.txt"
    other.write_text("zebra lion\ntiger\n", encoding="utf-8")
    r = run_cli("show", str(out), "--html", str(tmp_path / "x.html"), "--input", str(other))
    assert r.returncode == 2 and "not the one the model was fitted on" in r.stderr
    assert not (tmp_path / "x.html").exists()
