"""The command line: ``pigp NAME`` and ``python examples/NAME.py``.

Each experiment takes ``--out DIR`` and ``--seed``, writes ``metrics.json`` and
PNG figures into ``DIR``, and prints the metrics. ``--quick`` runs fewer steps
(for tests and CI).
"""

from __future__ import annotations

import argparse
import os
import sys

from . import heat, problems

__all__ = ["EXPERIMENTS", "parser", "run", "main", "script"]

EXPERIMENTS = {**heat.EXPERIMENTS, **problems.PROBLEMS}


class UsageError(Exception):
    """A user error on the command line: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (``pigp: error: ...``) and exit code 2."""

    def error(self, message):
        raise UsageError(message)


def parser(prog: str = "pigp", experiment: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``pigp`` (all experiments) or of one experiment's script."""
    def common(p):
        p.add_argument("--out", default=None, help="folder for metrics.json and figures "
                       "(default results/NAME)")
        p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        p.add_argument("--quick", action="store_true", help="fewer steps, for smoke tests")
        p.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                       help="floating-point precision of the model (default float64)")

    if experiment is not None:
        p = _Parser(prog=prog, description=EXPERIMENTS[experiment].__doc__.replace("%", "%%"))
        common(p)
        return p
    p = _Parser(prog=prog, description="Run a pigp experiment.")
    sub = p.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for name, function in EXPERIMENTS.items():
        doc = function.__doc__.replace("%", "%%")        # argparse formats help with %
        common(sub.add_parser(name, help=doc.splitlines()[0], description=doc))
    return p


def output_folder(name: str, out) -> str:
    """The folder for ``name``'s results, created; ``UsageError`` if it cannot be."""
    out = out or os.path.join("results", name)
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out: {out!r} exists and is not a folder")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out: cannot create the folder {out!r} ({error.strerror})") from None
    if not os.access(out, os.W_OK):
        raise UsageError(f"--out: the folder {out!r} is not writable")
    return out


def run(name: str, args) -> dict:
    """Run experiment ``name`` with parsed ``args``; returns its metrics."""
    out = output_folder(name, args.out)
    return EXPERIMENTS[name](out, seed=args.seed, quick=args.quick, dtype=args.dtype)


def _guarded(prog: str, function) -> int:
    try:
        function()
    except UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv=None) -> int:
    """Entry point of ``pigp``: 0 on success, 2 (one line on stderr) on a user error."""
    def go():
        args = parser().parse_args(argv)
        run(args.experiment, args)
    return _guarded("pigp", go)


def script(name: str, argv=None) -> int:
    """Entry point of ``examples/NAME.py``: the same experiment as ``pigp NAME``."""
    prog = os.path.basename(sys.argv[0])

    def go():
        args = parser(prog=prog, experiment=name).parse_args(argv)
        run(name, args)
    return _guarded(prog, go)
