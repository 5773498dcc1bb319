"""`jaxtopics infer` and `jaxtopics evaluate`: new documents under a saved model, run in a
subprocess as a user would."""

from __future__ import annotations

import csv
import random
import re
import warnings

import numpy as np
import pytest

import jaxtopics as jt
from cli_helpers import GROUPS, assert_one_line_error, run_cli

def _texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        main, other = rng.choice(GROUPS), rng.choice(GROUPS)
        out.append(" ".join(rng.choice(main if rng.random() < 0.8 else other)
                            for _ in range(rng.randint(6, 14))))
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A 3-topic LDA fitted (20 sweeps) on 60 texts, saved as the --out of a fit; and 8 held-out
    texts plus one with two unknown words."""
    root = tmp_path_factory.mktemp("cli_evaluate")
    rng = random.Random(0)
    model = jt.LDA(num_topics=3).fit(jt.Corpus.from_texts(_texts(rng, 60)), num_sweeps=20,
                                     progress=False)
    (root / "run").mkdir()
    model.save(root / "run" / "model.jtm")
    (root / "test.txt").write_text("\n".join(_texts(rng, 8) + ["zebra unicorn apple"]) + "\n",
                                   encoding="utf-8")
    return root


def test_infer_writes_one_row_of_proportions_per_document(run_dir):
    out = run_dir / "theta.csv"
    r = run_cli("infer", str(run_dir / "run"), "--input", str(run_dir / "test.txt"), "--out", str(out),
             "--sweeps", "20", "--seed", "2")
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "9 documents x 3 topic" in r.stdout
    assert r.stderr.startswith("jaxtopics: warning: UnknownWordsWarning") and "zebra" in r.stderr
    rows = list(csv.reader(out.read_text(encoding="utf-8").splitlines()))
    assert rows[0] == ["doc", "topic_0", "topic_1", "topic_2"]
    assert [int(row[0]) for row in rows[1:]] == list(range(9))
    theta = np.array([[float(x) for x in row[1:]] for row in rows[1:]])
    assert theta.shape == (9, 3) and (theta >= 0).all()
    np.testing.assert_allclose(theta.sum(1), 1.0, atol=1e-5)
    # the same numbers as FittedModel.transform of the same lines
    texts = (run_dir / "test.txt").read_text(encoding="utf-8").splitlines()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = jt.load(run_dir / "run" / "model.jtm").transform(texts, num_sweeps=20, seed=2)
    np.testing.assert_allclose(theta, want, rtol=1e-6, atol=1e-7)
    assert not list(run_dir.glob(".theta.csv.*"))          # no temporary file left behind


@pytest.mark.parametrize("extra, kwargs", [((), {}),
                                           (("--method", "completion", "--seed", "3"),
                                            {"method": "completion", "seed": 3})])
def test_evaluate_prints_the_perplexity_of_the_api(run_dir, extra, kwargs):
    model_file = run_dir / "run" / "model.jtm"
    r = run_cli("evaluate", str(model_file), "--held-out", str(run_dir / "test.txt"), *extra,
             *(("--coherence", "u_mass", "--top-words", "4") if not extra else ()))
    assert r.returncode == 0, r.stderr
    texts = (run_dir / "test.txt").read_text(encoding="utf-8").splitlines()
    model = jt.load(model_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model.perplexity(texts, **kwargs)
        ll = model.log_likelihood(texts, **kwargs)
    printed = float(re.search(r"^perplexity: (\S+)", r.stdout, re.M).group(1))
    assert printed == pytest.approx(want, rel=1e-6), r.stdout
    assert f"method: {kwargs.get('method', 'left_to_right')}" in r.stdout
    assert "log p(w_d | model), in nats" in r.stdout
    per_doc = float(re.search(r"per document: (\S+)", r.stdout).group(1))
    assert per_doc == pytest.approx(ll.mean(), abs=1e-4)
    per_token = float(re.search(r"per token: +(\S+)", r.stdout).group(1))
    assert np.exp(-per_token) == pytest.approx(want, rel=1e-5)
    if not extra:
        info = model.last_transform
        assert f"9 documents, {info.num_tokens} tokens of words the model knows" in r.stdout
        assert info.dropped_tokens == 2
        assert re.search(r"^coherence u_mass of the top 4 words .*held-out corpus.*: mean -?\d",
                         r.stdout, re.M), r.stdout


def test_bad_input_is_one_line(run_dir):
    model = str(run_dir / "run")
    unknown = run_dir / "unknown.txt"
    unknown.write_text("zebra unicorn\nthe and of\n", encoding="utf-8")
    empty = run_dir / "empty.txt"
    empty.write_text("", encoding="utf-8")
    held_out = str(run_dir / "test.txt")
    assert_one_line_error(run_cli("evaluate", model, "--held-out", str(unknown)),
                    "none of its 2 tokens is a word the model knows", "'zebra'")
    assert_one_line_error(run_cli("infer", model, "--input", str(unknown), "--out",
                         str(run_dir / "u.csv")), "--input", "is a word the model knows")
    assert not (run_dir / "u.csv").exists()
    assert_one_line_error(run_cli("evaluate", model, "--held-out", held_out, "--method", "exact"),
                    "--method exact", "left_to_right, completion")
    assert_one_line_error(run_cli("evaluate", model, "--held-out", str(empty)), "holds no documents")
    assert_one_line_error(run_cli("evaluate", str(run_dir / "missing.jtm"), "--held-out", held_out),
                    "missing.jtm", "no such file")
    assert_one_line_error(run_cli("infer", str(run_dir), "--input", held_out, "--out",
                         str(run_dir / "x.csv")), "a directory without a model.jtm")


def test_a_bad_path_is_named_with_its_flag(run_dir, tmp_path):
    model, held = str(run_dir / "run"), str(run_dir / "test.txt")
    assert_one_line_error(run_cli("infer", model, "--input", held, "--out",
                                  str(tmp_path / "missing" / "x.csv")),
                          "--out ", "x.csv: No such file or directory")
    assert_one_line_error(run_cli("evaluate", model, "--held-out", str(tmp_path / "none.txt")),
                          "--held-out ", "none.txt: No such file or directory")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    r = run_cli("evaluate", model, "--held-out", str(empty))
    assert_one_line_error(r, f"--held-out {empty}: ")
    assert r.stderr.count(str(empty)) == 1
    assert_one_line_error(run_cli("compare-k", "--input", held, "--ks", "2", "--seeds", "0",
                                  "--sweeps", "1", "--csv", str(tmp_path / "missing" / "k.csv")),
                          "--csv ", "k.csv: No such file or directory")


def test_completion_scores_documents_of_one_token(run_dir, tmp_path):
    """Nothing to fold in (every document has one token): theta is the prior mean, as for a
    one-token document batched with longer ones, and every token is scored."""
    one = tmp_path / "one.txt"
    one.write_text("apple\n", encoding="utf-8")
    r = run_cli("evaluate", str(run_dir / "run"), "--held-out", str(one), "--method", "completion")
    assert r.returncode == 0, r.stderr
    assert "1 scored tokens" in r.stdout or "/ 1 scored" in r.stdout
