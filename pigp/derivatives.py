"""Entry-wise partial derivatives by nested ``tf.GradientTape``.

``tape.gradient(y, x)`` differentiates ``sum(y)``. When every entry of ``y``
depends only on the same entry of each input column (pair tensors: each entry
of a Gram matrix has its own copy of its two points), the gradient of the sum
*is* the entry-wise derivative. Nesting tapes gives higher orders.
"""

from __future__ import annotations

from ._tensorflow import tf

__all__ = ["partials"]


def _parent(index: tuple):
    """The multi-index one derivative lower, and the column of that derivative."""
    for column in reversed(range(len(index))):
        if index[column]:
            parent = list(index)
            parent[column] -= 1
            return tuple(parent), column
    return None, None


def partials(function, columns: list, indices) -> dict:
    """Partial derivatives of ``function(columns)`` for each multi-index in ``indices``.

    Args:
        function: maps a list of same-shaped tensors (one per variable) to a
            tensor of that shape, entry by entry.
        columns: the variables, a list of tensors of one shape.
        indices: multi-indices (tuples of ``len(columns)`` orders).

    Returns:
        dict: ``{index: d^|index| function / d columns^index}``, tensors of the shape
        of the columns. One tape level is opened per derivative order, and each
        level differentiates only what the next level needs.
    """
    indices = set(indices)
    if all(sum(index) == 0 for index in indices):
        value = function(columns)
        return {index: value for index in indices}
    steps = {index: _parent(index) for index in indices}
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(columns)
        lower = partials(
            function,
            columns,
            {parent if parent is not None else index for index, (parent, _) in steps.items()},
        )
    out = {}
    for index, (parent, column) in steps.items():
        if parent is None:
            out[index] = lower[index]
        else:
            out[index] = tape.gradient(
                lower[parent], columns[column], unconnected_gradients=tf.UnconnectedGradients.ZERO
            )
    del tape
    return out
