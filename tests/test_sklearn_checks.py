"""scikit-learn's estimator checks on jaxtopics.sklearn's LDA and DMM (issue 33), with the
checks ``jaxtopics.sklearn.expected_failed_checks`` lists as expected failures. They run with
``random_state=0`` (with None scikit-learn skips the checks that compare fits: the estimators'
``non_deterministic`` tag), ``counts="round"`` (the checks feed non-integral floats) and the
sequential sampler with few sweeps (each check's shapes compile new programs: fewest there)."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from jaxtopics.sklearn import DMM, LDA, expected_failed_checks  # noqa: E402

SMALL = dict(max_iter=3, transform_sweeps=3, random_state=0, counts="round", sampler="sequential")


@parametrize_with_checks([LDA(n_components=2, **SMALL), DMM(n_clusters=3, **SMALL)],
                         expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
