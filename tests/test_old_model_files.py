"""Model files of the oldest format ``jt.load`` reads, one per model (tests/fixtures/
<model>_format_<v>.jtm, written by old commits' code: tests/old_model_fixtures.py says which and
how): each loads, its read-outs are finite and consistent, and ``resume`` continues it as one
chain (resumed in two steps or in one, bitwise the same; saved again, a current file). A
format-1 DP-MRM file, from before its label names were kept, is one FormatError saying so.

Files written just before a feature, whose resumed chain must be today's chain bitwise, are
tested beside their feature (tests/test_hyper.py, test_learned_priors_*.py,
test_concentrations.py); ``test_every_model_has_an_old_model_file`` checks that every model
has a fixture here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import FormatError
from jaxtopics.estimators import MODELS

from old_model_fixtures import FIXTURES, SWEEPS, UNREADABLE, sentence_corpus

FIXTURE_DIR = Path(__file__).parent / "fixtures"


def _raw_meta(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as f:
        return json.loads(str(f["__meta__"][()]))


def _same_state(a, b) -> None:
    assert a._fields == b._fields
    for name, x, y in zip(a._fields, a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


def _check_read_outs(model, corpus) -> None:
    """phi [K, V] and theta [D, K] finite distributions over one K; the per-token assignments
    within the model's topics; the trace rising to sweeps_done with a finite log joint."""
    phi, theta = model.topic_word, model.doc_topic
    k = phi.shape[0]
    assert phi.shape == (k, corpus.num_words) and theta.shape == (corpus.num_docs, k) and k >= 1
    for name, table in (("topic_word", phi), ("doc_topic", theta)):
        assert np.all(np.isfinite(table)) and np.all(table >= 0), name
        np.testing.assert_allclose(table.sum(1), 1.0, rtol=1e-5, err_msg=name)
    z = model.assignments
    assert z.shape == (corpus.num_tokens,) and z.min() >= 0
    sweeps = [p.sweep for p in model.trace]
    assert sweeps == sorted(set(sweeps)) and sweeps[-1] == model.sweeps_done
    assert np.isfinite(model.log_joint_per_token()) and model.log_joint_per_token() < 0
    assert f"sweeps={model.sweeps_done}," in model.summary()


def test_every_model_has_an_old_model_file():
    assert sorted(entry[0] for entry in FIXTURES.values()) == sorted(MODELS)
    for file in [*FIXTURES, *UNREADABLE]:
        assert (FIXTURE_DIR / file).is_file(), file


@pytest.mark.parametrize("file", list(FIXTURES))
def test_an_old_model_file_loads_and_resumes_as_one_chain(file, tmp_path):
    name, _, corpus_of, _ = FIXTURES[file]
    path, corpus = FIXTURE_DIR / file, corpus_of()
    meta = _raw_meta(path)
    version = int(file.split("_format_")[1].split(".")[0])
    assert meta["format_version"] == version and "checksum" not in meta    # what it stands for
    old = jt.load(path)
    assert old.model == name and old.sweeps_done == SWEEPS
    want = dict(meta["params"])
    if name == "hdp":     # written before the direct-assignment kernels: the CRF's, renamed
        want["sampler"] = {"parallel": "crf", "sequential": "crf_sequential"}[want["sampler"]]
    assert {k: getattr(old.params, k) for k in meta["params"]} == want
    assert old.vocab == corpus.vocab and old.shards is None
    _check_read_outs(old, corpus)

    two_steps = jt.load(path)
    two_steps.resume(corpus, 2, progress=False)
    two_steps.resume(corpus, 2, progress=False)
    one_step = jt.load(path).resume(corpus, 4, progress=False)
    assert two_steps.sweeps_done == one_step.sweeps_done == SWEEPS + 4
    _same_state(two_steps.state, one_step.state)
    _check_read_outs(one_step, corpus)

    one_step.save(tmp_path / "now.jtm")                                # saved again: today's format
    assert _raw_meta(tmp_path / "now.jtm")["format_version"] == jt.io.MODEL_FORMAT_VERSION
    again = jt.load(tmp_path / "now.jtm")
    _same_state(again.state, one_step.state)
    np.testing.assert_array_equal(again.doc_topic, one_step.doc_topic)


def test_an_old_sentence_lda_file_resumes_on_its_corpus_only():
    """Sentence-LDA files from before its fingerprint held the sentence boundaries (commit
    7ba1aed) resume on their corpus (resume refused them as "not the corpus the model was
    fitted on"); the same tokens cut into other sentences are still refused, by the recount
    of the saved sentence of every token."""
    path = FIXTURE_DIR / "slda_format_1.jtm"
    corpus = sentence_corpus()
    jt.load(path).resume(corpus, 0, progress=False)
    docs = [corpus.words(d) for d in range(corpus.num_docs)]
    resplit = jt.Corpus.from_token_lists([[doc[:1], doc[1:]] for doc in docs], sentences=True)
    assert resplit.vocab == corpus.vocab and resplit.num_sentences != corpus.num_sentences
    with pytest.raises(jt.JaxTopicsError, match="assignments"):
        jt.load(path).resume(resplit, 0, progress=False)


def test_a_dpmrm_file_without_its_label_names_is_one_format_error():
    """DP-MRM files of format 1 lack the label names (kept since commit b007890), which
    transform and perplexity match labels by: refused, naming the file and what is missing."""
    path = FIXTURE_DIR / "dpmrm_format_1_without_label_names.jtm"
    assert _raw_meta(path)["format_version"] == 1
    with pytest.raises(FormatError, match="needs metadata 'label_names'.*fit the model again") as e:
        jt.load(path)
    assert str(e.value).startswith(str(path))


def test_an_old_hdp_file_is_the_crf_kernel_and_a_new_one_direct_assignment(tmp_path):
    """HDP files written before the direct-assignment kernels hold a CRF state under the
    sampler names "parallel"/"sequential": they load (by their state's fields) as the CRF
    kernel "crf" and continue it; a file of today's default kernel loads as it."""
    from jaxtopics.models import hdp, hdp_direct
    file = next(f for f, entry in FIXTURES.items() if entry[0] == "hdp")
    old = jt.load(FIXTURE_DIR / file)
    assert _raw_meta(FIXTURE_DIR / file)["params"]["sampler"] == "parallel"
    assert old.params.sampler == "crf" and old._module is hdp and "table_count" in old.state._fields
    corpus = FIXTURES[file][2]()
    new = jt.HDP().fit(corpus, num_sweeps=3, seed=0, progress=False)
    new.save(tmp_path / "da.jtm")
    again = jt.load(tmp_path / "da.jtm")
    assert again.params.sampler == "parallel" and again._module is hdp_direct
    _same_state(again.state, new.state)
