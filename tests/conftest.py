"""Shared fixtures: the project's real corpora in ../shared/data (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest

# Four CPU devices for the sharded tests (tests/test_distributed.py). This must run before any
# computation starts the backend; unsharded code still runs on device 0 alone.
jax.config.update("jax_num_cpu_devices", 4)

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
