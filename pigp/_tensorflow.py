"""TensorFlow, imported without its C++ start-up lines.

TensorFlow's C++ side logs a dozen lines when it starts (CPU instructions, "could
not find cuda drivers", a CUDA error on a machine without a GPU, XLA's service) that
no pigp user can act on. Unless the user set ``TF_CPP_MIN_LOG_LEVEL`` (or imported
TensorFlow first: see ``_started_quietly``), the first import sets it to 3 (C++
messages off; Python errors still raise) and sends the lines TensorFlow writes
before its logging is set up, which ignore that setting, to the null device for the
duration of the import.
Every pigp module takes ``tf`` from here.
"""

from __future__ import annotations

import os
import sys

from ._quiet import quiet_stderr


def _import():
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        import tensorflow

        return tensorflow
    if "tensorflow" in sys.modules:
        import tensorflow

        _started_quietly(tensorflow)
        return tensorflow
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    with quiet_stderr():
        import tensorflow
    return tensorflow


def _started_quietly(tensorflow) -> None:
    """The program imported TensorFlow itself, before pigp: its import lines are
    written, at the log level it read then. The lines it writes once per process later
    (the CUDA probe at the first device query; XLA's service, its MLIR bridge and its
    first program at the first compiled gradient) are taken here, on the null device:
    a device query (which leaves the devices configurable) and the gradient of a 1 x 1
    Cholesky factor compiled by XLA (about 0.4 s)."""

    def gradient(x):
        with tensorflow.GradientTape() as tape:
            tape.watch(x)
            factor = tensorflow.linalg.cholesky(tensorflow.reshape(x, (1, 1)))
        return tape.gradient(factor, x)

    with quiet_stderr():
        tensorflow.config.list_physical_devices()
        tensorflow.function(gradient, jit_compile=True)(tensorflow.constant(1.0, "float64"))


tf = _import()


def probability():
    """TensorFlow Probability, imported once without the ``DeprecationWarning`` its
    version check raises through ``distutils.version.LooseVersion`` (TFP 0.25's
    ``tensorflow_probability/python/__init__.py``): a warning about TFP's own code
    that no pigp user can act on. Other warnings of the import still show."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message="distutils Version classes are deprecated",
            category=DeprecationWarning,
        )
        return importlib.import_module("tensorflow_probability")
