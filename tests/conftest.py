"""Shared fixtures: the project's real corpora in ../shared/data (skipped when absent)."""

from __future__ import annotations

import gc
from pathlib import Path

import jax
import pytest

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


SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


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
