"""`jaxtopics compare-k`: jt.compare_num_topics on the command line, run in a subprocess as a
user would."""

from __future__ import annotations

import csv
import random

import pytest

import jaxtopics as jt
from cli_helpers import GROUPS, assert_one_line_error, run_cli

def _write_texts(path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        main = rng.choice(GROUPS)
        lines.append(" ".join(rng.choice(main if rng.random() < 0.8 else rng.choice(GROUPS))
                              for _ in range(rng.randint(6, 12))))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _csv_rows(path) -> list[list[str]]:
    return list(csv.reader(path.read_text(encoding="utf-8").splitlines()))


def test_compare_k_prints_the_table_and_writes_the_python_reports_numbers(tmp_path):
    docs, out = tmp_path / "docs.txt", tmp_path / "k.csv"
    _write_texts(docs, 40, seed=0)
    report = jt.compare_num_topics(jt.LDA, jt.Corpus.from_text_file(docs), [2, 3], seeds=(0,),
                                   num_sweeps=5, alpha=0.2)
    r = run_cli("compare-k", "--input", str(docs), "--ks", "2,3", "--seeds", "0", "--sweeps", "5",
             "--alpha", "0.2", "--csv", str(out))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert str(report) in r.stdout                    # the table, as print(report) shows it
    assert "left_to_right, 4 documents" in r.stdout and f"wrote {out}" in r.stdout
    rows = _csv_rows(out)
    assert rows[0] == ["k", "perplexity", "perplexity_sd", "coherence", "coherence_sd"]
    assert [int(row[0]) for row in rows[1:]] == [2, 3]
    for row, want in zip(rows[1:], report.rows):
        assert [float(x) for x in row[1:]] == [want.perplexity, want.perplexity_std,
                                               want.coherence, want.coherence_std]
    assert not list(tmp_path.glob(".k.csv.*"))        # written whole: no temporary file left


def test_compare_k_held_out_file_without_coherence(tmp_path):
    docs, held, out = tmp_path / "docs.txt", tmp_path / "held.txt", tmp_path / "k.csv"
    _write_texts(docs, 40, seed=0)
    _write_texts(held, 6, seed=1)
    r = run_cli("compare-k", "-i", str(docs), "--held-out", str(held), "--ks", "2", "--seeds", "0",
             "--sweeps", "5", "--coherence", "none", "--method", "completion", "--csv", str(out))
    assert r.returncode == 0, r.stderr
    assert "completion, 6 documents" in r.stdout and "coherence" not in r.stdout.split("\n\n")[1]
    rows = _csv_rows(out)
    assert rows[0] == ["k", "perplexity", "perplexity_sd", "coherence", "coherence_sd"]
    assert len(rows) == 2 and rows[1][0] == "2" and float(rows[1][1]) > 1
    assert rows[1][3:] == ["", ""]                     # no coherence: blank, not "nan"


@pytest.mark.parametrize("args, needles", [
    ((), ["the following arguments are required: --ks"]),
    (("--ks", "0"), ["argument --ks", "'0'"]),
    (("--ks", "2,x"), ["argument --ks", "'2,x'"]),
    (("--ks", "2", "--seeds", "1,x"), ["argument --seeds"]),
    (("--ks", "2", "--model", "hdp"), ["--model hdp infers its K", "lda"]),
    (("--ks", "2", "--model", "dpmrm"), ["--model dpmrm infers its K"]),
    (("--ks", "2", "--held-out-fraction", "1.5"), ["--held-out-fraction must be in (0, 1)"]),
    (("--ks", "2", "--lam", "0.5"), ["--lam does not apply to --model lda"]),
])
def test_bad_input_is_one_line_with_status_2(tmp_path, args, needles):
    docs = tmp_path / "docs.txt"
    _write_texts(docs, 10, seed=0)
    assert_one_line_error(run_cli("compare-k", "--input", str(docs), *args), *needles, quiet=True)
