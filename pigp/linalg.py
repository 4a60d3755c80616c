"""Jittered Cholesky factorisation with retries (NumPy/SciPy, float64), and a
Cholesky factorisation for small matrices inside XLA programs.

``CholeskyError`` is what a fit or a prediction raises when the joint
covariance cannot be factorised; it is importable as ``pigp.CholeskyError``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ._tensorflow import tf
from ._warnings import warn

__all__ = ["jittered_cholesky", "CholeskyError", "small_cholesky", "gaussian_nll"]


class CholeskyError(np.linalg.LinAlgError, ValueError):
    """The joint covariance could not be factorised even with the largest jitter."""


def jittered_cholesky(
    K: np.ndarray,
    block_sizes=None,
    block_names=None,
    tries: int = 6,
    start: float = 1e-10,
    growth: float = 100.0,
):
    """Lower Cholesky factor of ``K``, adding diagonal jitter if needed.

    The jitter of each retry is ``start * growth**i`` times the mean diagonal
    of each block (the f-f block's diagonal is often 100x the u-u block's), up
    to ``start * growth**(tries - 1)``. A retry warns once with the jitter used.

    Returns:
        ``(chol, jitter)``: the factor and the relative jitter that was needed
        (0 when none was).

    Raises:
        CholeskyError: naming the block with the largest diagonal and what to try.
    """
    K = np.asarray(K, dtype=np.float64)
    if not np.all(np.isfinite(K)):
        raise CholeskyError(
            "the joint covariance has non-finite entries; check the "
            "hyper-parameters (model.parameter_values()) and the inputs"
        )
    sizes = list(block_sizes) if block_sizes is not None else [len(K)]
    scale = np.concatenate(
        [
            np.full(n, np.mean(np.diag(K)[o : o + n]) if n else 0.0)
            for o, n in zip(np.cumsum([0] + sizes[:-1]), sizes)
        ]
    )
    jitter = 0.0
    for attempt in range(tries + 1):
        try:
            chol = scipy.linalg.cholesky(
                K + np.diag(jitter * scale), lower=True, check_finite=False
            )
            if attempt > 0:
                warn(
                    f"Cholesky of the joint covariance needed a relative jitter of "
                    f"{jitter:.1e} on each block's diagonal",
                )
            return chol, jitter
        except np.linalg.LinAlgError:
            jitter = start * growth**attempt
    names = (
        list(block_names) if block_names is not None else [f"block {i}" for i in range(len(sizes))]
    )
    means = {
        name: float(np.mean(np.diag(K)[o : o + n]))
        for name, o, n in zip(names, np.cumsum([0] + sizes[:-1]), sizes)
        if n
    }
    biggest = max(means, key=means.get)
    raise CholeskyError(
        f"the joint covariance is not positive definite even with a relative jitter of "
        f"{start * growth ** (tries - 1):.0e}. Mean diagonal per block: "
        + ", ".join(f"{k}={v:.3g}" for k, v in means.items())
        + f" (largest: {biggest}). Likely causes: noise collapsed to ~0 with duplicate or "
        "near-duplicate points, or lengthscales far larger than the point spacing. "
        "Fixes: remove duplicate points, raise the noise (noise_u / noise_f), or give "
        "smaller initial lengthscales."
    )


def small_cholesky(K: tf.Tensor) -> tf.Tensor:
    """Lower Cholesky factor of a small symmetric positive definite ``K`` (n, n),
    for XLA programs: one outer-product update of the whole matrix per column
    (NaN entries where ``K`` is not positive definite, as XLA's own factorisation
    gives).

    XLA's CPU Cholesky took about 0.18 ms on a 40 x 40 matrix here, this loop
    about 0.03 ms; it does ``n`` full-matrix updates, so it is for the fused
    training program of a few dozen values (``pigp.engines.dense.objective.FUSED_UP_TO``), not
    for hundreds."""
    n = K.shape[0]
    index = tf.range(n)

    def column(j, A, L):
        e = tf.cast(tf.equal(index, j), A.dtype)
        below = tf.cast(index >= j, A.dtype)
        c = A[:, j] * below / tf.sqrt(A[j, j])
        return j + 1, A - c[:, None] * c[None, :], L + c[:, None] * e[None, :]

    _, _, L = tf.while_loop(
        lambda j, *_: j < n, column, (tf.constant(0), K, tf.zeros_like(K)), maximum_iterations=n
    )
    return L


def gaussian_nll(y_dot_alpha, log_diag_chol, n):
    """``-log N(y | 0, K)`` from ``y' K^-1 y``, ``sum(log diag(chol K))`` and ``len(y)``
    (NumPy numbers or tensors alike)."""
    return 0.5 * y_dot_alpha + log_diag_chol + 0.5 * n * math.log(2.0 * math.pi)
