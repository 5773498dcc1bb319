"""A fit whose arrays cannot fit in memory is refused before they are allocated (memory.py)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import memory
from jaxtopics.errors import ParameterError


@pytest.fixture
def tiny():
    return jt.Corpus.from_token_lists([["a", "b", "c"], ["d", "e", "f"], ["a", "f"]])


def _free(monkeypatch, *answers):
    """Make ``available_bytes`` answer `answers` in turn (the last one from then on)."""
    calls = []

    def available(device):
        calls.append(device)
        return answers[min(len(calls), len(answers)) - 1]
    monkeypatch.setattr(memory, "available_bytes", available)
    return calls


@pytest.mark.parametrize("model, table, hint", [
    (jt.LDA(num_topics=2_000_000_000), r"word_topic \[6, 2000000000\] int32 \(48\.0 GB\)",
     "lower num_topics=2000000000"),
    (jt.PTM(num_topics=2, num_pseudo_docs=2**31 - 1),
     r"pseudo_topic \[2147483647, 2\] int32 \(17\.2 GB\)", "lower num_pseudo_docs=2147483647\\)"),
    (jt.DMM(num_clusters=100_000_000), r"word_cluster \[6, 100000000\] int32 \(2\.4 GB\)",
     "lower num_clusters=100000000"),
])
def test_a_state_that_cannot_fit_is_refused_before_it_is_allocated(monkeypatch, tiny, model,
                                                                  table, hint):
    calls = _free(monkeypatch, 10**9)
    name = type(model).__name__
    with pytest.raises(ParameterError, match=rf"{name}'s state, with its initialisation and "
                       rf"read-outs, needs [\d.]+ GB of memory "
                       rf"and the host has 1\.0 GB free \(its largest tables: {table}.*{hint}"):
        model.fit(tiny, num_sweeps=1, progress=False)
    assert len(calls) == 1                       # refused at the first check, nothing compiled


def test_the_check_counts_the_initialisation_and_the_read_outs(monkeypatch, tiny):
    """Review: a state that fit alone ran out of memory in its op-by-op initialisation (the
    largest table twice) or in phi (beside the state, x2 op by op) after the sweeps had run."""
    needs = []
    monkeypatch.setattr(memory, "check_fits", lambda needed, *a, **k: needs.append(needed))
    jt.LDA(num_topics=1000).fit(tiny, num_sweeps=1, progress=False)
    v, d, n, k = 6, 3, 8, 1000
    state = 4 * (n + 1 + d * k + v * k + k + k + 1)        # z, the tables, alpha [K], beta
    readouts = 4 * (d * k + k * v + 2)        # theta [D, K], phi [K, V] float32, alpha, beta
    assert needs[0] == state + max(4 * v * k, 2 * readouts)


def test_replicated_tables_count_once_per_device(monkeypatch, tiny):
    """Review: with devices=2 every device holds its own copy of the global tables, so a state
    that fit one device failed inside ``place``. Now the sharded state is sized per device (one
    shard of the per-shard fields, every global table) before it is placed."""
    checks = []
    real = memory.check_fits

    def spy(needed, devs, what, state=None, *rest):
        checks.append((what, needed))
        return real(needed, devs, what, state, *rest)
    monkeypatch.setattr(memory, "check_fits", spy)
    _free(monkeypatch, 10**12)
    model = jt.DMM(num_clusters=1000, num_blocks=2).fit(tiny, num_sweeps=1, progress=False,
                                                         devices=2)
    placed = dict(checks)["the state on 2 devices"]
    v, k = 6, 1000
    assert placed > 4 * (v * k + k)               # at least word_cluster and cluster_docs
    _free(monkeypatch, 2 * placed - 1)              # two CPU devices share the host
    with pytest.raises(ParameterError, match=r"the state on 2 devices needs .* word_cluster "
                       r"\[6, 1000\] int32 .*lower num_clusters=1000\)"):
        model.resume(tiny, num_sweeps=1, progress=False, devices=2)
    assert model.sweeps_done == 1


@pytest.mark.parametrize("devices", [None, 2])
def test_a_chunk_that_cannot_fit_is_refused_before_it_runs(monkeypatch, tiny, devices):
    """XLA's count of a compiled chunk's temporaries and outputs against the free memory; on a
    CPU the shards' needs add up (they share the host)."""
    needs = []
    real = memory.check_fits

    def spy(needed, devs, what, state=None, *rest):
        needs.append((what, needed, len(list(devs))))
        return real(needed, devs, what, state, *rest)
    monkeypatch.setattr(memory, "check_fits", spy)
    _free(monkeypatch, 10**12)
    model = jt.DMM(num_clusters=50, num_blocks=2).fit(tiny, num_sweeps=2, progress=False,
                                                       devices=devices)
    what, chunk_need, shards = needs[-1]
    assert what == "a chunk of sweeps" and chunk_need > 0 and shards == (devices or 1)
    needs.clear()
    _free(monkeypatch, chunk_need * shards - 1)
    with pytest.raises(ParameterError, match=r"a chunk of sweeps needs .* and the host has .* "
                       r"free \(its largest tables: word_cluster \[6, 50\] int32 .*"
                       r"lower num_clusters=50\)"):
        model.resume(tiny, num_sweeps=2, progress=False, devices=devices)
    assert model.sweeps_done == 2                  # nothing ran
    _free(monkeypatch, chunk_need * shards)
    model.resume(tiny, num_sweeps=2, progress=False, devices=devices)
    assert model.sweeps_done == 4


def test_host_memory_is_the_least_of_the_kernel_cgroup_and_address_space(monkeypatch):
    cpu = jax.devices("cpu")[0]
    free = memory.available_bytes(cpu)
    with open("/proc/meminfo") as f:
        total = int(next(line.split()[1] for line in f if line.startswith("MemTotal:"))) * 1024
    assert 0 < free <= total
    resource = memory.resource
    vm = memory._stat_field("/proc/self/status", "VmSize:") * 1024
    monkeypatch.setattr(resource, "getrlimit", lambda which: (vm + 300 * 2**20, resource.RLIM_INFINITY))
    capped = memory.available_bytes(cpu)
    assert 250 * 2**20 < capped <= 300 * 2**20      # what ulimit -v leaves (VmSize moves a little)


def test_what_is_named():
    assert [memory.format_bytes(n) for n in (900, 1500, 2_400_000_000, 3 * 10**12)] == [
        "900 bytes", "1.5 kB", "2.4 GB", "3.0 TB"]
    state = jt.models.lda.State(z=np.zeros(10, np.int32), doc_topic=np.zeros((3, 7), np.int32),
                                word_topic=np.zeros((5, 7), np.int32), topic=np.zeros(7, np.int32),
                                alpha=np.zeros(7, np.float32), beta=np.zeros((), np.float32))
    assert memory.state_bytes(state) == 4 * (10 + 21 + 35 + 7 + 7 + 1)
    text = memory._largest(state, jt.LDA(num_topics=7).params)
    assert text == ("its largest tables: word_topic [5, 7] int32 (140 bytes); doc_topic [3, 7] "
                    "int32 (84 bytes); lower num_topics=7")


@pytest.mark.parametrize("model, message", [
    (lambda: jt.DMM(num_clusters=2**31), "num_clusters must be an integer <= 2147483647, got 2147483648"),
    (lambda: jt.DPMM(capacity=2**31), "capacity must be an integer <= 2147483647, got 2147483648"),
    (lambda: jt.HDP(initial_topics=2**20 + 1), "initial_topics must be an integer <= 1048576, got 1048577"),
])
def test_upper_limits_are_worded_alike(tiny, model, message):
    """Review: the limits read `< 2^31`, `<= 2**20` and `<= 2147483647` in different models."""
    with pytest.raises(ParameterError, match=message):
        model().fit(tiny, num_sweeps=1, progress=False)


def test_a_grown_state_is_checked_again(monkeypatch):
    """A nonparametric state that outgrows its capacity is a new program: its chunk is sized
    again before it runs (and a state that did not grow is not)."""
    whats = []
    real = memory.check_fits

    def spy(needed, devs, what, state=None, *rest):
        whats.append((what, None if state is None else state.cluster_docs.shape))
        return real(needed, devs, what, state, *rest)
    monkeypatch.setattr(memory, "check_fits", spy)
    docs = [[f"w{i}", f"w{i}x", f"w{i}y"] for i in range(40)]      # 40 unrelated documents
    model = jt.DPMM(alpha=50.0, beta=0.01, capacity=2, init_clusters=1).fit(
        jt.Corpus.from_token_lists(docs), num_sweeps=3, progress=False)
    chunks = [shape for what, shape in whats if what == "a chunk of sweeps"]
    assert len(chunks) >= 2 and len(set(chunks)) == len(chunks), whats
    assert model.state.cluster_docs.shape[0] > 2


def test_a_parameter_that_sizes_a_table_indirectly_is_named(monkeypatch):
    """Review: DP-MRM's capacity is several times ``initial_topics``, so no table axis equals
    the value the user gave; the parameter whose doubling resizes the tables is named."""
    _free(monkeypatch, 10**4)
    labelled = jt.Corpus.from_token_lists([["a", "b"], ["c", "d"], ["a", "d"]] * 700,
                                          labels=[["x"], ["y"], ["x", "y"]] * 700)
    with pytest.raises(ParameterError, match=r"its largest tables: word_topic \[4, \d+\] int32 "
                       r".*; lower initial_topics=2000\)"):      # 4000 topics for 4200 tokens
        jt.DPMRM(initial_topics=2000).fit(labelled, num_sweeps=1, progress=False)


def test_top_words_of_many_topics_are_read_without_a_python_object_per_word(tiny):
    """Review: the CLI's topics.txt of a DMM with 4M clusters built 40M (word, p) tuples (a
    MemoryError after the sweeps); ``top_word_ids`` gives the same words as an id array."""
    model = jt.DMM(num_clusters=5000).fit(tiny, num_sweeps=2, progress=False)
    ids = model.top_word_ids(3)
    assert ids.shape == (5000, 3) and ids.dtype.kind == "i"
    assert [[w for w, _ in t] for t in model.top_words(3)] == [[model.vocab[i] for i in r] for r in ids]
    assert (model.top_word_ids(3, [4999, 0]) == ids[[4999, 0]]).all()
    with pytest.raises(ParameterError, match=r"topics out of range \[0, 5000\): \[-1, 5000\]"):
        model.top_word_ids(3, [0, -1, 7, 5000])
    assert "empty topics / clusters not shown" in model.summary()


def test_lda_initialisation_holds_no_per_token_temporaries():
    """A random LDA start is drawn and counted a block at a time: by XLA's own account of the
    compiled program, its temporaries are a few block-sized arrays, not bytes per token (drawn
    all at once it held 36 bytes per token: the random bits and the scatters' index arrays)."""
    from jaxtopics.datasets import synthetic_lda
    from jaxtopics.models import lda

    corpus = synthetic_lda(num_docs=400, num_words=500, num_topics=5, mean_doc_length=100,
                           seed=0).corpus
    params = lda.Params(num_topics=5)
    data = lda.prepare(corpus, params)
    compiled = lda._init_random.lower(jax.random.PRNGKey(0), data, params).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    assert temp < 2 * corpus.num_tokens, temp / corpus.num_tokens
    state = lda.init(jax.random.PRNGKey(0), data, params)
    assert lda.check_state(jax.device_get(state), params) is None     # counts agree with z
    np.testing.assert_array_equal(np.bincount(np.asarray(state.z[:-1]), minlength=5),
                                  np.asarray(state.topic))
