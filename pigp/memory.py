"""How much memory an exact fit needs, checked before anything is allocated.

An exact GP of N data values holds ``K`` (N x N), its factor and inverse, the
cotangent ``W`` and the temporaries of the tape-derived assembly (each
derivative order of each block). The growth of a fresh process's peak resident
memory over one ``fit`` of the heat problem (float64, half u and half f values;
``python benchmarks/memory.py`` measures it) is about 180 bytes per entry of K
(~22 float64 N x N arrays) at N = 4000 to 6000, beyond ~0.6 GB of compiled
programs. ``fit_bytes`` rounds this up to 200 bytes per entry. A rerun on 2026-12-04
measured less: 0.16, 0.23, 0.49, 1.15 and 2.40 GB at N = 500, 1000, 2000, 4000 and 6000
(67-72 bytes per entry at 4000-6000), so this estimate is 2.8 to 4.3 times the growth for
one field there: conservative, not yet within 2x. A model of several
fields compiles larger programs: a fresh process's peak grew by 0.64, 0.84 and 0.50 GB
over a fit of two-field plane elasticity of 240, 480 and 960 values and its Laplace
(``python benchmarks/memory.py --fields 2``; K's own entries are 0.01 to 0.18 GB of
that), so each field past the first adds ``FIELD_OVERHEAD``: the estimate was then 1.28,
1.02 and 1.99 times the measured growth (fitted to that one run, whose growth did not
rise with N: 0.50 GB at 960 values against 0.84 GB at 480).
"""

from __future__ import annotations

import os

from ._warnings import warn

__all__ = ["fit_bytes", "available_bytes", "largest_n", "check_fit"]

BYTES_PER_ENTRY = 200  # per entry of K, float64 or float32 (measured ~180 in float64)
OVERHEAD = 600 * 2**20  # compiled programs and their buffers
FIELD_OVERHEAD = 170 * 2**20  # each field past the first (larger programs)
WARN_FRACTION = 0.5  # warn above this fraction of the available memory


def fit_bytes(n: int, fields: int = 1) -> int:
    """Estimated peak memory of an exact fit of ``n`` data values of a model of
    ``fields`` latent fields, in bytes (float64; float32 needs less, measured but not
    modelled)."""
    return int(BYTES_PER_ENTRY * n * n + OVERHEAD + FIELD_OVERHEAD * (max(1, fields) - 1))


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
