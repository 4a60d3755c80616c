"""Shared references: closed forms from sympy, finite differences."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest
import sympy as sp

#: Test files by their time on one worker, longest first (a run with ``--durations=0``
#: on 2 cores: sampling 655 s, the docs build 550 s, reliability 413 s, sparse 405 s,
#: models 402 s, io 311 s, nonlinear 267 s, fields 197 s; every other file < 150 s).
#: The two workers (``--dist loadfile --no-loadscope-reorder``) take files in this
#: order, the rest after them: the longest go first, so no long file starts last.
LONGEST_FIRST = (
    "test_isolated_a.py",
    "test_isolated_b.py",
    "test_docs.py",
    "test_sampling.py",
    "test_reliability.py",
    "test_sparse.py",
    "test_models.py",
    "test_io.py",
    "test_nonlinear.py",
    "test_fields.py",
)

#: Modules that run in a process of their own, one after another from
#: ``test_isolated_a.py`` and ``test_isolated_b.py``: TensorFlow keeps every program XLA
#: compiles for the life of a process (30 compiled functions took 0.18 GB, and dropping
#: them gave back 0.03 GB), and two test workers that ran every module reached 12 GB each
#: and exhausted the machine. The two groups take about equal time.
ISOLATED = {
    "a": ("test_sampling.py", "test_io.py", "test_nonlinear.py", "test_fields.py"),
    "b": ("test_reliability.py", "test_sparse.py", "test_models.py"),
}
#: Set in the isolated processes, which collect their module.
IN_ISOLATION = "PIGP_TEST_IN_ISOLATION"
if not os.environ.get(IN_ISOLATION):
    collect_ignore = [name for group in ISOLATED.values() for name in group]


def run_isolated(module: str) -> None:
    """Run ``tests/<module>`` in a fresh process (one worker, no cache) and fail with
    the end of its report where any of its tests fails."""
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).parent / module
    env = {**os.environ, IN_ISOLATION: "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, "-rfE", str(path)], env=env, capture_output=True, text=True, timeout=3000
    )
    if done.returncode != 0:
        pytest.fail(f"{module} in its own process:\n{done.stdout[-8000:]}\n{done.stderr[-2000:]}")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable


X1S, X2S = sp.symbols("a0:4", real=True), sp.symbols("b0:4", real=True)


def sympy_block(kernel, left, right, d):
    """Closed-form ``L k M'`` as a NumPy function of two points.

    Args:
        kernel: ``kernel(z1, z2)`` building a sympy expression from two tuples of symbols.
        left, right: ``[(coefficient, {column: order})]``.
    """
    z1, z2 = X1S[:d], X2S[:d]
    k = kernel(z1, z2)
    total = 0
    for c1, o1 in left:
        for c2, o2 in right:
            expr = k
            for column, n in o1.items():
                expr = sp.diff(expr, z1[column], n)
            for column, n in o2.items():
                expr = sp.diff(expr, z2[column], n)
            total += c1 * c2 * expr
    function = sp.lambdify(z1 + z2, total, "numpy")

    def evaluate(A, B):
        A, B = np.asarray(A, float), np.asarray(B, float)
        args = [A[:, None, c] * np.ones((1, len(B))) for c in range(d)] + [
            B[None, :, c] * np.ones((len(A), 1)) for c in range(d)
        ]
        return np.broadcast_to(function(*args), (len(A), len(B))).astype(float)

    return evaluate


def se_expr(variance, lengthscales):
    def kernel(z1, z2):
        s = sum(((a - b) / ell) ** 2 for a, b, ell in zip(z1, z2, lengthscales))
        return variance * sp.exp(-s / 2)

    return kernel


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Each test module starts without the compiled programs earlier modules left in
    ``pigp.structure``'s cache: a worker that runs many modules would otherwise hold
    every module's largest programs at once (64 kept) and the two workers together
    can exhaust the machine's memory."""
    yield
    import gc

    import pigp.structure

    pigp.structure._programs.clear()
    gc.collect()
    _return_freed_memory()
    if os.environ.get("PIGP_TEST_MEMORY"):
        from pigp.memory import peak_bytes, resident_bytes

        held, peak = resident_bytes() / 1e9, peak_bytes() / 1e9
        print(f"\n[memory] resident {held:.2f} GB, peak {peak:.2f} GB")


def _return_freed_memory() -> None:
    """Hand the memory the allocator holds free back to the system (glibc's
    ``malloc_trim``), where there is such a call."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass
