"""The persistent compilation cache (jaxtopics.compile_cache): the command line keeps compiled
programs on disk by default, so a second identical command loads its sweeps instead of
compiling them; the setting moves it or turns it off; a folder that cannot be made is one line.

Each run is a fresh process (the cache is what survives between processes), without the test
suite's own cache (``JAX_COMPILATION_CACHE_DIR``, which a user's setting would also win over).
Hits and misses are JAX's own counters (``jax.monitoring`` events), not timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: runs the command line in-process (as `jaxtopics ...`) and prints JAX's cache events as JSON
_RUN = """
import collections, json, sys
import jax.monitoring
events = collections.Counter()
jax.monitoring.register_event_listener(lambda name, **kw: events.update([name]))
from jaxtopics.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "hits": events["/jax/compilation_cache/cache_hits"],
                  "misses": events["/jax/compilation_cache/cache_misses"]}))
"""


#: store every program, however fast it compiles (a small fit's compile a quiet CPU does in
#: less than the default 0.5 s is not stored; a user's setting of these wins over jaxtopics')
_STORE_ALL = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
              "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def _demo(tmp_path, *flags: str, env: dict | None = None) -> dict:
    """`jaxtopics fit` of a small text file in a fresh process: its status and cache events."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("JAX_COMPILATION_CACHE_DIR", "JAXTOPICS_COMPILE_CACHE")}
    environ.update(JAXTOPICS_CACHE=str(tmp_path / "home-cache"), **_STORE_ALL, **(env or {}))
    text = tmp_path / "docs.txt"
    text.write_text("".join(f"apple banana cherry w{d % 7} w{d % 5}\n" for d in range(30)))
    done = subprocess.run([sys.executable, "-c", _RUN, "fit", "--input", str(text),
                           "--out", str(tmp_path / "out"), "--num-topics", "3", "--sweeps", "4",
                           "--no-progress", "--devices", "1", *flags],
                          capture_output=True, text=True, env=environ, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"stderr": done.stderr}


def test_a_second_command_loads_what_the_first_compiled(tmp_path):
    first = _demo(tmp_path)
    folder = tmp_path / "home-cache" / "xla"             # the default: $JAXTOPICS_CACHE/xla
    stored = sorted(p.name for p in folder.iterdir())
    assert first["status"] == 0 and first["hits"] == 0 and first["misses"] > 0 and stored
    second = _demo(tmp_path)
    assert second["status"] == 0 and second["hits"] >= len(stored) and second["misses"] == 0
    assert sorted(p.name for p in folder.iterdir()) == stored


def test_the_setting_moves_the_cache_or_turns_it_off(tmp_path):
    moved = tmp_path / "elsewhere"
    _demo(tmp_path, "--compile-cache", str(moved))
    assert any(moved.iterdir()) and not (tmp_path / "home-cache" / "xla").exists()
    off = _demo(tmp_path, env={"JAXTOPICS_COMPILE_CACHE": "off"})
    assert off["hits"] == 0 and not (tmp_path / "home-cache" / "xla").exists()
    off = _demo(tmp_path, "--compile-cache", "off")
    assert off["hits"] == 0 and not (tmp_path / "home-cache" / "xla").exists()


def test_a_cache_folder_that_cannot_be_made_is_named(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    (tmp_path / "docs.txt").write_text("a b c\nb c d\n")
    done = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "fit", "--input",
                           str(tmp_path / "docs.txt"), "--out", str(tmp_path / "out"),
                           "--sweeps", "1", "--compile-cache", str(blocker / "xla")],
                          capture_output=True, text=True, env=environ, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "compilation cache" in done.stderr
    assert str(blocker / "xla") in done.stderr


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs Linux's /proc")
def test_a_cache_folder_that_cannot_be_written_is_named(tmp_path):
    """Review: an existing folder JAX cannot write in (here /proc, which even root cannot) gave
    one warning per program and exit status 0."""
    environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    (tmp_path / "docs.txt").write_text("a b c\nb c d\n")
    done = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "fit", "--input",
                           str(tmp_path / "docs.txt"), "--out", str(tmp_path / "out"),
                           "--sweeps", "1", "--compile-cache", "/proc"],
                          capture_output=True, text=True, env=environ, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "cannot write in the folder" in done.stderr


def test_python_users_turn_it_on_once(tmp_path):
    code = ("import sys, jaxtopics as jt\n"
            "print(jt.use_compilation_cache(sys.argv[1]))\n"
            "c = jt.Corpus.from_token_lists([['a', 'b', 'a'], ['b', 'c']])\n"
            "jt.LDA(num_topics=2).fit(c, num_sweeps=2, seed=0, progress=False)\n")
    environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "mine")],
                          env=environ | _STORE_ALL,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "mine") and any((tmp_path / "mine").iterdir())
