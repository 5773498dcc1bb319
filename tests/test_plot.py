"""jaxtopics.plot (issue 33): every picture renders to a PNG of the size asked for that is not
blank, on the Agg backend, for the models it is meant for; and the functions refuse what they
cannot draw."""

from __future__ import annotations

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

import jaxtopics as jt  # noqa: E402
from cli_helpers import GROUPS  # noqa: E402
from jaxtopics import plot  # noqa: E402
from jaxtopics.errors import ParameterError  # noqa: E402

TEXTS = [" ".join(GROUPS[d % 3][(d * j) % 8] for j in range(1, 7)) for d in range(30)]
SIZE, DPI = (5.0, 4.0), 50


@pytest.fixture(scope="module")
def corpus():
    return jt.Corpus.from_texts(TEXTS, doc_names=[f"doc {d}" for d in range(len(TEXTS))])


@pytest.fixture(scope="module")
def lda_chains(corpus):
    return jt.LDA(num_topics=3, alpha=0.1, beta=0.01).fit_chains(corpus, 20, seeds=(0, 1),
                                                                  eval_every=5)


@pytest.fixture(scope="module")
def dpmm(corpus):
    return jt.DPMM(alpha=1.0, beta=0.1).fit(corpus, num_sweeps=5, seed=0, progress=False)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _png(fig, path) -> np.ndarray:
    """`fig` saved at SIZE x DPI and read back: [H, W, 4] floats."""
    fig.set_size_inches(*SIZE)
    fig.savefig(path, dpi=DPI, format="png")
    return matplotlib.image.imread(path)


def _check_picture(fig, path) -> None:
    image = _png(fig, path)
    assert image.shape == (int(SIZE[1] * DPI), int(SIZE[0] * DPI), 4)
    rgb = image[..., :3]
    assert rgb.std() > 0.05, "a blank picture"
    assert (rgb.reshape(-1, 3) < 0.9).any(1).mean() > 0.02, "almost nothing drawn"


def test_log_joint_of_one_chain_several_and_a_trace(lda_chains, tmp_path):
    ax = plot.log_joint(lda_chains)
    assert ax.get_xlabel() == "sweep" and "per token" in ax.get_ylabel()
    assert len(ax.get_lines()) == 2 and [t.get_text() for t in ax.get_legend().get_texts()] == [
        "seed 0", "seed 1"]
    x, y = ax.get_lines()[0].get_data()
    assert list(x) == [5, 10, 15, 20]
    np.testing.assert_allclose(y, [p.log_joint_per_token for p in lda_chains[0].trace])
    _check_picture(ax.figure, tmp_path / "chains.png")
    ax = plot.log_joint(lda_chains[0].trace, skip=10)          # a trace alone, burn-in left out
    assert list(ax.get_lines()[0].get_xdata()) == [10, 15, 20] and ax.get_legend() is None
    fig, given = plt.subplots()
    assert plot.log_joint(lda_chains, ax=given, labels=["a", "b"]) is given
    with pytest.raises(ParameterError, match="labels has 1 entries for 2 chains"):
        plot.log_joint(lda_chains, labels=["a"])
    with pytest.raises(ParameterError, match="fitted model, a trace"):
        plot.log_joint(3)


def test_top_words_grid(lda_chains, dpmm, tmp_path):
    fig = plot.top_words(lda_chains[0], num_words=4)
    assert len(fig.axes) == 3
    for ax in fig.axes:             # each panel: 4 words, the most probable on top
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert len(labels) == 4 and ax.get_title().startswith("topic ")
        assert {w for g in GROUPS for w in g} >= set(labels)
        widths = [bar.get_width() for bar in ax.patches]
        assert widths == sorted(widths, reverse=True)
    _check_picture(fig, tmp_path / "top.png")
    fig = plot.top_words(dpmm, num_words=3, topics=[0], ncols=1)
    assert len(fig.axes) == 1 and fig.axes[0].get_title().startswith("topic 0 ")


@pytest.mark.parametrize("word", ["i" * 80, "l" * 30, "W" * 12, "ab"])
def test_top_words_labels_fit_their_margin_at_the_saved_resolution(word):
    """Review: narrow glyphs are wider at 120 dpi (the CLI's) than at 72 (hinting): the label
    margin, measured at several resolutions, holds the (shortened) label's drawn width."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    fig = plt.figure(figsize=(8, 3), dpi=100)
    labels, grid = plot._top_words_grid(fig, [[word], [word]], 1, 2, 2)
    margin = grid.get_subplot_params().left * 8.0          # inches left of the first panel
    for dpi in (72, 100, 120, 150):
        drawn = RendererAgg(1, 1, dpi).get_text_width_height_descent(
            labels[0][0], FontProperties(size=8), ismath=False)[0] / dpi
        assert drawn + plot._YTICKS <= margin, (dpi, drawn, margin)     # label, tick, pad
    plt.close(fig)


def test_doc_topic_heat_map_groups_documents_by_topic(lda_chains, corpus, tmp_path):
    model = lda_chains[0]
    ax = plot.doc_topics(model, max_docs=12, doc_names=corpus.doc_names)
    image = ax.images[0].get_array()
    assert image.shape == (12, 3)
    main = np.asarray(image).argmax(1)
    assert (np.diff(main) >= 0).all()                          # a staircase over the columns
    assert ax.get_yticklabels()[0].get_text().startswith("doc ")
    assert "12 of 30" in ax.get_ylabel()
    _check_picture(ax.figure, tmp_path / "heat.png")
    assert plot.doc_topics(model).images[0].get_array().shape == (30, 3)   # all of them
    with pytest.raises(ParameterError, match="doc_names has 2 entries for 30"):
        plot.doc_topics(model, doc_names=["a", "b"])
    # with fewer columns than topics, no row is a document whose main topic is not shown
    # (they were blank rows); all of the shown topic's documents are there
    theta = np.asarray(model.doc_topic)
    one = plot.doc_topics(model, max_topics=1)
    top = int(one.get_xticklabels()[0].get_text())
    assert one.images[0].get_array().shape == (int((theta.argmax(1) == top).sum()), 1)
    assert float(one.images[0].get_array().min()) >= 1 / 3


def test_cluster_sizes_sorted(dpmm, lda_chains, tmp_path):
    ax = plot.cluster_sizes(dpmm)
    widths = [bar.get_width() for bar in ax.patches]
    sizes = np.asarray(dpmm.cluster_sizes)
    assert widths == sorted(sizes[sizes > 0].tolist(), reverse=True)
    assert ax.get_xlabel() == "documents" and "clusters" in ax.get_title()
    _check_picture(ax.figure, tmp_path / "sizes.png")
    ax = plot.cluster_sizes(lda_chains[0], max_clusters=2, words=0)   # topics: tokens per topic
    assert ax.get_xlabel() == "tokens" and len(ax.patches) == 2
    assert "largest 2 shown" in ax.get_title()


def test_active_topics_over_sweeps_of_dpmm_and_hdp(corpus, tmp_path):
    d = jt.DPMM(alpha=1.0, beta=0.1).fit(corpus, num_sweeps=2, seed=0, progress=False)
    history = plot.active_history(d, corpus, 6, every=2)
    assert [s for s, _ in history] == [2, 4, 6, 8] and d.sweeps_done == 8
    assert history[-1][1] == d.num_active_clusters
    straight = jt.DPMM(alpha=1.0, beta=0.1).fit(corpus, num_sweeps=8, seed=0, progress=False)
    np.testing.assert_array_equal(d.labels, straight.labels)       # the same chain
    ax = plot.active_topics(history, ylabel="active clusters")
    assert ax.get_ylabel() == "active clusters"
    _check_picture(ax.figure, tmp_path / "active.png")
    h = jt.HDP(alpha=1.0, gamma=1.0).fit(corpus, num_sweeps=0, seed=0)
    hist = plot.active_history(h, corpus, 4, every=4)
    assert [s for s, _ in hist] == [0, 4] and hist[-1][1] == h.num_active_topics
    ax = plot.active_topics({"HDP": hist, "DPMM": history})
    assert len(ax.get_lines()) == 2 and ax.get_legend() is not None


def test_coherence_bars(lda_chains, corpus, tmp_path):
    model = lda_chains[0]
    scores = model.coherence(corpus, "u_mass", top_n=4)
    ax = plot.coherence(model, scores=scores, measure="u_mass", top_n=4)
    widths = [bar.get_width() for bar in ax.patches]
    np.testing.assert_allclose(widths, np.sort(scores)[::-1])
    assert ax.get_xlabel() == "coherence u_mass (top 4 words)" and "mean" in ax.get_title()
    _check_picture(ax.figure, tmp_path / "coherence.png")
    computed = plot.coherence(model, corpus, "u_mass", top_n=4)
    np.testing.assert_allclose([b.get_width() for b in computed.patches], widths)
    with pytest.raises(ParameterError, match="reference corpus"):
        plot.coherence(model)
    with pytest.raises(ParameterError, match="one per topic"):
        plot.coherence(model, scores=[1.0])


def test_without_matplotlib_a_call_names_the_extra(monkeypatch, lda_chains):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r'pip install "jaxtopics\[viz\]"'):
        plot.log_joint(lda_chains)
