"""BLAS threads while pigp works: as many as the cores other processes leave free.

NumPy's and SciPy's OpenBLAS start a thread per core, and its threads wait for each
other at the end of every call. Beside other busy processes those waits burn the time
slices the others need: on 2 cores beside two busy processes, an 800-value fit took
10.9x its time alone and 3.8x its CPU time with the BLAS's two threads, against 1.65x
and 1.07x with one; a 3000-value fit 6.4x and 2.2x against 1.7x and 0.97x
(``benchmarks/shared_machine.py``). Alone, two threads made the 3000-value fit 1.5x
faster, and the 800-value one no faster. TensorFlow's own pools (work-stealing) shared
the cores fairly in the same runs.

So each public entry point of a model (``fit``, ``predict``...) counts the processes
running on the machine as it starts (Linux's ``/proc/loadavg``) and runs with one BLAS
thread per core they leave free, at least one (``threadpoolctl``); the user's setting
is given back on return. ``PIGP_BLAS_THREADS=n`` fixes the number, and
``PIGP_BLAS_THREADS=all`` leaves the BLAS as it is.
"""

from __future__ import annotations

import functools
import os
import threading
import time

__all__ = ["blas_threads", "limited", "limit_blas"]

_state = threading.local()
_controller = None


def blas_threads() -> int | None:
    """The BLAS threads pigp's work runs with now (``PIGP_BLAS_THREADS``, by default the
    cores other running processes leave free; None: as they are)."""
    value = os.environ.get("PIGP_BLAS_THREADS", "auto").strip().lower()
    if value == "all":
        return None
    if value in ("auto", ""):
        cores = _cores()
        return max(1, cores - min(cores, _others_running()))
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"PIGP_BLAS_THREADS: expected a positive integer, 'auto' or 'all', got {value!r}"
        )
    return n


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: How often the count of other running processes is taken again (seconds), and how:
#: the median of SAMPLES reads, 0.5 ms apart (a read is one instant; short system tasks
#: and this process's own waking threads come and go between reads).
REFRESH = 2.0
SAMPLES = 5
_cached = (-float("inf"), 0)


def _others_running() -> int:
    """Threads of other processes running or ready to run: ``/proc/loadavg``'s running
    count less this process's running threads (``/proc/self/task``), the median of
    ``SAMPLES`` reads, kept for ``REFRESH`` seconds; 0 where they cannot be read."""
    global _cached
    now = time.monotonic()
    if now - _cached[0] < REFRESH:
        return _cached[1]
    counts = []
    for k in range(SAMPLES):
        if k:
            time.sleep(0.0005)
        try:
            with open("/proc/loadavg") as handle:
                running = int(handle.read().split()[3].split("/")[0])
        except (OSError, IndexError, ValueError):
            return 0
        counts.append(running - _own_running())
    _cached = (now, max(0, sorted(counts)[SAMPLES // 2]))
    return _cached[1]


def _own_running() -> int:
    """This process's threads in state R (at least this one)."""
    own = 0
    try:
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/stat") as handle:
                    own += handle.read().rpartition(")")[2].split()[0] == "R"
            except OSError:
                continue
    except OSError:
        return 1
    return max(own, 1)


class limited:
    """Context: the BLAS runs with ``blas_threads()`` threads inside (nested uses are free)."""

    def __enter__(self):
        depth = getattr(_state, "depth", 0)
        _state.depth = depth + 1
        self._limit = None
        n = blas_threads() if depth == 0 else None
        if n is not None:
            global _controller
            if _controller is None:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
            self._limit = _controller.limit(limits=n, user_api="blas")
        return self

    def __exit__(self, *exc):
        _state.depth -= 1
        if self._limit is not None:
            self._limit.restore_original_limits()
        return False


def limit_blas(function):
    """Decorate a public entry point so that it runs inside ``limited()``."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with limited():
            return function(*args, **kwargs)

    return wrapper
