"""The benchmark scripts' shared helpers: JSON output, timing, peak memory, table rows.

Every script of the suite (``benchmarks/suite.py``) writes its JSON with
``write_json``, times with ``best_of`` or ``timed`` and reads a fresh process's peak
memory with ``peak_gb``, so that a figure means the same in every table.
"""

import contextlib
import json
import os
import subprocess
import sys
import time


def write_json(path: str, data) -> None:
    """Write ``data`` to ``path`` as indented JSON, creating its folder."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2)


def best_of(function, repeats=3) -> float:
    """The shortest of ``repeats`` wall times of ``function()``, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def print_row(row: dict, columns, width: int) -> None:
    """One table row: ``row["problem"]`` padded to ``width``, the seed, then each
    ``(key, format)`` of ``columns`` (blank where ``row`` has no such key)."""
    cells = [f"{row['problem']:<{width}}", f"{row['seed']:>4}"]
    for key, form in columns:
        cells.append(form.format(row[key]) if key in row else " " * len(form.format(0)))
    print(" ".join(cells), flush=True)


@contextlib.contextmanager
def timed(into: dict, key: str):
    """``with timed(row, "fit_seconds"): ...`` stores the block's wall time in ``row``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        into[key] = time.perf_counter() - start


def peak_gb() -> float:
    """This process's peak resident memory so far, in GB (``pigp.memory.peak_bytes``:
    VmHWM, the process's own, not its launcher's)."""
    from pigp.memory import peak_bytes

    return peak_bytes() / 1e9


def unit_square_grid(n: int) -> tuple:
    """``(boundary, interior)`` of the unit square: the n x n interior grid of spacing
    1 / (n + 1), and the 4(n + 1) points of the boundary at that spacing (counter-
    clockwise from the origin)."""
    import numpy as np

    h = 1.0 / (n + 1)
    g = np.arange(1, n + 1) * h
    interior = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    b = np.arange(0, n + 1) * h
    zero, one = 0 * b, 1 + 0 * b
    boundary = np.concatenate(
        [np.stack(p, 1) for p in ((b, zero), (one, b), (1 - b, one), (zero, 1 - b))]
    )
    return boundary, interior


def in_fresh_process(arguments, timeout: float = 3600) -> dict:
    """Run ``python *arguments`` in a fresh process (its peak memory its own) and return
    the JSON object its last line of output prints."""
    done = subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, check=True, timeout=timeout
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
