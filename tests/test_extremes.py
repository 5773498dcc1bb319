"""Numerics at the extremes (issue 36): every model and every kernel it has, at K = 1 and
K = 2000 (where the model has a K), all its priors at 1e-6 and all at 1e3 (alpha, beta and
gamma / eta / lam where the model has them), a document of 100,000 tokens (for Sentence-LDA one
sentence of 100,000 tokens), many empty documents, a one-word vocabulary and a one-document
corpus.

Each fit (a few sweeps on a tiny corpus) must give a finite log joint and trace, read-outs that
are finite distributions (rows of ``topic_word`` and ``doc_topic`` sum to 1, every read-out
finite and no count negative) and a state its module accepts (``check_state``: latents in
range, counts non-negative): never NaN, inf, a negative count or an exception. Every case of
the matrix fits; settings past what float32 / int32 hold are refused when the estimator is
built, by a ParameterError naming the setting (Sentence-LDA's num_topics = 2**31 was accepted
and ended in an OverflowError inside jit: fixed). The matrix is summarised in
docs/correctness.md.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import ParameterError
from jaxtopics.estimators import MODELS

#: the kernels of each model (``sampler=``; LDA's MH moves are a kernel of their own)
KERNELS = {name: ["parallel", "sequential"] for name in MODELS}
KERNELS["lda"] += ["uncollapsed", "mh"]
#: the size a model has, if any
K_NAME = {"lda": "num_topics", "slda": "num_topics", "ptm": "num_topics", "dmm": "num_clusters"}
#: the priors of each model
PRIORS = {"lda": ("alpha", "beta"), "slda": ("alpha", "beta"), "ptm": ("alpha", "beta", "lam"),
          "dmm": ("alpha", "beta"), "dpmm": ("alpha", "beta"),
          "dpmrm": ("alpha", "beta", "gamma", "eta"), "hdp": ("alpha", "beta", "gamma")}
#: small settings (few blocks, one split-merge move), so that every fit stays fast; HDP starts
#: with room for every topic of the small corpus (a growth recompiles the sweeps; growth itself
#: is tested in tests/test_hdp*.py)
SETTINGS = {"lda": dict(num_topics=3, num_blocks=4), "slda": dict(num_topics=3, num_blocks=4),
            "ptm": dict(num_topics=3, num_pseudo_docs=2, num_blocks=4),
            "dmm": dict(num_clusters=3, num_blocks=4), "dpmm": dict(num_blocks=4),
            "dpmrm": dict(num_blocks=4),
            "hdp": dict(num_blocks=4, split_merge_steps=1, topic_capacity=64, table_capacity=16)}
LOW, HIGH = 1e-6, 1e3
#: (case, settings, corpus) of every model; the settings are a function of the model's priors
CASES = [("K=1", lambda m: {K_NAME[m]: 1}, "small"),
         ("K=2000", lambda m: {K_NAME[m]: 2000}, "small"),
         ("priors 1e-6", lambda m: {p: LOW for p in PRIORS[m]}, "small"),
         ("priors 1e3", lambda m: {p: HIGH for p in PRIORS[m]}, "small"),
         ("100,000-token document", lambda m: {}, "long"),
         ("many empty documents", lambda m: {}, "empty"),
         ("one-word vocabulary", lambda m: {}, "one_word"),
         ("one document", lambda m: {}, "one_doc")]
NUM_SWEEPS = 2


def _docs(kind: str) -> list[list[str]]:
    rng = np.random.default_rng(0)

    def draw(n: int, length: int, words: int = 12) -> list[list[str]]:
        return [[f"w{j}" for j in rng.integers(0, words, length)] for _ in range(n)]
    if kind == "small":
        return draw(6, 8)
    if kind == "long":                 # 100,000 tokens of 5 words, beside two short documents
        return draw(1, 100_000, 5) + draw(2, 6, 5)
    if kind == "empty":
        return [[]] * 40 + draw(3, 8) + [[]] * 20
    if kind == "one_word":
        return [["w"] * 5 for _ in range(4)]
    assert kind == "one_doc"
    return draw(1, 12)


def _corpus(model: str, kind: str) -> jt.Corpus:
    docs = _docs(kind)
    if model == "slda":                # sentences of 4 tokens; the long document is ONE sentence
        return jt.Corpus.from_token_lists(
            [[d] if len(d) > 1000 else [d[i:i + 4] for i in range(0, len(d), 4)] for d in docs],
            sentences=True)
    if model == "dpmrm":
        labels = [["a"], ["b"], ["a", "b"]]
        return jt.Corpus.from_token_lists(docs, labels=[labels[d % 3] for d in range(len(docs))])
    return jt.Corpus.from_token_lists(docs)


def _matrix():
    for model in sorted(MODELS):
        for kernel in KERNELS[model]:
            for case, settings, kind in CASES:
                if case.startswith("K=") and model not in K_NAME:
                    continue
                yield pytest.param(model, kernel, case, settings(model), kind,
                                   id=f"{model}-{kernel}-{case}")


def _estimator(model: str, kernel: str, settings: dict):
    sampler = {"mh": dict(sampler="parallel", mh_steps=2)}.get(kernel, dict(sampler=kernel))
    if model == "hdp" and kernel == "sequential":
        # HDP's split-merge move is one function after either kernel's table and dish steps: it
        # is tested with the parallel kernel, and compiling it costs ~2 s a fit
        sampler["split_merge_steps"] = 0
    return MODELS[model](**{**SETTINGS[model], **settings, **sampler})


def _check_distributions(name: str, values: np.ndarray) -> None:
    assert np.isfinite(values).all() and (values >= 0).all(), name
    if values.size:
        np.testing.assert_allclose(values.sum(-1), 1.0, atol=1e-3, err_msg=name)


@pytest.mark.parametrize("model, kernel, case, settings, kind", list(_matrix()))
def test_extreme_settings_fit_finitely(model, kernel, case, settings, kind):
    """Every case of the matrix fits (none is refused)."""
    corpus = _corpus(model, kind)
    fitted = _estimator(model, kernel, settings).fit(corpus, NUM_SWEEPS, seed=0, eval_every=1,
                                                     progress=False)
    assert [p.sweep for p in fitted.trace] == list(range(1, NUM_SWEEPS + 1))
    assert all(np.isfinite(p.log_joint_per_token) for p in fitted.trace), fitted.trace
    assert np.isfinite(fitted.log_joint_per_token())
    _check_distributions("topic_word", fitted.topic_word)
    _check_distributions("doc_topic", fitted.doc_topic)
    assert fitted.doc_topic.shape[0] == corpus.num_docs
    for name, value in fitted._estimates().items():          # every read-out, extras too
        value = np.asarray(value)
        if value.dtype.kind == "f":
            assert np.isfinite(value).all(), name
        else:
            assert (value >= 0).all(), name                  # sizes, labels, topic ids
    assignments = np.asarray(fitted.assignments)
    assert assignments.shape == (corpus.num_tokens,) and (assignments >= 0).all()
    assert fitted._module.check_state(jax.device_get(fitted._state), fitted.params) is None


@pytest.mark.parametrize("model", sorted(MODELS))
def test_settings_past_the_extremes_are_refused_by_name(model):
    """Past what float32 holds, a prior (0, NaN, inf, 1e39) or a size (K = 0, K > int32) is
    refused when the estimator is built: a ParameterError naming the setting, nothing else."""
    bad = [(prior, value) for prior in PRIORS[model]
           for value in (0.0, float("nan"), float("inf"), 1e39)]
    if model in K_NAME:
        bad += [(K_NAME[model], 0), (K_NAME[model], 2**31)]
    for name, value in bad:
        with pytest.raises(ParameterError, match=rf"\b{name}\b"):
            MODELS[model](**{**SETTINGS[model], name: value})
