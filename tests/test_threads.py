"""BLAS threads while pigp works (``pigp._threads``): as many as other processes leave
free, the user's setting given back, and ``PIGP_BLAS_THREADS`` obeyed or refused."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import pigp
from pigp import _threads


def blas_now() -> int:
    return min(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(_threads, "_cached", (-float("inf"), 0))
    monkeypatch.delenv("PIGP_BLAS_THREADS", raising=False)


def test_the_setting_is_read_and_a_bad_one_refused_by_name(fresh, monkeypatch):
    monkeypatch.setenv("PIGP_BLAS_THREADS", "3")
    assert _threads.blas_threads() == 3
    monkeypatch.setenv("PIGP_BLAS_THREADS", "all")
    assert _threads.blas_threads() is None
    for bad in ("0", "-2", "many"):
        monkeypatch.setenv("PIGP_BLAS_THREADS", bad)
        with pytest.raises(ValueError, match="PIGP_BLAS_THREADS: expected a positive integer"):
            _threads.blas_threads()


def test_auto_leaves_the_cores_other_processes_use(fresh, monkeypatch):
    cores = _threads._cores()
    monkeypatch.setattr(_threads, "_others_running", lambda: 0)
    assert _threads.blas_threads() == cores
    monkeypatch.setattr(_threads, "_others_running", lambda: cores - 1)
    assert _threads.blas_threads() == 1
    monkeypatch.setattr(_threads, "_others_running", lambda: 10 * cores)
    assert _threads.blas_threads() == 1


def test_the_count_of_other_processes_sees_a_busy_one(fresh):
    """A child process that spins is counted among the others (Linux)."""
    import os
    import subprocess
    import sys
    import time

    if not os.path.exists("/proc/loadavg"):
        pytest.skip("no /proc/loadavg")
    before = _threads._others_running()
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        _threads._cached = (-float("inf"), 0)
        during = _threads._others_running()
    finally:
        child.kill()
        child.wait()
    assert during >= 1 and during >= before


def test_a_fit_runs_with_the_limit_and_gives_the_users_setting_back(fresh, monkeypatch):
    monkeypatch.setenv("PIGP_BLAS_THREADS", "1")
    x = np.linspace(0, 1, 8)[:, None]
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.D("x", 2), dims=("x",))
    seen = []
    with threadpool_limits(limits=2, user_api="blas"):
        model.fit(
            x[[0, -1]],
            np.sin(x[[0, -1], 0]),
            x,
            -np.sin(x[:, 0]),
            steps=3,
            optimizer="adam",
            callback=lambda *args: seen.append(blas_now()),
        )
        after = blas_now()
    assert seen and set(seen) == {1}
    assert after == 2
