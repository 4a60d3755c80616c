"""TensorFlow, imported without its C++ start-up lines.

TensorFlow's C++ side logs a dozen lines when it starts (CPU instructions, "could
not find cuda drivers", a CUDA error on a machine without a GPU, XLA's service) that
no pigp user can act on. Unless the user set ``TF_CPP_MIN_LOG_LEVEL`` (or imported
TensorFlow first), the first import sets it to 3 (C++ messages off; Python errors
still raise) and sends the lines TensorFlow writes before its logging is set up,
which ignore that setting, to the null device for the duration of the import.
Every pigp module takes ``tf`` from here.
"""

from __future__ import annotations

import os
import sys

from ._quiet import quiet_stderr


def _import():
    if "tensorflow" in sys.modules or "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        import tensorflow

        return tensorflow
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    with quiet_stderr():
        import tensorflow
    return tensorflow


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
