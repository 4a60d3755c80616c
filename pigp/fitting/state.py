"""Snapshots of what a fit changes, and their restoration on interrupt."""

from __future__ import annotations

import contextlib

__all__ = ["Snapshot", "Held", "restored_on_interrupt"]


class Snapshot:
    """The values of some variables, to go back to (``restore``)."""

    def __init__(self, variables):
        self.values = [(v, v.numpy()) for v in variables]

    def restore(self) -> None:
        for v, value in self.values:
            v.assign(value)


class Held:
    """Parameters' trainable flags and values, to go back to (``restore``)."""

    def __init__(self, parameters):
        self.parameters = list(parameters)
        self.values = [(p.unconstrained.numpy(), p.trainable) for p in self.parameters]

    def restore(self) -> None:
        for p, (value, trainable) in zip(self.parameters, self.values):
            p.unconstrained.assign(value)
            p.trainable = trainable


@contextlib.contextmanager
def restored_on_interrupt(snapshot):
    """Within the block, a ``KeyboardInterrupt`` first restores ``snapshot`` (a stage
    half done is undone), then goes on up."""
    try:
        yield
    except KeyboardInterrupt:
        snapshot.restore()
        raise
