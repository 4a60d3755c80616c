"""How much memory an exact fit needs, checked before anything is allocated.

An exact GP of N data values holds ``K`` (N x N), its factor and inverse, the
cotangent ``W`` and the temporaries of the tape-derived assembly (each
derivative order of each block). The growth of a fresh process's peak resident
memory over one ``fit`` of the heat problem (float64, half u and half f values;
``python benchmarks/memory.py`` measures it) is about 180 bytes per entry of K
(~22 float64 N x N arrays) at N = 4000 to 6000, beyond ~0.6 GB of compiled
programs. ``fit_bytes`` rounds this up to 200 bytes per entry. A model of several
fields compiles a program per field: the two-field elasticity of 480 values
(``benchmarks/elasticity.py``) peaked at 1.5-1.7 GB, so the programs' part counts
once per field. Not yet a model of several fields: a two-field fit of 240 values with
its Laplace peaked at 3.0 GB in one run, 2.3 times this estimate.
"""

from __future__ import annotations

import os

from ._warnings import warn

__all__ = ["fit_bytes", "available_bytes", "largest_n", "check_fit"]

BYTES_PER_ENTRY = 200  # per entry of K, float64 or float32 (measured ~180 in float64)
OVERHEAD = 600 * 2**20  # compiled programs and their buffers
WARN_FRACTION = 0.5  # warn above this fraction of the available memory


def fit_bytes(n: int, fields: int = 1) -> int:
    """Estimated peak memory of an exact fit of ``n`` data values of a model of
    ``fields`` latent fields, in bytes (float64; float32 needs less, measured but not
    modelled)."""
    return int(BYTES_PER_ENTRY * n * n + OVERHEAD * max(1, fields))


def available_bytes() -> int:
    """Memory available to this process now: ``MemAvailable`` of /proc/meminfo where
    there is one, else the physical memory."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def largest_n(memory: int) -> int:
    """The largest N whose estimated fit fits in ``memory`` bytes."""
    return int((max(0, memory - OVERHEAD) / BYTES_PER_ENTRY) ** 0.5)


def check_fit(n: int, fields: int = 1) -> None:
    """Refuse (``ValueError``) an exact fit of ``n`` values that would not fit in the
    memory available, and warn above half of it.

    Raises:
        ValueError: stating the estimate, the memory available and the N that fits.
    """
    need, have = fit_bytes(n, fields), available_bytes()
    gb = 1e9
    if need > have:
        raise ValueError(
            f"fit: {n} data values need about {need / gb:.1f} GB for the exact GP (K is "
            f"{n} x {n}, and the fit holds ~25 arrays of its size), but {have / gb:.1f} GB are "
            f"available: at most {largest_n(have)} values fit here. Use pigp.SparsePIGP "
            "(inducing points; memory independent of the number of values) for data of "
            "this size, or fewer points"
        )
    if need > WARN_FRACTION * have:
        warn(
            f"fit: {n} data values need about {need / gb:.1f} GB, "
            f"{need / have:.0%} of the memory available ({have / gb:.1f} GB)",
        )
