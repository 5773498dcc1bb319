"""Model files (``jt.load``, jaxtopics/model_files.py): what load refuses, what files of older
versions still give (parameters added later, version-1 corpus fingerprints), and the corpus
check of resume (a Sentence-LDA model's sentence boundaries)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import CorpusError, FormatError


def test_sentence_lda_resume_checks_sentence_boundaries(tmp_path):
    a = [[["cat", "dog", "mat"], ["stock"]], [["prices", "fell"], ["shares", "sold", "cat"]]] * 4
    b = [[["cat"], ["dog", "mat", "stock"]], [["prices", "fell", "shares"], ["sold", "cat"]]] * 4
    ca = jt.Corpus.from_token_lists(a, sentences=True)
    cb = jt.Corpus.from_token_lists(b, sentences=True)
    jt.SentenceLDA(5).fit(ca, num_sweeps=3, seed=3).save(tmp_path / "s.jtm")
    with pytest.raises(CorpusError, match="not the one the model was fitted on"):
        jt.load(tmp_path / "s.jtm").resume(cb, num_sweeps=0)
    jt.load(tmp_path / "s.jtm").resume(ca, num_sweeps=1)            # the same corpus still resumes
    # an LDA model does not depend on sentences: the same tokens with or without them resume
    flat = jt.Corpus.from_token_lists([sum(d, []) for d in a])
    m = jt.LDA(2).fit(ca, num_sweeps=2)
    m.resume(flat, num_sweeps=1)


def test_load_refuses_missing_parameters(tmp_path):
    path = tmp_path / "m.jtm"
    c = jt.Corpus.from_token_lists([["a", "b", "c"], ["b", "c", "d"]])
    jt.LDA(2, alpha=0.5).fit(c, num_sweeps=2).save(path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta_name = next(n for n in members if "meta" in n)
    arr = np.load(path)[meta_name[:-4]]
    meta = json.loads(str(arr[()]))
    del meta["params"]["alpha"]
    meta.pop("checksum")             # as a file of a version before checksums: checked in full
    meta["format_version"] = 2
    arrays = {k: v for k, v in np.load(path).items()}
    arrays[meta_name[:-4]] = np.asarray(json.dumps(meta))
    np.savez(tmp_path / "edited.npz", **arrays)
    with pytest.raises(FormatError, match="lacks 'alpha'"):
        jt.load(tmp_path / "edited.npz")
    del meta["params"]["sync_every"]                 # added later: older files may lack them
    del meta["params"]["exchange"]
    meta["params"]["alpha"] = 0.5
    arrays[meta_name[:-4]] = np.asarray(json.dumps(meta))
    np.savez(tmp_path / "older.npz", **arrays)
    older = jt.load(tmp_path / "older.npz").params     # with the settings those files ran with
    assert older.sync_every == 1 and older.exchange == "moves"


def test_model_files_with_version_1_fingerprints_still_resume(small_corpus, tmp_path):
    """Files written before version-2 fingerprints (the whole-array digest) resume as before; a
    different corpus is still refused, the message naming the process-layout case too."""
    model = jt.LDA(num_topics=3).fit(small_corpus, num_sweeps=2, progress=False)
    assert model.corpus_fingerprint == small_corpus.fingerprint(version=2)
    model.corpus_fingerprint = small_corpus.fingerprint()             # as an older file holds it
    model.save(tmp_path / "old.jtm")
    resumed = jt.load(tmp_path / "old.jtm").resume(small_corpus, 1, progress=False)
    assert resumed.sweeps_done == 3
    other = small_corpus.subset(np.arange(small_corpus.num_docs - 1))
    with pytest.raises(jt.CorpusError, match="not the one the model was fitted on.*processes"):
        jt.load(tmp_path / "old.jtm").resume(other, 1, progress=False)
