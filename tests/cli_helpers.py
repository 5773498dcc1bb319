"""Helpers of the command-line tests that run `jaxtopics` in a subprocess as a user would."""

from __future__ import annotations

import subprocess
import sys

#: three groups of words that make well-separated topics for tiny corpora
GROUPS = ("apple pear fruit juice banana orange mango lemon".split(),
          "cat dog mouse horse cow sheep goat rabbit".split(),
          "river lake ocean water rain cloud storm wave".split())


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m jaxtopics.cli ARGS`, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(r: subprocess.CompletedProcess, *needles: str, quiet: bool = False) -> None:
    """Status 2 and one `jaxtopics: error:` line holding every needle, no traceback (and with
    `quiet`, nothing on standard output)."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("jaxtopics: error: "), r.stderr
    if quiet:
        assert r.stdout == "", r.stdout
    for n in needles:
        assert n in r.stderr, r.stderr
