"""The ordering and sparsity pattern of a sparse inverse-Cholesky factor: points alone.

Measurements are points with a kind each: kind 0 is a point value (a Dirac, the
identity operator), other kinds are operators at that point (a derivative measurement).
The factor ``U`` (upper triangular, ``Theta^-1 ~ U U'``) is computed column by column
over an order and a pattern that depend on the points and kinds only, so one
``Pattern`` serves every kernel, every set of hyper-parameters and every Gauss-Newton
step of a problem (Schafer, Katzfuss & Owhadi, SIAM J. Sci. Comput. 43, 2021; Chen,
Owhadi & Schafer, Math. Comp. 94, 2025).

- **Order** (``maximin``): point values coarse to fine. Each is the point farthest from
  those before it, and ``l_i`` is that distance; the points of ``first`` (boundary
  values) come first, maximin among themselves, and the rest start their distances
  from them. Derivative measurements come after every point value, in the order of
  their points' values, each at the finest length ``l_min`` (the 10th percentile of
  the point values' lengths: ``order_measurements``) (the published rule of Chen,
  Owhadi & Schafer: a derivative measurement is a finer-scale measurement than
  any point value, so it belongs after them; placing it right after its own point
  value screens as well in their experiments, but gives the derivative measurement of
  a coarse point a large neighbourhood of derivative measurements nobody needs).
- **Pattern**: column ``i`` keeps the earlier measurements ``j`` with
  ``|x_j - x_i| <= rho l_i``, found with a KD-tree.
- **Supernodes**: neighbouring columns of one scale share one neighbour set, the union
  of theirs, and one Cholesky factorisation (``supernodes``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

__all__ = ["maximin", "Pattern", "pattern", "neighbours"]


def maximin(points: np.ndarray, first: np.ndarray | None = None) -> tuple:
    """The maximin (coarse-to-fine) order of ``points`` and each one's length.

    Args:
        points: array of shape (n, d).
        first: boolean mask of shape (n,): points ordered first, maximin among
            themselves; the others' distances start from them. None: none.

    Returns:
        ``(order, lengths)``: ``order`` an integer array of shape (n,) (indices into
        ``points``), ``lengths[k]`` the distance of ``points[order[k]]`` to the points
        before it (the first point's: the diameter of the set).
    """
    points = np.asarray(points, dtype=np.float64)
    n = len(points)
    if first is None or not first.any() or first.all():
        return _maximin(points, np.full(n, np.inf))
    first = np.asarray(first, dtype=bool)
    head = np.flatnonzero(first)
    tail = np.flatnonzero(~first)
    order_head, lengths_head = _maximin(points[head], np.full(len(head), np.inf))
    distance, _ = cKDTree(points[head]).query(points[tail])
    order_tail, lengths_tail = _maximin(points[tail], distance)
    return (
        np.concatenate([head[order_head], tail[order_tail]]),
        np.concatenate([lengths_head, lengths_tail]),
    )


def _maximin(points: np.ndarray, distance: np.ndarray) -> tuple:
    """Greedy farthest-point order, with lazy updates of the distances in a heap.

    ``distance`` holds each point's distance to what was selected before (inf: none).
    Selecting a point of length l lowers the distances only within l of it (every
    remaining distance is at most l), so a KD-tree ball query finds them.
    """
    n = len(points)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    tree = cKDTree(points)
    spread = float(np.max(np.ptp(points, axis=0))) if n > 1 else 1.0
    distance = distance.copy()
    distance[~np.isfinite(distance)] = np.inf
    heap = [(-d, i) for i, d in enumerate(distance)]
    heapq.heapify(heap)
    taken = np.zeros(n, dtype=bool)
    order = np.empty(n, dtype=np.int64)
    lengths = np.empty(n)
    k = 0
    while heap:
        d, i = heapq.heappop(heap)
        if taken[i] or -d != distance[i]:
            continue  # taken, or a stale entry
        taken[i] = True
        order[k] = i
        length = -d if np.isfinite(-d) else max(spread, np.finfo(float).tiny)
        lengths[k] = length
        k += 1
        near = np.asarray(tree.query_ball_point(points[i], length), dtype=np.int64)
        near = near[~taken[near]]
        if len(near):
            new = np.linalg.norm(points[near] - points[i], axis=1)
            lower = new < distance[near]
            for j, value in zip(near[lower], new[lower]):
                distance[j] = value
                heapq.heappush(heap, (-value, j))
    return order, lengths


@dataclass(frozen=True)
class Pattern:
    """The order of the measurements and each column's neighbour set.

    Attributes:
        order: array of shape (n,): measurement indices, coarse to fine (position k
            holds measurement ``order[k]``).
        lengths: array of shape (n,): ``l`` of each position.
        supernodes: list of ``(columns, rows)``: int32 arrays of positions; each
            column ``c`` of a supernode uses the rows ``r <= c`` of ``rows`` (sorted),
            its own position last.
        rho: the radius factor the pattern was made with.
    """

    order: np.ndarray
    lengths: np.ndarray
    supernodes: list
    rho: float

    @property
    def size(self) -> int:
        return len(self.order)


#: The percentile of the point values' lengths that derivative measurements take.
FINEST_PERCENTILE = 10


def order_measurements(points: np.ndarray, kinds: np.ndarray, first: np.ndarray | None) -> tuple:
    """``(order, lengths)`` of measurements: point values (kind 0) by ``maximin``, then
    the derivative measurements in their points' order at the finest length.

    A derivative measurement at a point with no point value there (data of ``f`` at
    their own points) is ordered by ``maximin`` among the point values, as one of them.
    """
    kinds = np.asarray(kinds)
    valued = {tuple(p) for p in points[kinds == 0]}
    follows = np.array([k != 0 and tuple(p) in valued for p, k in zip(points, kinds)], bool)
    values = np.flatnonzero(~follows)
    order_values, lengths_values = maximin(points[values], None if first is None else first[values])
    order_values = values[order_values]
    rest = np.flatnonzero(follows)
    if len(rest) == 0:
        return order_values, lengths_values
    rank = {tuple(points[i]): k for k, i in enumerate(order_values) if kinds[i] == 0}
    keys = np.array([rank[tuple(points[i])] for i in rest])
    rest = rest[np.lexsort((kinds[rest], keys))]
    # The finest length of the point values after the first set (the boundary's spacing
    # may be finer than the interior's, and would shrink every neighbourhood): their
    # 10th percentile, the spacing of a grid; the least of them is a pair of points
    # that happen to lie close (prediction points among data, random designs), and
    # would leave every derivative measurement next to nothing.
    tail = lengths_values if first is None else lengths_values[np.count_nonzero(first[values]) :]
    finest = float(np.percentile(tail if len(tail) else lengths_values, FINEST_PERCENTILE))
    return (
        np.concatenate([order_values, rest]),
        np.concatenate([lengths_values, np.full(len(rest), finest)]),
    )


def pattern(
    points: np.ndarray,
    kinds: np.ndarray,
    rho: float = 5.0,
    first: np.ndarray | None = None,
    supernode: float = 1.3,
) -> Pattern:
    """The ``Pattern`` of measurements at ``points`` (n, d) of ``kinds`` (n,).

    Args:
        rho: column ``i`` keeps earlier measurements within ``rho l_i``.
        first: boolean mask (n,) of the point values ordered first (boundary data).
        supernode: columns within ``(supernode - 1) rho l_i`` of a column ``i`` of the
            same scale (lengths within a factor ``supernode``) share its factorisation;
            1 makes every column its own.

    Returns:
        A ``Pattern``.
    """
    points = np.asarray(points, dtype=np.float64)
    order, lengths = order_measurements(points, kinds, first)
    return neighbours(points, order, lengths, rho, supernode)


def neighbours(
    points: np.ndarray, order: np.ndarray, lengths: np.ndarray, rho: float, supernode: float
) -> Pattern:
    """The neighbour sets and supernodes of measurements at ``points`` in ``order``."""
    ordered = points[order]
    tree = cKDTree(ordered)
    n = len(order)
    assigned = np.zeros(n, dtype=bool)
    supernodes = []
    reach = (supernode - 1.0) * rho
    for i in range(n):
        if assigned[i]:
            continue
        if reach > 0:
            near = np.asarray(tree.query_ball_point(ordered[i], reach * lengths[i]), dtype=np.int64)
            near = near[(near >= i) & ~assigned[near] & (lengths[near] * supernode >= lengths[i])]
            columns = np.unique(np.append(near, i))
        else:
            columns = np.array([i])
        assigned[columns] = True
        radius = float(
            np.max(rho * lengths[columns] + np.linalg.norm(ordered[columns] - ordered[i], axis=1))
        )
        rows = np.asarray(tree.query_ball_point(ordered[i], radius), dtype=np.int64)
        rows = np.unique(np.concatenate([rows[rows <= columns[-1]], columns]))
        # int32: half the pattern's memory (0.05 GB in int64 at 2*10^5 measurements).
        supernodes.append((columns.astype(np.int32), rows.astype(np.int32)))
    return Pattern(np.asarray(order), np.asarray(lengths), supernodes, float(rho))
