"""Compiled programs kept on disk between processes: TensorFlow's persistent XLA cache.

A new process compiles each model structure's programs again (about 0.6 s of a
new model's first fit on the README's quick start). ``compilation_cache(dir)``
has XLA keep them in ``dir`` and load them in later processes. Off unless asked
for: nothing is written to disk by default. No TensorFlow import here.
"""

from __future__ import annotations

import os

__all__ = ["compilation_cache"]

FLAG = "--tf_xla_persistent_cache_directory"


def compilation_cache(directory) -> str:
    """Keep XLA's compiled programs in ``directory`` for later processes.

    Call it before the process compiles its first program (before the first
    ``fit``): TensorFlow reads its XLA flags once, at the first compilation, so a
    later call has no effect in that process. It sets ``TF_XLA_FLAGS`` (keeping
    any other flags there), which processes started from this one inherit.

    Args:
        directory: a folder, created if missing.

    Returns:
        The folder's absolute path.

    Raises:
        ValueError: ``directory`` is not a path, cannot be created, or
            ``TF_XLA_FLAGS`` already names another cache folder.
    """
    if not isinstance(directory, (str, os.PathLike)) or not str(directory):
        raise ValueError(f"directory: expected a folder's path, got {directory!r}")
    path = os.path.abspath(os.fspath(directory))
    flags = os.environ.get("TF_XLA_FLAGS", "").split()
    named = [f.split("=", 1)[1] for f in flags if f.startswith(FLAG + "=")]
    if named and os.path.abspath(named[-1]) != path:
        raise ValueError(
            f"directory: TF_XLA_FLAGS already keeps compiled programs in {named[-1]!r}, "
            f"not {path!r}"
        )
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise ValueError(f"directory: cannot create {path!r} ({error})") from None
    if not named:
        os.environ["TF_XLA_FLAGS"] = " ".join([*flags, f"{FLAG}={path}"])
    return path
