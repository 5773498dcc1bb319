"""What `jaxtopics fit` writes beside model.jtm for reading and plotting (issue 33):
doc_topics.csv always; trace.png and topics.png with matplotlib, unless --no-plots; without
matplotlib only the CSV, and a one-line note. Each file whole or not at all."""

from __future__ import annotations

import csv
import sys

import numpy as np
import pytest

import jaxtopics as jt
from cli_helpers import GROUPS, run_cli

TEXTS = [" ".join(GROUPS[d % 3][(d * j) % 8] for j in range(1, 7)) for d in range(12)]


def _docs(tmp_path):
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return src


def _fit(tmp_path, *extra: str, out: str = "o"):
    return run_cli("fit", "--input", str(_docs(tmp_path)), "--out", str(tmp_path / out),
                   "--num-topics", "3", "--sweeps", "10", "--eval-every", "5", "--no-progress",
                   "--devices", "1", *extra)


def _main(tmp_path, *extra: str) -> int:
    """The same fit in this process (``cli.main``: JAX loaded once for the tests)."""
    from jaxtopics.cli import main
    return main(["fit", "--input", str(_docs(tmp_path)), "--out", str(tmp_path / "o"),
                 "--num-topics", "3", "--sweeps", "4", "--no-progress", "--devices", "1", *extra])


def _doc_topics(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_fit_writes_doc_topics_and_pictures(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.image
    r = _fit(tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "o"
    assert "doc_topics.csv, trace.png, topics.png" in r.stdout and "note" not in r.stderr
    rows = _doc_topics(out / "doc_topics.csv")
    assert rows[0] == ["doc", "topic_0", "topic_1", "topic_2"] and len(rows) == 1 + len(TEXTS)
    theta = np.array([[float(x) for x in row[1:]] for row in rows[1:]])
    assert [row[0] for row in rows[1:]] == [str(d) for d in range(len(TEXTS))]
    np.testing.assert_allclose(theta, jt.load(out / "model.jtm").doc_topic, rtol=1e-6)
    for name in ("trace.png", "topics.png"):
        image = matplotlib.image.imread(out / name)
        assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300, name
        assert image[..., :3].std() > 0.05, name
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]   # no temporary left
    assert _main(tmp_path, "--no-plots") == 0        # the same --out: stale pictures go
    assert sorted(p.name for p in out.iterdir()) == ["doc_topics.csv", "model.jtm", "topics.txt",
                                                      "trace.csv"]


def test_doc_topics_of_a_dmm_on_json_lines(tmp_path):
    """A DMM's row is its cluster proportions, one column per cluster."""
    from jaxtopics.cli import main
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(f'{{"text": "{t}"}}\n' for t in TEXTS), encoding="utf-8")
    assert main(["fit", "--model", "dmm", "--num-clusters", "4", "--input", str(src), "--out",
                 str(tmp_path / "o"), "--sweeps", "4", "--no-progress", "--devices", "1",
                 "--no-plots"]) == 0
    rows = _doc_topics(tmp_path / "o" / "doc_topics.csv")
    assert rows[0] == ["doc"] + [f"topic_{k}" for k in range(4)] and len(rows) == 13
    assert not (tmp_path / "o" / "trace.png").exists()


def test_without_matplotlib_only_the_csv_and_a_note(tmp_path, capsys, monkeypatch):
    """matplotlib made unavailable (an import of it fails): the fit succeeds, writes
    doc_topics.csv and no pictures, and says so in one line naming the extra."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "o"
    out.mkdir()
    (out / "trace.png").write_bytes(b"an earlier fit's picture")
    status = _main(tmp_path)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    notes = [line for line in captured.err.splitlines() if "note" in line]
    assert len(notes) == 1 and 'pip install "jaxtopics[viz]"' in notes[0], captured.err
    assert sorted(p.name for p in out.iterdir()) == ["doc_topics.csv", "model.jtm", "topics.txt",
                                                      "trace.csv"]
    assert "trace.png" not in captured.out


def test_a_failed_picture_leaves_no_half_written_file(tmp_path, capsys, monkeypatch):
    """A picture whose drawing fails midway leaves neither it nor a temporary file."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    def broken(self, fname, **kwargs):
        with open(fname, "wb") as f:
            f.write(b"\x89PNG half")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Figure, "savefig", broken)
    out = tmp_path / "o"
    status = _main(tmp_path)
    err = capsys.readouterr().err
    assert status == 2 and "No space left on device" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["doc_topics.csv", "model.jtm", "topics.txt",
                                                      "trace.csv"]


def test_no_plots_is_a_per_process_option():
    from jaxtopics.cli import _PER_PROCESS_ARGS, build_parser
    args = build_parser().parse_args(["fit", "-i", "x", "-o", "y", "--no-plots"])
    assert args.no_plots and "no_plots" in _PER_PROCESS_ARGS
