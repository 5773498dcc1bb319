"""Multi-label corpora: per-document label sets (CSR offsets + ids + label_names), the
TopicModel4J labelled text format ``label1--label2<TAB>text``, and their validation."""

from __future__ import annotations

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import CorpusError, FormatError, ParameterError
from jaxtopics.io import read_labelled_text_lines

DOCS = [["apple", "pear"], ["dog", "cat", "dog"], ["apple", "dog"]]


def test_label_sets_from_lists_of_strings() -> None:
    c = jt.Corpus.from_token_lists(DOCS, labels=[["fruit"], ["animal", "pet"], ["fruit", "animal"]])
    assert c.labels is None                                    # gold clusters stay separate
    assert c.label_names == ("fruit", "animal", "pet")         # first-seen order
    np.testing.assert_array_equal(c.label_offsets, [0, 1, 3, 5])
    np.testing.assert_array_equal(c.label_ids, [0, 1, 2, 0, 1])
    assert c.label_offsets.dtype == np.int64 and c.label_ids.dtype == np.int32
    assert not c.label_ids.flags.writeable
    assert c.label_sets == [("fruit",), ("animal", "pet"), ("fruit", "animal")]
    assert c.label_set(1) == ("animal", "pet") and c.num_label_names == 3
    assert "label_sets over 3 labels" in repr(c)


def test_label_sets_single_labels_ints_repeats_and_fixed_names() -> None:
    # one label per document given as a bare string / int inside a list of sets
    c = jt.Corpus.from_token_lists(DOCS, labels=[["a"], "b", ["a", "a", "b"]])
    assert c.label_sets == [("a",), ("b",), ("a", "b")]        # a repeated label counts once
    ints = jt.Corpus.from_token_lists(DOCS, labels=[[3, 1], [1], [7]])
    assert ints.label_names == ("1", "3", "7")                 # int labels: ascending ids
    assert ints.label_sets == [("3", "1"), ("1",), ("7",)]
    fixed = jt.Corpus.from_token_lists(DOCS, labels=[["b"], ["a"], ["b", "a"]],
                                       label_names=("a", "b", "c"))
    np.testing.assert_array_equal(fixed.label_ids, [1, 0, 1, 0])
    assert fixed.label_names == ("a", "b", "c")                # an unused name is allowed here
    # from_texts passes them through; plain int labels are unchanged
    t = jt.Corpus.from_texts(["apple pear", "dog cat"], labels=[["x", "y"], ["y"]])
    assert t.label_sets == [("x", "y"), ("y",)]
    assert list(jt.Corpus.from_token_lists(DOCS, labels=[0, 1, 0]).labels) == [0, 1, 0]


def test_from_arrays_csr_and_subset_and_fingerprint() -> None:
    base = jt.Corpus.from_token_lists(DOCS)
    c = jt.Corpus.from_arrays(base.word_ids, base.doc_offsets, base.vocab,
                              labels=[["x"], ["y", "z"], ["z"]])
    same = jt.Corpus(base.word_ids, base.doc_offsets, base.vocab, label_offsets=[0, 1, 3, 4],
                     label_ids=[0, 1, 2, 2], label_names=("x", "y", "z"))
    assert c.label_sets == same.label_sets
    assert c.fingerprint() == same.fingerprint()
    assert c.fingerprint() != base.fingerprint()               # the label sets are part of it
    assert base.fingerprint() == jt.Corpus.from_token_lists(DOCS).fingerprint()
    sub = c.subset([2, 0])
    assert sub.label_sets == [("z",), ("x",)] and sub.label_names == c.label_names
    np.testing.assert_array_equal(sub.label_offsets, [0, 1, 2])


def test_labelled_text_file(tmp_path) -> None:
    p = tmp_path / "train.txt"
    p.write_text("sports--politics\tThe minister played football today\n"
                 "sports\tFootball match tonight\n"
                 " tech \tNew phones and laptops\n", encoding="utf-8")
    sets, texts = read_labelled_text_lines(p)
    assert sets == [["sports", "politics"], ["sports"], ["tech"]]
    assert texts[1] == "Football match tonight"
    c = jt.Corpus.from_text_file(p, labelled=True)
    assert c.label_sets == [("sports", "politics"), ("sports",), ("tech",)]
    assert c.num_docs == 3 and "football" in c.vocab and "sports" not in c.vocab
    test = tmp_path / "test.txt"
    test.write_text("tech\tlaptops\n", encoding="utf-8")
    held = jt.Corpus.from_text_file(test, labelled=True, label_names=c.label_names)
    np.testing.assert_array_equal(held.label_ids, [2])
    with pytest.raises(ParameterError, match="labels="):
        jt.Corpus.from_text_file(p, labelled=True, labels=[0, 1, 2])


@pytest.mark.parametrize("text,match,line", [
    ("a\tfine\nno tab here\n", "no tab", 2),
    ("\tno labels\n", "empty label set", 1),
    ("a----b\ttext\n", "empty label name", 1),
    ("a\tx\n\n", "no tab", 2),
])
def test_labelled_text_file_errors_name_the_line(tmp_path, text, match, line) -> None:
    p = tmp_path / "bad.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=match) as e:
        jt.Corpus.from_text_file(p, labelled=True)
    assert e.value.line == line and str(p) in str(e.value)


@pytest.mark.parametrize("labels,kwargs,match", [
    ([["a"], [], ["b"]], {}, "document 1 has an empty label set"),
    ([["a"], ["b"], [None]], {}, "document 2: a label must be"),
    ([["a"], ["b"], [" "]], {}, "document 2: empty label name"),
    ([["a"], ["b"], [1.5]], {}, "document 2: a label must be"),
    ([["a"], ["q"], ["b"]], {"label_names": ("a", "b")}, "document 1: label 'q' is not in"),
])
def test_bad_label_sets(labels, kwargs, match) -> None:
    with pytest.raises(CorpusError, match=match):
        jt.Corpus.from_token_lists(DOCS, labels=labels, **kwargs)


@pytest.mark.parametrize("fields,match", [
    (dict(label_offsets=[0, 1, 1, 2], label_ids=[0, 1]), "document 1 has an empty label set"),
    (dict(label_offsets=[0, 1, 2], label_ids=[0, 1]), "3 documents"),
    (dict(label_offsets=[0, 1, 2, 3], label_ids=[0, 1, 2], label_names=("a", "b")),
     "label id 2 of document 2"),
    (dict(label_offsets=[0, 1, 3, 4], label_ids=[0, 1, 1, 0]), "document 1 repeats label"),
    (dict(label_offsets=[0, 1, 2, 3]), "together"),
    (dict(label_names=("a",)), "without label sets"),
    (dict(label_offsets=[0, 1, 2, 3], label_ids=[0, 1, 0], label_names=("a", "a")), "twice"),
])
def test_bad_label_set_arrays(fields, match) -> None:
    base = jt.Corpus.from_token_lists(DOCS)
    with pytest.raises(CorpusError, match=match):
        jt.Corpus(base.word_ids, base.doc_offsets, base.vocab, **fields)
