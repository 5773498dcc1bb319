"""Tests for jaxtopics.datasets: synthetic LDA, the stdlib corpus, shared-data loaders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from jaxtopics import datasets
from jaxtopics.corpus import ENGLISH_STOP_WORDS, Corpus
from jaxtopics.datasets import SyntheticCorpus, load_shared, stdlib_corpus, synthetic_lda
from jaxtopics.errors import ParameterError

# Family-wise false-alarm rate of each statistical test (Bonferroni-split over its comparisons).
FAMILY_ALPHA = 1e-3


# ------------------------------------------------------------------------------------------
# synthetic_lda


@pytest.fixture(scope="module")
def synth() -> SyntheticCorpus:
    return synthetic_lda(num_docs=400, num_words=300, num_topics=8, mean_doc_length=120, seed=3)


def test_synthetic_shapes_and_dtypes(synth: SyntheticCorpus) -> None:
    c = synth.corpus
    assert isinstance(c, Corpus)
    assert c.num_docs == 400 and c.num_words == 300
    assert synth.theta.shape == (400, 8) and synth.theta.dtype == np.float64
    assert synth.phi.shape == (8, 300) and synth.phi.dtype == np.float64
    assert synth.assignments.shape == (c.num_tokens,) and synth.assignments.dtype == np.int32
    assert c.word_ids.dtype == np.int32
    assert c.doc_lengths.min() >= 1
    assert c.vocab[0] == "w00000" and c.vocab[-1] == "w00299"
    np.testing.assert_allclose(synth.theta.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(synth.phi.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert (synth.theta >= 0).all() and (synth.phi >= 0).all()


def test_synthetic_counts_consistent_with_assignments(synth: SyntheticCorpus) -> None:
    c, z = synth.corpus, synth.assignments
    K, V = synth.phi.shape
    assert z.min() >= 0 and z.max() < K
    ndk = np.zeros((c.num_docs, K), dtype=np.int64)
    np.add.at(ndk, (c.doc_index, z), 1)
    nkw = np.zeros((K, V), dtype=np.int64)
    np.add.at(nkw, (z, c.word_ids), 1)
    np.testing.assert_array_equal(ndk.sum(axis=1), c.doc_lengths)
    np.testing.assert_array_equal(nkw.sum(axis=0), np.bincount(c.word_ids, minlength=V))
    assert nkw.sum() == c.num_tokens
    # every token's (topic, word) and (doc, topic) had positive probability
    assert (synth.phi[z, c.word_ids] > 0).all()
    assert (synth.theta[c.doc_index, z] > 0).all()


def test_synthetic_deterministic() -> None:
    a = synthetic_lda(50, 200, 5, 40, seed=11)
    b = synthetic_lda(50, 200, 5, 40, seed=11)
    c = synthetic_lda(50, 200, 5, 40, seed=12)
    for x, y in [
        (a.corpus.word_ids, b.corpus.word_ids),
        (a.corpus.doc_offsets, b.corpus.doc_offsets),
        (a.theta, b.theta),
        (a.phi, b.phi),
        (a.assignments, b.assignments),
    ]:
        np.testing.assert_array_equal(x, y)
    assert a.corpus.vocab == b.corpus.vocab
    assert not np.array_equal(a.phi, c.phi)
    assert not np.array_equal(a.theta, c.theta)
    assert a.corpus.num_tokens != c.corpus.num_tokens or not np.array_equal(
        a.corpus.word_ids, c.corpus.word_ids
    )


def _pearson_pvalue(observed: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit of counts to Cat(probs); cells expected < 5 are pooled."""
    n = observed.sum()
    expected = n * probs
    big = expected >= min_expected
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] < min_expected:  # too little mass to pool on its own: merge it into one cell
        obs[-2] += obs[-1]
        exp[-2] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    stat = ((obs - exp) ** 2 / exp).sum()
    return float(stats.chi2.sf(stat, df=len(obs) - 1))


def test_synthetic_words_follow_phi(synth: SyntheticCorpus) -> None:
    """Given z, each topic's words are iid Cat(phi_k): chi-square test per topic."""
    c, z = synth.corpus, synth.assignments
    K, V = synth.phi.shape
    nkw = np.zeros((K, V), dtype=np.int64)
    np.add.at(nkw, (z, c.word_ids), 1)
    pvalues = [_pearson_pvalue(nkw[k], synth.phi[k]) for k in range(K) if nkw[k].sum() >= 200]
    assert len(pvalues) >= K // 2
    assert min(pvalues) > FAMILY_ALPHA / len(pvalues)
    # and the empirical frequencies track phi closely (correlation near 1 for busy topics)
    k = int(np.argmax(nkw.sum(axis=1)))
    assert np.corrcoef(nkw[k] / nkw[k].sum(), synth.phi[k])[0, 1] > 0.9


def test_synthetic_topics_follow_theta(synth: SyntheticCorpus) -> None:
    """Topic totals: E = sum_d n_d theta_dk, Var = sum_d n_d theta_dk (1 - theta_dk)."""
    c, z = synth.corpus, synth.assignments
    K = synth.theta.shape[1]
    n = c.doc_lengths[:, None].astype(np.float64)
    mean = (n * synth.theta).sum(axis=0)
    sd = np.sqrt((n * synth.theta * (1 - synth.theta)).sum(axis=0))
    zscores = (np.bincount(z, minlength=K) - mean) / sd
    limit = stats.norm.isf(FAMILY_ALPHA / (2 * K))
    assert np.abs(zscores).max() < limit


def test_synthetic_doc_lengths_poisson() -> None:
    r = synthetic_lda(num_docs=2000, num_words=50, num_topics=3, mean_doc_length=30, seed=5)
    lengths = r.corpus.doc_lengths
    se = np.sqrt(30 / 2000)
    assert abs(lengths.mean() - 30) < stats.norm.isf(FAMILY_ALPHA / 2) * se
    r1 = synthetic_lda(num_docs=500, num_words=50, num_topics=3, mean_doc_length=0.5, seed=5)
    assert r1.corpus.doc_lengths.min() == 1


def test_synthetic_tiny_concentrations_are_finite() -> None:
    r = synthetic_lda(60, 400, 6, 20, alpha=1e-5, beta=1e-7, seed=2)
    for a in (r.theta, r.phi):
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert (a.max(axis=1) > 0).all()
    assert (r.phi[r.assignments, r.corpus.word_ids] > 0).all()


def test_synthetic_zipf_frequencies() -> None:
    """Low word ids (base ranks) carry far more mass than high ones; none with zipf 0.

    Noise-free expectation of the head/tail mass ratio below is ~75 for zipf_exponent=1 (it
    falls to ~20 with the default rank noise) and 1 for zipf_exponent=0; the bounds are loose
    sanity checks of that documented shape, not tight statistics.
    """

    def head_tail_ratio(exponent: float) -> float:
        m = synthetic_lda(100, 2000, 40, 20, zipf_exponent=exponent, seed=4).phi.mean(axis=0)
        return float(m[:100].mean() / m[1000:].mean())

    assert head_tail_ratio(1.0) > 5.0
    assert 0.5 < head_tail_ratio(0.0) < 2.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_docs": 0},
        {"num_words": -1},
        {"num_topics": 2.5},
        {"alpha": 0.0},
        {"beta": float("nan")},
        {"mean_doc_length": -3},
        {"zipf_exponent": -1.0},
        {"rank_noise": -0.1},
    ],
)
def test_synthetic_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(ParameterError):
        synthetic_lda(**kwargs)


# ------------------------------------------------------------------------------------------
# stdlib_corpus


@pytest.fixture(scope="module")
def stdlib_cache(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        cache = tmp_path_factory.mktemp("jaxtopics-cache")
        mp.setenv("JAXTOPICS_CACHE", str(cache))
        yield cache


@pytest.fixture(scope="module")
def stdlib(stdlib_cache: Path) -> Corpus:
    return stdlib_corpus()


def test_stdlib_corpus_contents(stdlib: Corpus) -> None:
    assert stdlib.num_docs >= 1000
    assert stdlib.doc_lengths.min() >= 20
    assert stdlib.doc_names is not None and len(stdlib.doc_names) == stdlib.num_docs
    assert any(n.startswith("pydoc:") for n in stdlib.doc_names)
    assert any(n.startswith("json.") for n in stdlib.doc_names)
    assert not any(n.startswith(("test.", "idlelib.", "lib2to3.")) for n in stdlib.doc_names)
    vocab = set(stdlib.vocab)
    assert not vocab & ENGLISH_STOP_WORDS
    assert not vocab & datasets._DOC_NOISE_WORDS
    assert all(len(w) >= 2 for w in vocab)
    assert {"file", "socket", "thread"} <= vocab
    # every word is used, and used in >= 1 document
    assert np.bincount(stdlib.word_ids, minlength=stdlib.num_words).min() >= 1


def test_stdlib_corpus_deterministic_and_cached(stdlib: Corpus, stdlib_cache: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    files = list(stdlib_cache.glob("stdlib-*.npz"))
    assert len(files) == 1
    # a fresh build gives identical arrays
    import sysconfig

    rebuilt = datasets._build_stdlib(Path(sysconfig.get_paths()["stdlib"]), 20)
    np.testing.assert_array_equal(rebuilt.word_ids, stdlib.word_ids)
    np.testing.assert_array_equal(rebuilt.doc_offsets, stdlib.doc_offsets)
    assert rebuilt.vocab == stdlib.vocab and rebuilt.doc_names == stdlib.doc_names

    # the second call reads the cache and does not rebuild
    def no_build(*args, **kwargs):
        raise AssertionError("rebuilt although a cache exists")

    monkeypatch.setattr(datasets, "_build_stdlib", no_build)
    cached = stdlib_corpus()
    np.testing.assert_array_equal(cached.word_ids, stdlib.word_ids)
    np.testing.assert_array_equal(cached.doc_offsets, stdlib.doc_offsets)
    assert cached.vocab == stdlib.vocab and cached.doc_names == stdlib.doc_names
    assert datasets.demo_corpus().num_tokens == stdlib.num_tokens


def test_stdlib_corrupt_cache_rebuilds(stdlib: Corpus, stdlib_cache: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (path,) = stdlib_cache.glob("stdlib-*.npz")
    path.write_bytes(b"not a zip file")
    calls = []

    def fake_build(*args, **kwargs):
        calls.append(args)
        return stdlib

    monkeypatch.setattr(datasets, "_build_stdlib", fake_build)
    again = stdlib_corpus()
    assert len(calls) == 1 and again.num_tokens == stdlib.num_tokens
    monkeypatch.setattr(datasets, "_build_stdlib", None)  # the rewritten cache is valid
    assert stdlib_corpus().num_tokens == stdlib.num_tokens
    assert not list(stdlib_cache.glob("*.tmp"))


def test_stdlib_max_docs(stdlib: Corpus) -> None:
    small = stdlib_corpus(max_docs=100)
    assert small.num_docs == 100
    assert small.doc_lengths.min() >= 20
    assert np.bincount(small.word_ids, minlength=small.num_words).min() >= 1
    assert set(small.vocab) <= set(stdlib.vocab)
    assert set(small.doc_names) <= set(stdlib.doc_names)
    # spread over the whole library, not just its first files
    assert small.doc_names[0] == stdlib.doc_names[0]
    assert small.doc_names[-1] == stdlib.doc_names[-1]
    with pytest.raises(ParameterError):
        stdlib_corpus(max_docs=0)


def test_strip_doctests() -> None:
    text = "Add numbers.\n\n>>> add(1, 2)\n3\n\nMore text."
    assert datasets._strip_doctests(text) == "Add numbers.\n\n\nMore text."


# ------------------------------------------------------------------------------------------
# load_shared


def _shared_root() -> Path | None:
    root = datasets._shared_root(None)
    return root if (root / "reuters" / "reuters.ldac").is_file() else None


@pytest.mark.skipif(_shared_root() is None, reason="shared data not available")
def test_load_shared_reuters() -> None:
    c = load_shared("reuters")
    assert c.num_docs == 395
    assert c.num_words > 1000


def test_load_shared_errors(tmp_path: Path) -> None:
    with pytest.raises(ParameterError):
        load_shared("nope")
    with pytest.raises(FileNotFoundError, match="reuters"):
        load_shared("reuters", root=tmp_path)


def test_synthetic_sizes_refuse_bools_and_beyond_int32():
    """#14 sibling: num_docs=True ran as 1 document; sizes beyond int32 are refused up front."""
    from jaxtopics.datasets import synthetic_lda
    from jaxtopics.errors import ParameterError

    for kw in ({"num_docs": True}, {"num_topics": True}, {"num_docs": 2**31}, {"alpha": True}):
        with pytest.raises(ParameterError):
            synthetic_lda(**{"num_docs": 5, "num_words": 10, "num_topics": 2, **kw})
