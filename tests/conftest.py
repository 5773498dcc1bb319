"""Shared fixtures: the project's real corpora in ../shared/data (skipped when absent)."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: The suite compiles thousands of small XLA:CPU programs and runs most for a few sweeps, so compiling
#: is most of its time. Two settings make that cheaper for the test processes and the CLI
#: subprocesses they start:
#: - XLA:CPU's older elemental emitters (``--xla_cpu_use_fusion_emitters=false``): ~40 % faster
#:   compiles (tests/test_estimators.py alone: 107 -> 64 s), sweeps ~5-10 % slower. Set only where
#:   this XLA knows the flag (it aborts on an unknown one).
#: - ``JAX_DISABLE_MOST_OPTIMIZATIONS=1`` (LLVM at -O0): tests/test_estimators.py 64 -> 48 s, but
#:   sweeps ~6x slower, and float32 reductions may round differently in the last bit. So the
#:   tests whose time is running sweeps rather than compiling them (the quality and enumeration
#:   tests, marked `slow`) take the `optimized` fixture below, which compiles at full
#:   optimisation again.
#: - A persistent compilation cache shared by the whole run: the pytest-xdist workers and every
#:   CLI or multi-process child a test starts compile many of the same programs (and each module
#:   drops its in-memory executables, below), so a program compiled once is read back from disk
#:   after. XLA's options and flags are part of the cache key, so the two optimisation levels
#:   never share an entry. The directory is a fresh temporary one, removed when the run ends.
#: A user's own settings of any of these are kept.
_FAST_COMPILE = "--xla_cpu_use_fusion_emitters=false"
_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"
_OWN_CACHE = "JAXTOPICS_TEST_OWN_CACHE"   # set where this run made the directory (to remove it)


def _with_fast_compile() -> None:
    os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_use_fusion_emitters" in flags:
        return                      # set already (by the user, or by pytest-xdist's controller)
    env = dict(os.environ, XLA_FLAGS=f"{flags} {_FAST_COMPILE}".strip())
    check = "import jax.numpy as jnp; jnp.zeros(1).block_until_ready()"
    probe = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, timeout=120)
    if probe.returncode == 0:
        os.environ["XLA_FLAGS"] = env["XLA_FLAGS"]


_with_fast_compile()


def _with_compilation_cache() -> None:
    if os.environ.get(_CACHE_ENV):
        return                      # the user's, or the one pytest-xdist's controller made
    os.environ[_CACHE_ENV] = os.environ[_OWN_CACHE] = tempfile.mkdtemp(prefix="jaxtopics-xla-")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


_with_compilation_cache()

#: A directory of results shared by the test processes of the run (tests/shared_results.py: the
#: chains several quality tests compare against, computed once per run instead of once per
#: pytest-xdist worker); made like the compilation cache's, and removed when the run ends.
RESULTS_ENV = "JAXTOPICS_TEST_RESULTS"
_OWN_RESULTS = "JAXTOPICS_TEST_OWN_RESULTS"


def _with_shared_results() -> None:
    if os.environ.get(RESULTS_ENV):
        return                      # the user's, or the one pytest-xdist's controller made
    made = tempfile.mkdtemp(prefix="jaxtopics-results-")
    os.environ[RESULTS_ENV] = os.environ[_OWN_RESULTS] = made


_with_shared_results()

import jax  # noqa: E402  (after XLA_FLAGS is final)
import pytest  # noqa: E402

# Four CPU devices for the sharded tests (tests/test_distributed.py). This must run before any
# computation starts the backend; unsharded code still runs on device 0 alone.
jax.config.update("jax_num_cpu_devices", 4)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    """Drop each module's compiled executables when it ends. Every XLA:CPU executable holds
    memory mappings; the whole suite in one process otherwise passes the kernel's
    vm.max_map_count (65530) and LLVM segfaults in the next compile."""
    yield
    jax.clear_caches()
    gc.collect()


@pytest.fixture
def optimized(monkeypatch):
    """Compile at XLA's full optimisation in this test and in the processes it starts: for the
    tests whose time is running sweeps, not compiling them (see the top of this file). The
    in-memory executables are dropped before and after, so that every program of the test is
    compiled at full optimisation and no other test reuses one: the two levels can differ in
    the last bit of a float32 reduction, and so can a chain that compares two of them (HDP's
    split-merge acceptance)."""
    before = jax.config.read("jax_disable_most_optimizations")
    monkeypatch.setenv("JAX_DISABLE_MOST_OPTIMIZATIONS", "0")
    jax.config.update("jax_disable_most_optimizations", False)
    jax.clear_caches()
    yield
    jax.config.update("jax_disable_most_optimizations", before)
    jax.clear_caches()


def pytest_collection_modifyitems(items):
    """Tests marked `slow` (long statistical runs: their time is sweeps) run `optimized`."""
    for item in items:
        if item.get_closest_marker("slow") is not None and "optimized" not in item.fixturenames:
            item.fixturenames.append("optimized")


SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI (``CI`` set, as ``.ci/run`` runs), a test skipped because the real corpora in
    ../shared/data are missing fails instead: CI always has them, so such a skip means a test
    that silently stopped testing. Locally (no ../shared) those tests skip."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and call.excinfo is not None:
        reason = str(call.excinfo.value)
        if "shared" in reason and ("not present" in reason or "not found" in reason
                                   or "not available" in reason):
            report.outcome = "failed"
            report.longrepr = f"real-data test skipped under CI: {reason} (is ../shared/data there?)"


@pytest.fixture(scope="session")
def reuters():
    from jaxtopics.datasets import load_shared

    if not (SHARED_DATA / "reuters" / "reuters.ldac").exists():
        pytest.skip("../shared/data/reuters not present")
    return load_shared("reuters", root=SHARED_DATA)


@pytest.fixture(scope="session")
def small_corpus():
    """A small synthetic corpus with planted topics (fast to fit)."""
    from jaxtopics.datasets import synthetic_lda

    return synthetic_lda(num_docs=60, num_words=80, num_topics=4, mean_doc_length=30, seed=1).corpus


def pytest_unconfigure(config):
    """The run's own compilation cache and shared results go when the run ends (in the process
    that made them: pytest-xdist's controller, or the one process of a run without workers)."""
    for env, own_env in ((_CACHE_ENV, _OWN_CACHE), (RESULTS_ENV, _OWN_RESULTS)):
        own = os.environ.get(own_env)
        if own and not os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(env) == own:
            shutil.rmtree(own, ignore_errors=True)
