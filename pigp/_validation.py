"""Checks for user input: every failure is a ValueError naming the argument."""

from __future__ import annotations

import numpy as np

__all__ = ["as_inputs", "as_targets", "as_dtype"]


def _as_array(name: str, value) -> np.ndarray:
    if value is None:
        raise ValueError(f"{name}: expected an array, got None")
    try:
        array = np.asarray(value)
    except Exception:  # ragged lists and other objects NumPy refuses
        raise ValueError(f"{name}: expected a numeric array, got {type(value).__name__}") from None
    if array.dtype == object or not np.issubdtype(array.dtype, np.number):
        # Booleans are refused too: True/False are no coordinates or measurements.
        raise ValueError(f"{name}: expected a numeric array, got dtype {array.dtype}")
    if np.iscomplexobj(array):
        raise ValueError(f"{name}: expected real numbers, got dtype {array.dtype}")
    return array.astype(np.float64)


def _check_finite(name: str, array: np.ndarray) -> None:
    bad = ~np.isfinite(array)
    if bad.any():
        where = np.argwhere(bad)[0].tolist()
        raise ValueError(
            f"{name}: expected finite values, got {array[tuple(where)]} at "
            f"index {tuple(where)} ({int(bad.sum())} non-finite in all)"
        )


def as_inputs(name: str, X, input_dim: int | None = None, allow_empty: bool = False) -> np.ndarray:
    """``X`` as a float64 array of shape (n, d); a flat array is one column."""
    array = _as_array(name, X)
    if array.ndim == 1 and input_dim in (None, 1):
        array = array[:, None]
    if array.ndim != 2:
        expected = f"(n, {input_dim})" if input_dim else "(n, d)"
        raise ValueError(f"{name}: expected an array of shape {expected}, got shape {array.shape}")
    if input_dim is not None and array.shape[1] != input_dim:
        raise ValueError(f"{name}: expected {input_dim} columns, got shape {array.shape}")
    if array.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name}: expected at least one point, got shape {array.shape}")
    _check_finite(name, array)
    return array


def as_targets(name: str, y, n: int, inputs_name: str) -> np.ndarray:
    """``y`` as a float64 vector of length n; accepts (n,), (n, 1) and lists."""
    array = _as_array(name, y)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(f"{name}: expected shape ({n},) or ({n}, 1), got shape {array.shape}")
    if array.shape[0] != n:
        raise ValueError(
            f"{name}: expected {n} values, one per row of {inputs_name}, got {array.shape[0]}"
        )
    _check_finite(name, array)
    return array


def as_dtype(dtype):
    import tensorflow as tf

    try:
        dtype = tf.as_dtype(dtype)
    except TypeError:
        raise ValueError(f"dtype: expected 'float32' or 'float64', got {dtype!r}") from None
    if dtype not in (tf.float32, tf.float64):
        raise ValueError(f"dtype: expected 'float32' or 'float64', got {dtype.name}")
    return dtype
