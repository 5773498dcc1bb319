"""Regressions from the second outside review (README in hand): each test failed before its fix."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import CorpusError, FormatError, ParameterError
from jaxtopics.models import lda


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_uci_header_cannot_allocate_what_the_file_does_not_hold(tmp_path):
    (tmp_path / "dw.txt").write_text("2000000000\n3\n1\n1 1 1\n")
    (tmp_path / "v.txt").write_text("a\nb\nc\n")
    with pytest.raises(FormatError, match="header D = 2000000000"):
        jt.Corpus.from_uci(tmp_path / "dw.txt", tmp_path / "v.txt")


def test_old_mac_line_endings_separate_documents(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"hello world foo\rbar baz qux\r")
    assert jt.Corpus.from_text_file(tmp_path / "t.txt").num_docs == 2


def test_tokenizer_returning_a_non_iterable_is_a_corpus_error():
    with pytest.raises(CorpusError, match="document 0: tokenizer returned int"):
        jt.Corpus.from_texts(["aa bb"], tokenizer=lambda s: 5)


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


def test_checkpoint_every_needs_a_path():
    c = jt.Corpus.from_token_lists([["a", "b", "c"], ["b", "c", "d"]])
    with pytest.raises(ParameterError, match="checkpoint_every needs checkpoint_path"):
        jt.LDA(2).fit(c, num_sweeps=2, checkpoint_every=1)
    with pytest.raises(ParameterError, match="checkpoint_path needs checkpoint_every"):
        jt.LDA(2).fit(c, num_sweeps=2, checkpoint_path="never-written.jtm")


def test_trace_seconds_keep_counting_over_a_resume():
    c = jt.Corpus.from_token_lists([["a", "b", "c"], ["b", "c", "d"]])
    m = jt.LDA(2).fit(c, num_sweeps=4, eval_every=2)
    m.resume(c, num_sweeps=4, eval_every=2)
    clock = [p.seconds for p in m.trace]          # the trace column, not a timing of the test
    assert [p.sweep for p in m.trace] == [2, 4, 6, 8]
    assert all(b >= a for a, b in zip(clock, clock[1:]))


def test_functional_core_validates_params():
    c = jt.Corpus.from_token_lists([["a", "b", "c"], ["b", "c", "d"]])
    for bad in (lda.Params(num_topics=5, alpha=-1.0), lda.Params(num_topics=0),
                lda.Params(num_topics=2, sampler="bogus")):
        with pytest.raises(ParameterError):
            lda.prepare(c, bad)


def test_cli_refuses_what_it_would_ignore_or_crash_on(tmp_path, reuters):
    from pathlib import Path
    r = Path(__file__).resolve().parents[2] / "shared" / "data" / "reuters"
    base = ["fit", "--input", str(r / "reuters.ldac"), "--vocab", str(r / "reuters.tokens")]
    out = tmp_path / "r1"
    assert _cli(*base, "--out", str(out), "--sweeps", "2", "--no-progress").returncode == 0
    cases = [
        (["--out", str(out), "--resume", "--num-topics", "7"], "drop --num-topics"),
        (["--out", str(out), "--resume", "--seed", "3"], "drop --seed"),
        (["--out", "o", "--coordinator", "localhost:1", "--num-processes", "2", "--process-id", "5"],
         "--process-id must be in"),
        (["--out", "o", "--coordinator", "bogus", "--num-processes", "1", "--process-id", "0"],
         "HOST:PORT"),
        (["--out", "o", "--num-processes", "2", "--process-id", "1"], "need --coordinator"),
        (["--out", ""], "empty string"),
        (["--out", str(tmp_path / "never"), "--sweeps", "-1"], "--sweeps must be >= 0"),
    ]
    for extra, message in cases:
        res = _cli(*base, *extra)
        assert res.returncode == 2 and message in res.stderr, (extra, res.stderr[-500:])
        assert "Traceback" not in res.stderr
    assert not (tmp_path / "never").exists()              # refused before --out was created
    res = _cli("show", str(r / "reuters.ldac"))
    assert res.returncode == 2 and "not a jaxtopics model file" in res.stderr
    assert "pickle" not in res.stderr
    res = _cli("demo", "--model", "slda")
    assert res.returncode == 2 and "sentence boundaries" in res.stderr
    res = _cli(*base, "--out", str(out), "--resume", "--sweeps", "2", "--no-progress")
    assert res.returncode == 0 and "M tokens/s" not in res.stderr


def test_show_prints_words_with_lone_surrogates(tmp_path):
    c = jt.Corpus.from_token_lists([["a", "\ud800"], ["a", "b"]])
    jt.LDA(2).fit(c, num_sweeps=1).save(tmp_path / "sp.jtm")
    res = _cli("show", str(tmp_path / "sp.jtm"))
    assert res.returncode == 0, res.stderr


# --- second review: the new models ------------------------------------------------------------


def _labelled_corpus():
    docs = [["apple", "banana", "fruit"], ["car", "engine", "road"], ["apple", "fruit", "salad"],
            ["engine", "tire", "car"]] * 3
    labels = [["food"], ["cars"], ["food"], ["cars", "food"]] * 3
    return docs, jt.Corpus.from_token_lists(docs, labels=labels)


def test_dpmrm_matches_new_documents_labels_and_words_by_name(tmp_path):
    docs, train = _labelled_corpus()
    jt.DPMRM(initial_topics=1).fit(train, num_sweeps=3).save(tmp_path / "r.jtm")
    m = jt.load(tmp_path / "r.jtm")
    assert m.label_names == train.label_names
    # the same documents and labels, numbered differently: same perplexity and fold-in
    own = jt.Corpus.from_token_lists(docs[:4][::-1], labels=[["cars", "food"], ["food"], ["cars"],
                                                             ["food"]])
    same = jt.Corpus.from_token_lists(docs[:4][::-1], vocab=list(m.vocab), label_names=train.label_names,
                                      labels=[["cars", "food"], ["food"], ["cars"], ["food"]])
    assert own.label_names != same.label_names or own.vocab != same.vocab
    assert m.perplexity(own, seed=1) == pytest.approx(m.perplexity(same, seed=1), rel=1e-6)
    np.testing.assert_allclose(m.transform(own, seed=1), m.transform(same, seed=1), atol=1e-6)
    with pytest.raises(CorpusError, match="label 'zzz'"):
        m.transform(jt.Corpus.from_token_lists([["apple"]], labels=[["zzz"]]))
    for bad in ("x", 1.5):
        with pytest.raises(ParameterError):
            m.perplexity(same, seed=bad)
    with pytest.raises(CorpusError, match="one integer label per document"):
        jt.DPMRM().fit(jt.Corpus.from_token_lists(docs, labels=[0, 1] * 6), num_sweeps=1)


def test_ptm_refuses_strings_and_cli_refuses_labelled_for_other_models(tmp_path):
    with pytest.raises(ParameterError, match="alpha"):
        jt.PTM(alpha="1")
    (tmp_path / "lab.txt").write_text("a--b\tapple banana fruit\nb\tcar engine road\n")
    res = _cli("fit", "--model", "dmm", "--labelled", "--input", str(tmp_path / "lab.txt"),
               "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and "--labelled does not apply" in res.stderr


def test_summary_leaves_out_empty_clusters():
    c = jt.Corpus.from_token_lists([["a", "b"], ["c", "d"], ["a", "b", "b"]] * 3)
    text = jt.DMM(num_clusters=10).fit(c, num_sweeps=3).summary()
    assert "empty topics / clusters not shown" in text and text.count("\n  #") <= 3


# --- third outside review (HDP and DP-MRM, README only) ---------------------------------------

def test_hdp_fits_a_corpus_of_one_token():
    """A split-merge move needs two tokens; with one it crashed (ZeroDivisionError)."""
    m = jt.HDP().fit(jt.Corpus.from_texts(["apple"]), num_sweeps=2, progress=False)
    assert m.num_active_topics == 1 and m.topic_sizes.tolist() == [1]


def test_show_into_a_closed_pipe_exits_quietly(tmp_path):
    """`jaxtopics show ... | head`: the reader is gone before the summary is written."""
    c = jt.Corpus.from_token_lists([[f"w{i}" for i in range(30)]] * 4)
    jt.LDA(num_topics=3).fit(c, num_sweeps=1).save(tmp_path / "m.jtm")
    proc = subprocess.Popen([sys.executable, "-m", "jaxtopics.cli", "show", str(tmp_path / "m.jtm")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                         # closed before the child writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


def test_labels_of_the_wrong_length_or_as_strings():
    texts = ["apple banana", "banana cherry", "cherry date", "date egg"]
    with pytest.raises(CorpusError, match="labels has 2 label sets for 4 documents"):
        jt.Corpus.from_texts(texts, labels=[["a"], ["b"]])
    with pytest.raises(CorpusError, match="labels has 2 entries for 4 documents"):
        jt.Corpus.from_texts(texts, labels=["a", "b"])
    # names get ids in first-seen order, as from_jsonl gives them
    assert jt.Corpus.from_texts(texts, labels=["ab", "b", "b", "a"]).labels.tolist() == [0, 1, 1, 2]
    with pytest.raises(CorpusError, match=r"labels\[0\] = True: the label of document 0 must be "
                                          "an integer or a string"):
        jt.Corpus.from_texts(texts, labels=[True, False, True, False])


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


def test_cli_offers_every_model_its_sampler_settings(tmp_path):
    """Review: `--sentences` was accepted (and ignored) by models without sentences, `demo
    --max-docs 0` named the Python parameter, and DP-MRM's `initial_topics` (HDP's flag) and
    most models' `num_blocks` (DMM's flag) had no flag of their own."""
    lab = tmp_path / "lab.txt"
    lab.write_text("a--b\tapple banana fruit\nb\tcar engine road\na\tapple fruit juice\n")
    r = _cli("fit", "--model", "dpmrm", "--initial-topics", "2", "--num-blocks", "2", "--input",
             str(lab), "--out", str(tmp_path / "o"), "--sweeps", "0", "--no-progress")
    assert r.returncode == 0, r.stderr
    params = jt.load(tmp_path / "o" / "model.jtm").params
    assert (params.initial_topics, params.num_blocks) == (2, 2)
    docs = tmp_path / "docs.txt"
    docs.write_text("apple banana fruit\ncar engine road\n")
    for args, message in [
            (("fit", "--model", "dmm", "--sentences", "--input", str(docs)),
             "--sentences does not apply to --model dmm"),
            (("fit", "--model", "dmm", "--split-merge-steps", "3", "--input", str(docs)),
             "--split-merge-steps does not apply to --model dmm"),
            (("demo", "--max-docs", "0"), "--max-docs must be a positive integer, got 0")]:
        r = _cli(*args, "--out", str(tmp_path / "x"))
        assert r.returncode == 2 and f"jaxtopics: error: {message}" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_raw_texts_to_a_labelled_model_are_refused_before_any_warning(tmp_path):
    """Review: DP-MRM's transform of raw texts warned about their unknown words, then refused
    them for want of label sets; now only the refusal."""
    import warnings

    corpus = jt.Corpus.from_texts(["apple banana fruit", "car engine road", "apple fruit"],
                                  labels=[["a", "b"], ["b"], ["a"]])
    model = jt.DPMRM(initial_topics=2).fit(corpus, num_sweeps=1, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CorpusError, match="needs a label set on every document.*raw texts"):
            model.transform(["unknown words only", "apple"])


def test_a_vocabulary_word_no_model_file_could_hold_is_refused_by_every_reader():
    """Review: from_bow and from_ldac(vocab=list) took an empty word or one with a line break;
    the fit and save went through and jt.load then refused the file."""
    for vocab in (["x", "a\nb", "y"], ["x", "", "y"]):
        with pytest.raises(CorpusError, match="vocabulary word 1 .* empty or holds a line break"):
            jt.Corpus.from_bow([[(0, 1), (1, 1), (2, 1)]], vocab=vocab)


def test_top_word_ids_takes_ids_or_a_mask_and_nothing_else(small_corpus):
    """Review: a boolean mask was read as the ids 0 and 1, floats were truncated, and a scalar
    raised a bare TypeError."""
    m = jt.LDA(num_topics=3).fit(small_corpus, num_sweeps=1, progress=False)
    every = m.top_word_ids(2)
    np.testing.assert_array_equal(m.top_word_ids(2, topics=np.array([True, False, True])),
                                  every[[0, 2]])
    np.testing.assert_array_equal(m.top_word_ids(2, topics=range(2)), every[:2])
    assert m.top_word_ids(2, topics=[]).shape == (0, 2)
    for bad, message in (([0.0], "integer topic ids"), (1, "1-D sequence"), ([[0]], "1-D"),
                         ([True], "one entry per topic")):
        with pytest.raises(ParameterError, match=message):
            m.top_word_ids(2, topics=bad)


def test_an_ldac_line_that_repeats_a_word_is_refused(tmp_path):
    """Review: `2 0:1 0:3` (two distinct words declared, one word twice) became 4 tokens."""
    (tmp_path / "d.ldac").write_text("2 0:1 1:3\n2 1:1 0:3\n3 2:1 0:1 2:3\n")
    with pytest.raises(FormatError, match=r"d.ldac:3: word id 2 appears twice"):
        jt.Corpus.from_ldac(tmp_path / "d.ldac")
    (tmp_path / "e.ldac").write_text("2 0:1 1:3\n2 1:1 0:3\n")        # unsorted ids are fine
    assert jt.Corpus.from_ldac(tmp_path / "e.ldac").num_tokens == 8


def test_odd_labels_in_metrics_and_corpora():
    """Review: None labels raised a bare TypeError in clustering_scores; a generator of labels
    was refused as 'labels must be 1-D, got shape ()' though texts may be a generator."""
    with pytest.raises(ParameterError, match="labels of one kind .*NoneType, int"):
        jt.metrics.clustering_scores([None, None, 1], [1, 1, 0])
    texts = ["apple banana", "banana cherry", "cherry date"]
    assert jt.Corpus.from_texts(texts, labels=(x for x in [0, 1, 0])).labels.tolist() == [0, 1, 0]
    sets = jt.Corpus.from_texts(texts, labels=(s for s in [["a"], ["b"], ["a", "b"]]))
    assert sets.label_sets == [("a",), ("b",), ("a", "b")]


def test_warnings_point_at_the_callers_line_and_builtin_tokenizers_are_named():
    """Review: UnknownWordsWarning was reported at jaxtopics/fit.py (the x64 wrapper), and a
    model trained with tokenizer=str.split named it 'custom:?.str.split'."""
    texts = ["apple banana cherry", "cherry date egg", "apple egg banana"]
    m = jt.LDA(num_topics=2).fit(jt.Corpus.from_texts(texts), num_sweeps=1, progress=False)
    with pytest.warns(jt.UnknownWordsWarning) as caught:
        m.transform(["zebra apple"])
    assert caught[0].filename == __file__
    # a later review: DP-MRM's perplexity dropped unknown words without a word (transform warned)
    labelled = jt.Corpus.from_texts(texts, labels=[["a"], ["b"], ["a", "b"]])
    r = jt.DPMRM(topic_capacity=4).fit(labelled, num_sweeps=1, progress=False)
    held_out = jt.Corpus.from_texts(["zebra apple cherry"], labels=[["a"]], label_names=("a", "b"))
    with pytest.warns(jt.UnknownWordsWarning, match="perplexity: 1 of 3 tokens") as caught:
        r.perplexity(held_out, num_sweeps=2)
    assert caught[0].filename == __file__ and "the other 2 tokens" in str(caught[0].message)
    c = jt.Corpus.from_texts(["apple banana", "cherry date"], tokenizer=str.split)
    assert c.text_options.to_json()["tokenizer"] == "custom:builtins.str.split"


@pytest.mark.parametrize("script, args", [("bench_ptm.py", ["--sweeps", "1"]),
                                          ("bench_short_text.py", ["--ptm-sweeps", "1"]),
                                          ("dpmrm_planted.py", ["--sweeps", "10"]),
                                          ("dpmrm_planted.py", ["--docs", "2"])])
def test_benchmark_scripts_refuse_too_few_sweeps(script, args):
    """Review: these ran on and crashed on an empty trace, a negative sweep count or a corpus
    too small for its labels."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / script
    r = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and " must be " in r.stderr and "Traceback" not in r.stderr


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


def test_a_corpus_without_what_the_model_needs_is_refused_before_any_warning():
    """Re-check: a Corpus without label sets (DP-MRM) or sentences (SentenceLDA) warned about
    its unknown words first, then was refused."""
    import warnings

    texts = ["Apple banana cherry. Date egg.", "Cherry date. Egg fig apple.", "Apple fig. Banana."]
    slda = jt.SentenceLDA(num_topics=2).fit(jt.Corpus.from_texts(texts, sentences=True),
                                            num_sweeps=1, progress=False)
    labelled = jt.Corpus.from_texts(texts, labels=[["a"], ["b"], ["a", "b"]])
    dpmrm = jt.DPMRM(initial_topics=2).fit(labelled, num_sweeps=1, progress=False)
    flat = jt.Corpus.from_texts(["apple zebra quux"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CorpusError, match="needs sentence boundaries, and this Corpus has none"):
            slda.transform(flat)
        with pytest.raises(CorpusError, match="needs a label set .* none \\(labels missing\\)"):
            dpmrm.transform(flat)
    assert jt.metrics.clustering_scores((x for x in [0, 0, 1]), iter([1, 1, 0]))["nmi"] == 1.0
