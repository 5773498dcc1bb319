"""scripts/bench_lda.py's time-to-quality measure (issue 34): the log joint it computes from
tomotopy's assignments is lda.log_joint's quantity, its corpus has no unused words (tomotopy's V),
and the crossing time of the chains' mean is interpolated and never favours a chain that stopped."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).resolve().parent.parent / "scripts" / "bench_lda.py"
    spec = importlib.util.spec_from_file_location("bench_lda", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_collapsed_log_joint_is_lda_log_joint(bench, small_corpus):
    """The joint the script computes from count tables (float64, scipy) is lda.log_joint."""
    from jaxtopics.models import lda

    p = lda.Params(num_topics=4, alpha=0.3, beta=0.05)
    data = lda.prepare(small_corpus, p)
    state = lda.init(jax.random.key(3), data, p)
    ours = bench.collapsed_log_joint(np.asarray(state.doc_topic), np.asarray(state.word_topic),
                                     p.alpha, p.beta)
    assert ours == pytest.approx(float(lda.log_joint(state, data, p)), rel=1e-5)
    # rows of words that never occur change V, hence the quantity: why the corpus is cut
    padded = np.concatenate([np.asarray(state.word_topic), np.zeros((5, 4), np.int32)])
    assert bench.collapsed_log_joint(np.asarray(state.doc_topic), padded, p.alpha, p.beta) < ours - 1


def test_bench_corpus_keeps_only_the_words_that_occur(bench):
    args = bench.parse_args(["--docs", "40", "--words", "3000", "--doc-length", "20"])
    cut = bench.build_corpus(args)
    full = bench.build_corpus(bench.parse_args(["--docs", "40", "--words", "3000",
                                                "--doc-length", "20", "--keep-unused-words"]))
    assert full.num_words == 3000 and cut.num_words < 3000
    assert np.all(np.bincount(cut.word_ids, minlength=cut.num_words) > 0)
    # the same documents, word for word
    assert [cut.vocab[i] for i in cut.word_ids] == [full.vocab[i] for i in full.word_ids]
    np.testing.assert_array_equal(cut.doc_offsets, full.doc_offsets)


def test_time_to_quality_interpolates_the_mean_of_the_chains(bench):
    # (sweep, seconds, log joint per token) at each evaluation
    a = [(10, 1.0, -8.0), (20, 2.0, -7.0), (30, 3.0, -6.8)]
    b = [(10, 2.0, -8.2), (20, 4.0, -7.4), (30, 6.0, -7.0)]
    # means: sweep 10: -8.1 (1.5 s), 20: -7.2 (3 s), 30: -6.9 (4.5 s)
    sweeps, seconds = bench.time_to_quality([a, b], -7.0)
    assert sweeps == pytest.approx(20 + 10 * 0.2 / 0.3)
    assert seconds == pytest.approx(3.0 + 1.5 * 0.2 / 0.3)
    assert bench.time_to_quality([a, b], -6.0) == (None, None)
    assert bench.time_to_quality([a, b], -9.0) == (10, 1.5)     # the first evaluation reaches it


def test_a_chain_that_stopped_counts_its_last_value_and_its_pace(bench):
    """A chain stopped early (past the bar) keeps its last log joint, and its time is scaled to
    the sweeps the others needed: never the shorter time it actually ran."""
    early = [(10, 1.0, -7.5), (20, 2.0, -6.5)]                  # stopped at sweep 20
    late = [(10, 1.0, -8.0), (20, 2.0, -7.8), (30, 3.0, -7.6), (40, 4.0, -7.4)]
    sweeps, seconds = bench.time_to_quality([early, late], -7.0)
    # mean at 30: (-6.5 - 7.6) / 2 = -7.05, at 40: (-6.5 - 7.4) / 2 = -6.95; the early chain's
    # times there are 2.0 * 30 / 20 = 3.0 and 4.0, as the late chain's
    assert sweeps == pytest.approx(35.0)
    assert seconds == pytest.approx(3.5)
