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


def test_mixed_labels_are_accepted_by_every_constructor_as_from_jsonl_does(tmp_path) -> None:
    """Issue 35: from_texts(labels=["a", 1, ...]) said "labels must hold integers, got dtype
    <U21" while from_jsonl accepted the same labels; now every constructor gives them ids in
    first-seen order, as from_jsonl does."""
    import json

    texts = ["apple pear", "dog cat", "apple dog", "pear cat"]
    mixed = ["a", 1, "a", "1"]                               # the str "1" is not the int 1
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps({"text": t, "y": y}) + "\n" for t, y in zip(texts, mixed)))
    want = jt.Corpus.from_jsonl(p, label_key="y").labels.tolist()
    assert want == [0, 1, 0, 2]
    tokens = [t.split() for t in texts]
    base = jt.Corpus.from_token_lists(tokens)
    for labels in (mixed, tuple(mixed), np.array(mixed, dtype=object), iter(mixed)):
        made = [jt.Corpus.from_texts(texts, labels=labels if not hasattr(labels, "__next__")
                                     else iter(mixed)),
                jt.Corpus.from_token_lists(tokens, labels=list(mixed)),
                jt.Corpus.from_arrays(base.word_ids, base.doc_offsets, base.vocab, labels=labels
                                      if not hasattr(labels, "__next__") else iter(mixed)),
                jt.Corpus.from_bow([[(0, 1)]] * 4, vocab=["w"], labels=list(mixed))]
        for c in made:
            assert c.labels.dtype == np.int64 and c.labels.tolist() == want
    # integers alone keep their values; strings alone and numpy strings: first-seen ids
    assert jt.Corpus.from_texts(texts, labels=[5, 3, 5, 3.0]).labels.tolist() == [5, 3, 5, 3]
    assert jt.Corpus.from_texts(texts, labels=np.array(["x", "y", "x", "z"])).labels.tolist() \
        == [0, 1, 0, 2]


@pytest.mark.parametrize("labels,match", [
    (["a", None, "b", "a"], r"labels\[1\] = None: the label of document 1 must be an integer or a string"),
    ([True, False, True, True], r"labels\[0\] = True: .* integer or a string"),
    ([1.5, 2, 3, 4], r"labels\[0\] = 1.5: .* integer or a string"),
    (["a", float("nan"), "b", "c"], r"labels\[1\] = nan"),
    (["a", "b"], "labels has 2 entries for 4 documents"),
])
def test_bad_gold_labels_name_the_document(labels, match) -> None:
    with pytest.raises(CorpusError, match=match):
        jt.Corpus.from_texts(["apple pear", "dog cat", "apple dog", "pear cat"], labels=labels)


def test_a_2d_label_array_says_to_pass_a_list_of_label_lists() -> None:
    """Issue 35: label sets as a 2-D numpy array said only "labels must be 1-D"."""
    with pytest.raises(CorpusError, match=r"got shape \(3, 2\); for label sets .* pass a list of "
                                          r"label lists.*tolist\(\)"):
        jt.Corpus.from_token_lists(DOCS, labels=np.array([["a", "b"], ["b", "c"], ["a", "c"]]))
    with pytest.raises(CorpusError, match="list of label lists"):
        jt.Corpus.from_texts(["apple pear", "dog cat", "apple dog"], labels=np.zeros((3, 4), int))
    # what the message says to pass works
    c = jt.Corpus.from_token_lists(DOCS, labels=np.array([["a", "b"], ["b", "c"], ["a", "c"]]).tolist())
    assert c.label_sets == [("a", "b"), ("b", "c"), ("a", "c")]


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


def test_odd_labels_in_metrics_and_corpora():
    """Review: None labels raised a bare TypeError in clustering_scores; a generator of labels
    was refused as 'labels must be 1-D, got shape ()' though texts may be a generator."""
    with pytest.raises(ParameterError, match="labels of one kind .*NoneType, int"):
        jt.metrics.clustering_scores([None, None, 1], [1, 1, 0])
    texts = ["apple banana", "banana cherry", "cherry date"]
    assert jt.Corpus.from_texts(texts, labels=(x for x in [0, 1, 0])).labels.tolist() == [0, 1, 0]
    sets = jt.Corpus.from_texts(texts, labels=(s for s in [["a"], ["b"], ["a", "b"]]))
    assert sets.label_sets == [("a",), ("b",), ("a", "b")]


def test_label_names_are_nfc_normalised_like_words():
    import unicodedata
    nfd, nfc = unicodedata.normalize("NFD", "école"), unicodedata.normalize("NFC", "école")
    c = jt.Corpus.from_texts(["apple pie", "dog cat"], labels=[[nfd], [nfc]])
    assert c.label_names == (nfc,)
    with pytest.raises(jt.CorpusError, match="label_names entries 0 .* and 1 .* same name"):
        jt.Corpus.from_token_lists([["a"], ["b"]], labels=[[nfd], [nfc]], label_names=[nfd, nfc])


def test_jsonl_label_set_points_at_the_label_set_formats(tmp_path):
    (tmp_path / "m.jsonl").write_text('{"text": "apple banana", "labels": ["a", 1]}\n')
    with pytest.raises(jt.FormatError, match="labelled=True"):
        jt.Corpus.from_jsonl(tmp_path / "m.jsonl", label_key="labels")
