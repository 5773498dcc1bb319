"""The benchmarks in scripts/ refuse settings they cannot run (too few sweeps, too small a corpus)
with one message, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("script, args", [("bench_ptm.py", ["--sweeps", "1"]),
                                          ("bench_short_text.py", ["--ptm-sweeps", "1"]),
                                          ("dpmrm_planted.py", ["--sweeps", "10"]),
                                          ("dpmrm_planted.py", ["--docs", "2"]),
                                          ("hdp_exactness.py", ["--sweeps", "0"]),
                                          ("hdp_exactness.py", ["--engines", "sequential,foo"]),
                                          ("profile_sparse_draw.py", ["--ks", "5,-3"]),
                                          ("profile_sparse_draw.py", ["--ks", "abc"]),
                                          ("profile_sparse_draw.py", ["--repeats", "0"]),
                                          ("profile_sparse_draw.py", ["--draws", "foo"])])
def test_benchmark_scripts_refuse_too_few_sweeps(script, args):
    """Review: these ran on and crashed on an empty trace, a negative sweep count or a corpus
    too small for its labels."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / script
    r = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and " must be " in r.stderr and "Traceback" not in r.stderr
