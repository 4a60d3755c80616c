"""How much memory an exact fit needs, checked before anything is allocated.

An exact GP of N data values holds ``K`` (N x N), its factor and inverse, the
cotangent ``W`` and the temporaries of the tape-derived assembly (each
derivative order of each block). The growth of a fresh process's peak resident
memory over one ``fit`` of the heat problem (float64, half u and half f values;
``python benchmarks/memory.py``) was 0.17, 0.25, 0.56, 1.45 and 3.19 GB at N = 500,
1000, 2000, 4000 and 6000: 89-91 bytes per entry of K at 4000-6000 (about eleven
float64 N x N arrays; 67-72 in a run on an earlier install of the dependencies) beyond
~0.15 GB of compiled programs. ``fit_bytes`` counts 100 bytes per entry and 200 MiB,
1.08 to 1.38 times those growths (1.24 to 1.59 in the earlier run). A model of several
fields compiles larger programs: the peak grew by 0.59, 0.75 and 0.57 GB over a
default fit of two-field plane elasticity of 240, 480 and 960 values and its Laplace
(``python benchmarks/memory.py --fields 2``; 0.62, 0.83 and 0.49 GB in a run before; K's
own entries are 0.01 to 0.09 GB of that, and the growth did not rise with N), so each
field past the first adds ``FIELD_OVERHEAD``: the estimate is 0.93 to 1.35 times those
growths (0.85 to 1.58 in the run before).
"""

from __future__ import annotations

import math
import os

from ._warnings import warn

__all__ = [
    "fit_bytes",
    "available_bytes",
    "largest_n",
    "check_fit",
    "peak_bytes",
    "collocation_bytes",
    "check_collocation",
    "resident_bytes",
]

BYTES_PER_ENTRY = 100  # per entry of K in float64 (measured 67-91)
BYTES_PER_ENTRY_FLOAT32 = 50  # in float32 (measured 39-45 at 4000-8000)
OVERHEAD = 200 * 2**20  # compiled programs and their buffers
FIELD_OVERHEAD = 450 * 2**20  # each field past the first (larger programs)
WARN_FRACTION = 0.5  # warn above this fraction of the available memory


def fit_bytes(n: int, fields: int = 1, dtype="float64") -> int:
    """Estimated peak memory of an exact fit of ``n`` data values of a model of
    ``fields`` latent fields, in bytes, for ``dtype`` ``"float64"`` or ``"float32"``
    (``BYTES_PER_ENTRY`` or ``BYTES_PER_ENTRY_FLOAT32`` per entry of K)."""
    return int(_per_entry(dtype) * n * n + OVERHEAD + FIELD_OVERHEAD * (max(1, fields) - 1))


def _per_entry(dtype) -> int:
    """Bytes per entry of K for ``dtype`` (a name or a TensorFlow dtype)."""
    float32 = str(getattr(dtype, "name", dtype)) == "float32"
    return BYTES_PER_ENTRY_FLOAT32 if float32 else BYTES_PER_ENTRY


def _proc_kib(path: str, key: str) -> int | None:
    """The number of KiB on the line of ``path`` that starts with ``key`` (Linux's
    /proc files), or None where there is no such file or line."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def available_bytes() -> int:
    """Memory available to this process now: ``MemAvailable`` of /proc/meminfo where
    there is one, else the physical memory."""
    available = _proc_kib("/proc/meminfo", "MemAvailable:")
    if available is not None:
        return available * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def peak_bytes() -> int:
    """This process's peak resident memory so far, in bytes: ``VmHWM`` of
    /proc/self/status where there is one, else ``ru_maxrss``.

    ``VmHWM`` counts only this process's own address space. ``ru_maxrss`` also keeps
    the peak of the process it was started from (Linux records the old address
    space's peak at ``exec``), so in a process started by a large one, a test runner
    say, it can sit above anything the child itself allocates.
    """
    peak = _proc_kib("/proc/self/status", "VmHWM:")
    if peak is not None:
        return peak * 1024
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes there, KiB elsewhere


def resident_bytes() -> int:
    """This process's resident memory now, in bytes: ``VmRSS`` of /proc/self/status
    where there is one, else 0 (nothing known to be held)."""
    resident = _proc_kib("/proc/self/status", "VmRSS:")
    return 0 if resident is None else resident * 1024


def largest_n(memory: int, dtype="float64") -> int:
    """The largest N whose estimated fit fits in ``memory`` bytes."""
    return int((max(0, memory - OVERHEAD) / _per_entry(dtype)) ** 0.5)


def check_fit(n: int, fields: int = 1, nonlinear: bool = False, dtype="float64") -> None:
    """Refuse (``ValueError``) an exact fit of ``n`` values that would not fit in the
    memory available, and warn above half of it.

    Args:
        nonlinear: the model is a nonlinear equation, which ``pigp.SparsePIGP`` does not
            take: the message points to the sparse collocation engine instead.
        dtype: the model's, ``"float64"`` or ``"float32"``.

    Raises:
        ValueError: stating the estimate, the memory available and the N that fits.
    """
    need, have = fit_bytes(n, fields, dtype), available_bytes()
    gb = 1e9
    if need > have:
        if nonlinear:
            way = (
                "One nonlinear equation of one field with exact point values of u solves "
                "at 10^5 points and more with PIGP(..., engine='cholesky') (sparse "
                "collocation); or use fewer points"
            )
        else:
            way = (
                "Use pigp.SparsePIGP (inducing points; memory independent of the number of "
                "values) for data of this size, or fewer points"
            )
        raise ValueError(
            f"fit: {n} data values need about {need / gb:.1f} GB for the exact GP (K is "
            f"{n} x {n}, and the fit holds ~12 arrays of its size), but {have / gb:.1f} GB are "
            f"available: at most {largest_n(have, dtype)} values fit here. {way}"
        )
    _warn_above_half(f"fit: {n} data values", need, have)


#: The sparse inverse-Cholesky engine (``pigp.engines.cholesky``): a process's peak
#: before its first point (TensorFlow, and the kernel's compiled program) and the bytes
#: per entry of the features' factor (the factor itself, the reduced factor, the
#: pattern). Measured on -Lap u + u^3 = f (``python benchmarks/collocation_scale.py
#: --grids 100 200 316 500``, rho 5, 136-142 entries a column): peaks of 0.96, 1.13,
#: 1.50 and 2.34 GB at 2.0e4, 8.1e4, 2.0e5 and 5.0e5 measurements, about 0.91 GB before
#: the first point and 20 bytes per entry beyond it. The estimate is 1.08-1.15 times
#: those peaks.
COLLOCATION_OVERHEAD = 1000 * 2**20
COLLOCATION_BYTES_PER_ENTRY = 22


def collocation_bytes(
    measurements: int, dims: int, kinds: int = 2, rho: float = 5.0, supernode: float = 1.3
) -> int:
    """The estimated peak of a sparse-collocation solve of ``measurements`` feature
    measurements (point values and ``kinds - 1`` derivative kinds at each point) in
    ``dims`` dimensions: each column of the factor holds about half the measurements
    in a ball of radius ``supernode rho l`` (l the spacing), ``kinds`` a point, and at
    most half of all of them (a column holds only earlier measurements)."""
    ball = math.pi ** (dims / 2) / math.gamma(dims / 2 + 1)
    per_column = min(0.5 * ball * (supernode * rho) ** dims * kinds, 0.5 * measurements)
    return int(COLLOCATION_OVERHEAD + measurements * per_column * COLLOCATION_BYTES_PER_ENTRY)


def check_collocation(measurements: int, dims: int, kinds: int, rho: float, supernode: float):
    """Refuse (``ValueError``) a sparse-collocation solve that would not fit in the
    memory available, and warn above half of it.

    The estimate is a fresh process's peak, of which ``COLLOCATION_OVERHEAD`` is held
    before the first point (TensorFlow and the compiled kernel): what this process
    already holds counts against that part, so only the growth beyond it is compared
    with the memory available."""
    peak = collocation_bytes(measurements, dims, kinds, rho, supernode)
    held = min(resident_bytes(), COLLOCATION_OVERHEAD)
    need, have = peak - held, available_bytes()
    gb = 1e9
    if need > have:
        raise ValueError(
            f"collocation: {measurements} measurements at rho {rho:g} need about "
            f"{need / gb:.1f} GB for the sparse factor, but {have / gb:.1f} GB are "
            "available: use fewer points or a smaller rho (each column holds the "
            "measurements within rho times the spacing)"
        )
    _warn_above_half(f"collocation: {measurements} measurements", need, have)


def release_freed() -> bool:
    """Return the memory the process has freed to the system (glibc's ``malloc_trim``;
    False where there is none). The sparse factor's batches leave freed pieces in the
    C heap that its large arrays, mapped apart, cannot reuse: at 10^5 points of
    -Lap u + u^3 = f they held about 0.1 GB of the resident memory."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _trim = False
    return bool(_trim and _trim(0))


_trim = None


def _warn_above_half(what: str, need: int, have: int) -> None:
    """Warn that ``what`` needs ``need`` bytes where that is over ``WARN_FRACTION`` of
    the ``have`` available."""
    if need > WARN_FRACTION * have:
        warn(
            f"{what} need about {need / 1e9:.1f} GB, "
            f"{need / have:.0%} of the memory available ({have / 1e9:.1f} GB)",
        )
