"""Settings refused or normalised before any work: estimator parameters (bounds, numpy numbers,
float32 values shown as their shortest decimal), the functional core's ``prepare``, fit's
checkpoint arguments and save paths, and each model's own limits (HDP's split-merge steps,
DPMM's incremental start, DP-MRM's topic slots)."""

from __future__ import annotations

import numpy as np
import pytest

import jaxtopics as jt
from cli_helpers import run_cli as _cli
from jaxtopics.errors import ParameterError
from jaxtopics.models import lda
from small_texts import TEXTS


def test_checkpoint_every_needs_a_path():
    c = jt.Corpus.from_token_lists([["a", "b", "c"], ["b", "c", "d"]])
    with pytest.raises(ParameterError, match="checkpoint_every needs checkpoint_path"):
        jt.LDA(2).fit(c, num_sweeps=2, checkpoint_every=1)
    with pytest.raises(ParameterError, match="checkpoint_path needs checkpoint_every"):
        jt.LDA(2).fit(c, num_sweeps=2, checkpoint_path="never-written.jtm")


def test_functional_core_validates_params():
    c = jt.Corpus.from_token_lists([["a", "b", "c"], ["b", "c", "d"]])
    for bad in (lda.Params(num_topics=5, alpha=-1.0), lda.Params(num_topics=0),
                lda.Params(num_topics=2, sampler="bogus")):
        with pytest.raises(ParameterError):
            lda.prepare(c, bad)


@pytest.mark.parametrize("cls", [jt.LDA, jt.SentenceLDA, jt.PTM, jt.DMM, jt.DPMM, jt.HDP, jt.DPMRM])
def test_num_blocks_is_bounded_for_every_model(cls):
    """Re-check: --num-blocks 2000000000 grew LDA to 22 GB before the OOM killer; 10^11 was
    accepted by DMM, DPMM, SentenceLDA and HDP (and saved), and --split-merge-steps 10^11
    crashed in jit. Every model now refuses more than MAX_BLOCKS blocks."""
    from jaxtopics.validate import MAX_BLOCKS

    cls(num_blocks=MAX_BLOCKS)
    for bad in (MAX_BLOCKS + 1, 2_000_000_000, 10**11):
        with pytest.raises(ParameterError, match=f"num_blocks must be an integer <= {MAX_BLOCKS}"):
            cls(num_blocks=bad)


def test_huge_split_merge_steps_are_refused():
    with pytest.raises(ParameterError, match="split_merge_steps must be an integer <= 2147483647"):
        jt.HDP(split_merge_steps=10**11)


def test_dpmrm_topic_slots_beyond_int32_are_a_parameter_error(tmp_path):
    corpus = jt.Corpus.from_texts(TEXTS, labels=[["a"], ["b"], ["c"]])
    with pytest.raises(ParameterError, match="initial_topics must be an integer <= 1048576"):
        jt.DPMRM(initial_topics=1_000_000_000)
    many = jt.Corpus.from_texts(TEXTS * 400, labels=[[f"l{i}"] for i in range(1200)])
    with pytest.raises(ParameterError, match=r"needs 2516582400 topic slots \(1200 labels x "
                                             r"initial_topics=1048576, doubled"):
        jt.DPMRM(initial_topics=2**20).fit(many, num_sweeps=1)
    assert jt.DPMRM(initial_topics=2).fit(corpus, num_sweeps=1).num_topics >= 1
    (tmp_path / "t.txt").write_text("".join(f"a--b\t{t}\n" for t in TEXTS))
    out = _cli("fit", "--model", "dpmrm", "--initial-topics", "1000000000", "--sweeps", "1",
               "-i", str(tmp_path / "t.txt"), "-o", str(tmp_path / "o"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--initial-topics must be an integer <= 1048576" in out.stderr


def test_dpmm_incremental_start_needs_a_sweep():
    corpus = jt.Corpus.from_texts(TEXTS * 5)
    with pytest.raises(ParameterError, match="incremental start .* at least 1 sweep"):
        jt.DPMM().fit(corpus, num_sweeps=0)
    m = jt.DPMM().fit(corpus, num_sweeps=1)
    assert m.num_topics >= 1
    np.testing.assert_allclose(m.doc_topic.sum(1), 1.0, rtol=1e-5)


def test_checkpoint_path_alone_is_refused_as_the_docstring_says(tmp_path):
    corpus = jt.Corpus.from_texts(TEXTS * 3)
    with pytest.raises(ParameterError, match="checkpoint_path needs checkpoint_every"):
        jt.LDA(num_topics=2).fit(corpus, num_sweeps=2, checkpoint_path=tmp_path / "x.jtm")
    assert "(default: every eval)" not in jt.LDA.fit.__doc__
    assert "the two go together" in jt.LDA.fit.__doc__


def test_numpy_numbers_become_python_numbers():
    corpus = jt.Corpus.from_texts([t + ". " + t for t in TEXTS] * 5, sentences=True)
    for est in (jt.SentenceLDA(num_topics=np.int32(2)), jt.DMM(num_clusters=np.int32(3)),
                jt.DPMM(capacity=np.int64(8), alpha=np.float64(1.0))):
        assert "np." not in repr(est)
        assert all(not isinstance(v, np.generic) for v in est.params)
        m = est.fit(corpus, num_sweeps=np.int64(2))
        assert type(m.trace[-1].sweep) is int and type(m.sweeps_done) is int
        assert "np." not in repr(m) and "np." not in m.summary()


def test_save_to_an_empty_path_says_so(tmp_path):
    m = jt.LDA(num_topics=2).fit(jt.Corpus.from_texts(TEXTS * 3), num_sweeps=1)
    for bad in ("", "  "):
        with pytest.raises(ParameterError, match="model file path is empty"):
            m.save(bad)
        with pytest.raises(ParameterError, match="model file path is empty"):
            jt.LDA(num_topics=2).fit(jt.Corpus.from_texts(TEXTS * 3), num_sweeps=2,
                                     checkpoint_path=bad, checkpoint_every=1)


def test_dpmrm_refuses_more_initial_topics_than_tokens_can_fill():
    many = jt.Corpus.from_texts(["apple banana"] * 300,
                                labels=[[f"l{i}", f"m{i % 7}"] for i in range(300)])
    with pytest.raises(ParameterError, match=r"initial_topics=1000 gives 307000 initial topics "
                                             r"\(307 labels x 1000\) for a corpus of 600 tokens"):
        jt.DPMRM(initial_topics=1000).fit(many, num_sweeps=1)
    for value in (2**30, 10**9):          # one message for the limit
        with pytest.raises(ParameterError, match="initial_topics must be an integer <= 1048576"):
            jt.DPMRM(initial_topics=value)


def test_float32_parameters_show_their_shortest_decimal():
    est = jt.LDA(num_topics=2, alpha=np.float32(0.1))
    assert "alpha=0.1," in repr(est)
    assert jt.DMM(num_clusters=2, alpha=np.float32(0.1)).params.alpha == 0.1
