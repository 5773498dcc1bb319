"""jaxtopics.sklearn (issue 33): LDA as a transformer after a CountVectorizer, in a Pipeline
and GridSearchCV; DMM as a clusterer; TopicModel over the other models; odd inputs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
import scipy.sparse as sp  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.feature_extraction.text import CountVectorizer  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402

import jaxtopics as jt  # noqa: E402
from jaxtopics.sklearn import DMM, LDA, TopicModel  # noqa: E402

TEXTS = ["apple banana apple cherry fruit", "car engine wheel car road",
         "fruit banana cherry apple", "road wheel engine car tire"] * 6
X = np.array([[3, 2, 1, 0, 0, 0], [0, 0, 0, 2, 3, 1]] * 10)


def test_pipeline_after_count_vectorizer():
    pipe = Pipeline([("counts", CountVectorizer()),
                     ("lda", LDA(n_components=2, max_iter=40, random_state=0))])
    theta = pipe.fit_transform(TEXTS)
    assert theta.shape == (len(TEXTS), 2)
    np.testing.assert_allclose(theta.sum(1), 1, rtol=1e-6)
    assert theta[0].argmax() == theta[2].argmax() != theta[1].argmax() == theta[3].argmax()
    lda = pipe.named_steps["lda"]
    assert lda.components_.shape == (2, len(pipe.named_steps["counts"].vocabulary_))
    assert lda.n_features_in_ == lda.components_.shape[1]
    assert list(pipe.get_feature_names_out()) == ["lda0", "lda1"]
    new = pipe.transform(["cherry apple fruit", "tire road car"])
    assert new[0].argmax() == theta[0].argmax() and new[1].argmax() == theta[1].argmax()
    assert pipe.score(TEXTS[:4]) < 0
    assert 1 < lda.perplexity(pipe.named_steps["counts"].transform(TEXTS)) < 20
    assert lda.model_.vocab[:2] == ("w0", "w1")      # a matrix without names: column ids


def test_grid_search():
    pipe = Pipeline([("counts", CountVectorizer()), ("lda", LDA(max_iter=20, random_state=0))])
    search = GridSearchCV(pipe, {"lda__n_components": [2, 4]}, cv=2).fit(TEXTS)
    assert search.best_params_["lda__n_components"] in (2, 4)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_defaults_and_params():
    lda = LDA(n_components=4)
    assert lda.get_params()["doc_topic_prior"] is None
    est = lda.set_params(max_iter=5)._jaxtopics_estimator()
    assert est.params.alpha == 0.25 and est.params.beta == 0.25      # 1 / n_components
    assert clone(lda).get_params() == lda.get_params()
    one = LDA(2, max_iter=10, random_state=7).fit(X)
    two = LDA(2, max_iter=10, random_state=7).fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(one.components_, two.components_)
    same = jt.LDA(2, alpha=0.5, beta=0.5).fit(jt.Corpus.from_sparse(X), 10, seed=7)
    np.testing.assert_array_equal(one.model_.assignments, same.assignments)   # the same chain


def test_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=[f"word{i}" for i in range(6)])
    lda = LDA(2, max_iter=5, random_state=0).fit(frame)
    assert list(lda.feature_names_in_) == list(frame.columns)
    assert lda.model_.vocab == tuple(frame.columns)


def test_dmm_clusterer():
    dmm = DMM(n_clusters=5, max_iter=20, random_state=0)
    labels = dmm.fit_predict(X)
    assert labels.tolist() == dmm.labels_.tolist() and len(set(labels)) == 2
    assert (labels[::2] == labels[0]).all() and (labels[1::2] == labels[1]).all()
    np.testing.assert_array_equal(dmm.predict(X[:2]), labels[:2])
    proba = dmm.transform(X[:2])
    assert proba.shape == (2, 5)
    np.testing.assert_allclose(proba.sum(1), 1, rtol=1e-6)


@pytest.mark.parametrize("est", [jt.PTM(num_topics=2, num_pseudo_docs=4), jt.DPMM(), jt.HDP()],
                         ids=["ptm", "dpmm", "hdp"])
def test_topic_model(est):
    model = TopicModel(est, max_iter=15, random_state=0).fit(X)
    theta = model.transform(X[:4])
    assert theta.shape == (4, model.components_.shape[0])
    np.testing.assert_allclose(theta.sum(1), 1, rtol=1e-6)
    assert np.isfinite(model.score(X[:4]))


@pytest.mark.parametrize("est, match", [(jt.SentenceLDA(2), "sentence boundaries"),
                                        (jt.DPMRM(), "label set"), ("lda", "jaxtopics estimator")])
def test_topic_model_refuses(est, match):
    with pytest.raises(jt.ParameterError, match=match):
        TopicModel(est, max_iter=2).fit(X)


def test_odd_inputs():
    lda = LDA(2, max_iter=5, random_state=0)
    with pytest.raises(NotFittedError):
        lda.transform(X)
    with pytest.raises(jt.CorpusError, match="not an integer count"):
        lda.fit(X + 0.5)
    with pytest.raises(ValueError, match="Negative values"):
        lda.fit(-X)
    lda.fit(X.astype(float))                                        # 2.0 is a count of 2
    with pytest.raises(ValueError, match="features"):
        lda.transform(X[:, :4])                                     # a vocabulary mismatch
    zero_col = np.hstack([X, np.zeros((X.shape[0], 1), int)])
    fitted = LDA(2, max_iter=5, random_state=0).fit(sp.csc_matrix(zero_col))
    assert fitted.components_.shape == (2, 7)
    assert fitted.transform(np.zeros((2, 7))).tolist() == [[0.5, 0.5]] * 2   # no token: uniform
    single = LDA(2, max_iter=5, random_state=0).fit(X[:1])
    assert single.transform(X[:1]).shape == (1, 2)
    assert LDA(2, max_iter=5, counts="round", random_state=0).fit(X + 0.25).n_iter_ == 5


@pytest.mark.parametrize("est", [DMM(n_clusters=3, max_iter=5, random_state=0),
                                 TopicModel(jt.HDP(), max_iter=5, random_state=0)],
                         ids=["DMM", "HDP"])
def test_empty_row_uniform_beside_others(est):
    # a row without a token is the uniform row also when other rows have tokens (it was the
    # model's prior mix: DMM [0.498, 0.005, 0.498], HDP [0.54, 0.46])
    fitted = clone(est).fit(X)
    k = fitted.components_.shape[0]
    theta = fitted.transform(np.vstack([X[:2], np.zeros((1, X.shape[1]), int)]))
    assert theta[2].tolist() == [1.0 / k] * k
    np.testing.assert_allclose(theta.sum(1), 1, rtol=1e-6)
