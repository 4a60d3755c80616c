"""The command line: ``pigp NAME`` and ``python examples/NAME.py``.

Each experiment takes ``--out DIR`` and ``--seed``, writes ``metrics.json`` and
PNG figures into ``DIR``, and prints a short summary table (``--json`` prints
the whole of ``metrics.json`` instead). ``--quick`` runs fewer steps (for tests
and CI).

Nothing here imports TensorFlow until an experiment runs: the help texts are
read from the experiments' source, so ``pigp --help`` answers at once; when
an experiment runs, TensorFlow's start-up log lines are kept off the terminal.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import sys

__all__ = ["EXPERIMENTS", "parser", "run", "main", "script"]

# Experiment name -> (module in pigp.experiments, function). tests/test_cli.py checks
# that this lists exactly heat.EXPERIMENTS, problems.PROBLEMS, nonlinear.NONLINEAR and
# systems.SYSTEMS.
EXPERIMENTS = {
    "heat": ("heat", "heat"),
    "seed": ("heat", "seed"),
    "poisson1d": ("problems", "poisson1d"),
    "advection_diffusion": ("problems", "advection_diffusion"),
    "wave": ("problems", "wave"),
    "helmholtz2d": ("problems", "helmholtz2d"),
    "heat2d": ("problems", "heat2d"),
    "elliptic": ("nonlinear", "elliptic"),
    "burgers": ("nonlinear", "burgers"),
    "stokes": ("systems", "stokes"),
}


def _docstring(name: str) -> str:
    """The docstring of experiment ``name``, read from its module's source (no import)."""
    module, function = EXPERIMENTS[name]
    spec = importlib.util.find_spec(f"{__package__}.{module}")
    with open(spec.origin, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return ast.get_docstring(node)
    raise LookupError(f"{spec.origin} defines no function {function!r}")


def _function(name: str):
    module, function = EXPERIMENTS[name]
    _import_tensorflow_quietly()
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


def _import_tensorflow_quietly() -> None:
    """Import TensorFlow (``pigp._tensorflow``: its C++ start-up lines off) and list its
    devices with the lines that prints (oneDNN, CUDA, no GPU found) sent to the null
    device, and keep TensorFlow's Python warnings (retracing notices) to errors; a
    failing import still shows its error."""
    if "tensorflow" in sys.modules:
        return
    from .._tensorflow import quiet_stderr, tf

    with quiet_stderr():
        tf.config.list_physical_devices()
    tf.get_logger().setLevel("ERROR")


class UsageError(Exception):
    """A user error on the command line: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (``pigp: error: ...``) and exit code 2."""

    def error(self, message):
        raise UsageError(message)


def parser(prog: str = "pigp", experiment: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``pigp`` (all experiments) or of one experiment's script."""

    def common(p, name):
        if EXPERIMENTS[name][0] == "problems":
            p.add_argument(
                "--noise",
                type=_level,
                default=0.0,
                metavar="LEVEL",
                help="Gaussian noise of LEVEL times each data set's RMS on its targets "
                "(e.g. 0.01; default 0: exact data)",
            )
        p.add_argument(
            "--out", default=None, help="folder for metrics.json and figures (default results/NAME)"
        )
        p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        p.add_argument("--quick", action="store_true", help="fewer steps, for smoke tests")
        p.add_argument(
            "--dtype",
            choices=["float64", "float32"],
            default="float64",
            help="floating-point precision of the model (default float64)",
        )
        p.add_argument(
            "--json",
            action="store_true",
            help="print all of metrics.json instead of the summary table",
        )

    formatter = argparse.RawDescriptionHelpFormatter
    if experiment is not None:
        # A description is printed as written; only help strings are %-formatted.
        p = _Parser(prog=prog, description=_docstring(experiment), formatter_class=formatter)
        common(p, experiment)
        return p
    p = _Parser(
        prog=prog,
        description="Run a pigp experiment: pigp EXPERIMENT [--out DIR] ...",
        epilog="pigp EXPERIMENT --help describes one experiment.",
    )
    sub = p.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for name in EXPERIMENTS:
        doc = _docstring(name)
        common(
            sub.add_parser(
                name,
                help=doc.splitlines()[0].replace("%", "%%"),
                description=doc,
                formatter_class=formatter,
            ),
            name,
        )
    return p


def _level(text: str) -> float:
    """``--noise``'s value: a finite number >= 0."""
    try:
        level = float(text)
    except ValueError:
        level = -1.0
    if not (0.0 <= level < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a number >= 0 (e.g. 0.01), got {text!r}")
    return level


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
    """Run experiment ``name`` with parsed ``args``; print the summary table (or, with
    ``--json``, the metrics as JSON); return the metrics."""
    out = output_folder(name, args.out)
    options = {"noise": args.noise} if hasattr(args, "noise") else {}
    metrics = _function(name)(out, seed=args.seed, quick=args.quick, dtype=args.dtype, **options)
    if getattr(args, "json", False):
        print(json.dumps(metrics, indent=2))
    else:
        from .report import summary

        print(summary(metrics))
        print(f"all metrics: {os.path.join(out, 'metrics.json')}")
    return metrics


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
