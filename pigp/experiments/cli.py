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
        p = argparse.ArgumentParser(prog=prog, description=EXPERIMENTS[experiment].__doc__
                                    .replace("%", "%%"))
        common(p)
        return p
    p = argparse.ArgumentParser(prog=prog, description="Run a pigp experiment.")
    sub = p.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for name, function in EXPERIMENTS.items():
        doc = function.__doc__.replace("%", "%%")        # argparse formats help with %
        common(sub.add_parser(name, help=doc.splitlines()[0], description=doc))
    return p


def run(name: str, args) -> dict:
    """Run experiment ``name`` with parsed ``args``; returns its metrics."""
    out = args.out or os.path.join("results", name)
    os.makedirs(out, exist_ok=True)
    return EXPERIMENTS[name](out, seed=args.seed, quick=args.quick, dtype=args.dtype)


def main(argv=None) -> int:
    """Entry point of ``pigp``."""
    args = parser().parse_args(argv)
    run(args.experiment, args)
    return 0


def script(name: str, argv=None) -> int:
    """Entry point of ``examples/NAME.py``: the same experiment as ``pigp NAME``."""
    args = parser(prog=os.path.basename(sys.argv[0]), experiment=name).parse_args(argv)
    run(name, args)
    return 0
