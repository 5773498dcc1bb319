"""DP-MRM's read-outs over the active topics (``jaxtopics.models.dpmrm``): their order (by owner
label, then slot), the corrected theta and the label weights (the module docstring), phi and the
extras of ``estimate``, and the topic of every token (``assignments``)."""

from __future__ import annotations

import numpy as np

from .dpmrm import Params, State, _params_in_use

__all__ = ["estimate", "assignments"]


def _active_order(state: State) -> np.ndarray:
    """Active topic slots ordered by owner label, then slot."""
    mt = np.asarray(state.topic_tables)
    tl = np.asarray(state.topic_label)
    active = np.flatnonzero(mt > 0)
    return active[np.lexsort((active, tl[active]))]


def _label_weights(state: State, params: Params) -> tuple[np.ndarray, np.ndarray]:
    """(pi [D, C], n_dc [D, C]) over all topic slots: pi_jc = (m_jk + eta) / (m_j + |label(j)|
    eta) for c owned by a label k of document j (0 otherwise), and tokens of j on topic c."""
    size = np.asarray(state.table_size)[:-1].astype(np.float64)
    dish = np.asarray(state.dish)[:-1]
    mjr = np.asarray(state.doc_label_tables)[:-1].astype(np.float64)
    labels = np.asarray(state.doc_labels)[:-1]
    tl = np.asarray(state.topic_label)
    d, c = size.shape[0], tl.shape[0]
    mask = labels >= 0
    prior = np.where(mask, mjr + params.eta, 0.0) / (mjr.sum(1) + mask.sum(1) * params.eta)[:, None]
    pi = np.zeros((d, c))
    for r in range(labels.shape[1]):
        pi += prior[:, r:r + 1] * (labels[:, r:r + 1] == tl[None, :])
    ndc = np.zeros((d, c))
    np.add.at(ndc, (np.repeat(np.arange(d), dish.shape[1]), dish.reshape(-1)), size.reshape(-1))
    return pi, ndc


def _distributions(theta: np.ndarray) -> np.ndarray:
    """Rows of `theta` renormalised to sum to 1; a row with no mass on any active topic (a
    document none of whose labels owns a topic: all its corrected theta is new-topic mass) is
    uniform over the active topics."""
    total = theta.sum(1, keepdims=True)
    uniform = np.full_like(theta, 1.0 / max(theta.shape[1], 1))
    return np.where(total > 0, theta / np.where(total > 0, total, 1.0), uniform)


def estimate(state: State, params: Params) -> dict[str, np.ndarray]:
    """Point estimates over the K active topics (ordered by label, then slot); host-side numpy.

    theta [D, K]: the corrected theta (module docstring) over the active topics, each row
    renormalised over them (the new-topic mass left out; a document none of whose labels owns
    a topic has all its mass there, and a uniform row); doc_new_topic [D]: that left-out
    new-topic share, alpha sum_k pi_jk gamma / (m_k + gamma) / (n_j + alpha). phi [K, V] = (n_kw + beta) / (n_k + V
    beta). Extras: topic_label [K] (label id of each topic), topics_per_label [L],
    label_topic [L, K] = m_kl / (m_k + gamma) (posterior mean of label k's measure G_k on its
    topics; the rest of its row, gamma / (m_k + gamma), is label_new_topic [L]), doc_label [D, L]
    = (m_jk + eta) / (m_j + |label(j)| eta) (mixing weight of each label of each document),
    topic_sizes [K] (tokens), topic_tables [K] (tables), num_active_topics, and alpha, gamma:
    the concentrations in use (the current draws when sampled).
    """
    params = _params_in_use(state, params)
    a, b, g = params.alpha, params.beta, params.gamma
    order = _active_order(state)
    mt = np.asarray(state.topic_tables).astype(np.float64)
    ml = np.asarray(state.label_tables).astype(np.float64)
    tl = np.asarray(state.topic_label)
    nt = np.asarray(state.topic).astype(np.float64)
    wt = np.asarray(state.word_topic)
    v, num_labels = wt.shape[0], ml.shape[0]
    pi, ndc = _label_weights(state, params)
    share = np.where(mt > 0, mt / (ml[tl] + g), 0.0)                                   # [C]
    theta = _distributions((ndc + a * pi * share[None, :])[:, order])
    phi = (wt[:, order].T + b) / (nt[order][:, None] + v * b)
    k = order.shape[0]
    label_topic = np.zeros((num_labels, k))
    label_topic[tl[order], np.arange(k)] = share[order]
    labels = np.asarray(state.doc_labels)[:-1]
    mjr = np.asarray(state.doc_label_tables)[:-1].astype(np.float64)
    mask = labels >= 0
    prior = np.where(mask, mjr + params.eta, 0.0) / (mjr.sum(1) + mask.sum(1) * params.eta)[:, None]
    doc_label = np.zeros((labels.shape[0], num_labels))
    rows, cols = np.nonzero(mask)
    doc_label[rows, labels[rows, cols]] = prior[rows, cols]
    new_mass = a * np.sum(np.where(mask, prior * g / (ml[np.where(mask, labels, 0)] + g), 0.0), 1)
    doc_new_topic = new_mass / (ndc.sum(1) + a)
    return {
        "theta": theta.astype(np.float32), "phi": phi.astype(np.float32),
        "topic_label": tl[order].astype(np.int32),
        "topics_per_label": np.bincount(tl[order], minlength=num_labels).astype(np.int32),
        "label_topic": label_topic.astype(np.float32),
        "label_new_topic": (g / (ml + g)).astype(np.float32),
        "doc_label": doc_label.astype(np.float32),
        "doc_new_topic": doc_new_topic.astype(np.float32),
        "topic_sizes": nt[order].astype(np.int32), "topic_tables": mt[order].astype(np.int32),
        "num_active_topics": np.int32(k), "alpha": np.asarray(a), "gamma": np.asarray(g),
    }



def assignments(state: State) -> np.ndarray:
    """Topic of every token [N] (int32), as an index into the active topics of ``estimate``."""
    order = _active_order(state)
    rank = np.zeros(np.asarray(state.topic).shape[0], np.int32)
    rank[order] = np.arange(order.shape[0], dtype=np.int32)
    slot = np.asarray(state.dish)[np.asarray(state.token_doc), np.asarray(state.table)]
    return rank[slot]
