"""The exact one-sweep transition law of a blocked ("parallel") kernel on a tiny enumerable case,
and the test of sampled next states against it (DESIGN.md "How to test a sampler", point 3: the
blocked kernel's own law enumerated with 2-3 blocks).

A blocked sweep visits its blocks in order; the items of a block (tokens, sentences, documents)
all move at once, each drawn from its own law given the state at the block's start, and the
next block starts from the state those moves leave. So from a start state x, one sweep's law is

    P(x -> y) = sum over the block-by-block paths x = x_0 -> x_1 -> ... -> x_B = y of
                prod_b prod_{i in block b} law_i(x_{b-1})[x_b[i]],   x_b = x_{b-1} off block b

which ``sweep_row`` computes exactly (float64) for any per-item law. ``StateSpace.conditional``
is the usual one: the item's full conditional p(x_i = v | x_-i) of the collapsed joint, read off
an enumerated joint table (normalising the joint over the item's values: nothing of the model is
derived twice). A fully sequential scan is the same function with blocks of one item.

API: ``StateSpace(sizes, log_joint)``, ``strided(num_items, num_blocks, offset)``,
``sweep_row(space, start, blocks, law)``, ``counts_of(space, samples)``, ``goodness(counts,
probs, alpha)`` / ``assert_law`` / ``assert_rejected``.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Sequence

import numpy as np

from enumeration_stats import pooled_chisquare_p, tv, tv_bound

__all__ = ["StateSpace", "strided", "sweep_row", "counts_of", "goodness", "assert_law",
           "assert_rejected", "log_rising", "dirmult"]


def log_rising(x: float, n: int) -> float:
    """log x (x+1) ... (x+n-1), the rising factorial (a direct sum: no lgamma)."""
    return float(sum(math.log(x + j) for j in range(int(n))))


def dirmult(rows: np.ndarray, a: float) -> float:
    """log Dirichlet-multinomial evidence of count rows [G, C] with symmetric prior a (each
    row's cells in a fixed order): sum_g [sum_c log a^(n_gc) - log (C a)^(n_g)]."""
    rows = np.atleast_2d(np.asarray(rows, np.int64))
    c = rows.shape[1]
    return sum(sum(log_rising(a, x) for x in row) - log_rising(c * a, row.sum()) for row in rows)


class StateSpace:
    """Every state of items with ``sizes[i]`` values each (item 0 the most significant digit)
    and the log joint of each (``log_joint(state)`` -> float, evaluated once per state)."""

    def __init__(self, sizes: Sequence[int], log_joint: Callable[[np.ndarray], float]):
        self.sizes = tuple(int(s) for s in sizes)
        self.states = np.array(list(itertools.product(*[range(s) for s in self.sizes])), np.int64)
        self.lj = np.array([log_joint(s) for s in self.states], np.float64)

    def __len__(self) -> int:
        return len(self.states)

    def index(self, states: np.ndarray) -> np.ndarray:
        """Index of each state [..., n] in ``states``."""
        states = np.asarray(states, np.int64)
        return np.ravel_multi_index(tuple(np.moveaxis(states, -1, 0)), self.sizes)

    def conditional(self, state: np.ndarray, i: int) -> np.ndarray:
        """p(x_i = v | x_-i) for v = 0 .. sizes[i]-1, from the joint table."""
        options = np.repeat(np.asarray(state, np.int64)[None, :], self.sizes[i], axis=0)
        options[:, i] = np.arange(self.sizes[i])
        lj = self.lj[self.index(options)]
        w = np.exp(lj - lj.max())
        return w / w.sum()


def strided(num_items: int, num_blocks: int, offset: int = 0) -> list[list[int]]:
    """Items dealt round-robin into blocks (block b: b, b + B, b + 2B, ...), item ids shifted by
    `offset` (items of a later kind in one state vector, e.g. PTM's tokens after its documents);
    empty blocks dropped."""
    blocks = [[offset + i for i in range(b, num_items, num_blocks)] for b in range(num_blocks)]
    return [b for b in blocks if b]


Law = Callable[[np.ndarray, int], np.ndarray]


def sweep_row(space: StateSpace, start: np.ndarray, blocks: Sequence[Sequence[int]],
              law: Law | None = None) -> np.ndarray:
    """[len(space)] the law of the state after one blocked sweep from `start`: `blocks` in
    order, the items of a block drawn independently, item i from ``law(x, i)`` (a probability
    vector over its values) at the block's start state x. Default law: the full conditional.
    Blocks of one item each give a systematic-scan Gibbs sweep."""
    law = space.conditional if law is None else law
    dist = {tuple(int(v) for v in start): 1.0}
    for block in blocks:
        new: dict[tuple[int, ...], float] = {}
        for state, p in dist.items():
            x = np.asarray(state, np.int64)
            laws = [law(x, i) for i in block]
            support = [np.flatnonzero(q > 0) for q in laws]
            for values in itertools.product(*support):
                q = p
                y = list(state)
                for i, v, item_law in zip(block, values, laws):
                    q *= item_law[v]
                    y[i] = int(v)
                y = tuple(y)
                new[y] = new.get(y, 0.0) + q
        dist = new
    row = np.zeros(len(space))
    for state, p in dist.items():
        row[space.index(np.asarray(state))] += p
    return row


def counts_of(space: StateSpace, samples: np.ndarray) -> np.ndarray:
    """Histogram over the states of sampled states [n, items]."""
    return np.bincount(space.index(samples), minlength=len(space))


def goodness(counts: np.ndarray, probs: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(chi-square p-value, TV distance, TV bound at level alpha) of sampled `counts` against
    `probs`."""
    n = int(np.sum(counts))
    return (pooled_chisquare_p(counts, probs), tv(counts / n, probs), tv_bound(probs, n, alpha))


def assert_law(name: str, counts: np.ndarray, probs: np.ndarray, alpha: float) -> None:
    """The bar: chi-square p >= alpha and TV <= its bound at level alpha (so a sampler with law
    `probs` fails it with probability <= 2 alpha)."""
    p, dist, bound = goodness(counts, probs, alpha)
    print(f"{name}: chi-square p = {p:.3g}, TV = {dist:.4f} (bound {bound:.4f}), "
          f"{int(np.sum(counts))} draws, {int(np.sum(probs > 0))} reachable states")
    assert p >= alpha, (name, p)
    assert dist <= bound, (name, dist, bound)


def assert_rejected(name: str, counts: np.ndarray, wrong: np.ndarray, alpha: float) -> None:
    """Negative control: the same bar (``assert_law``) fails for samples against a wrong law."""
    p, dist, bound = goodness(counts, wrong, alpha)
    print(f"{name} (must be rejected): chi-square p = {p:.3g}, TV = {dist:.4f} (bound {bound:.4f})")
    assert p < alpha or dist > bound, (name, p, dist, bound)
