"""The README's quick-start code runs and does what it says."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quick_start_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # it saves a model file
    code = re.search(r"## Quick start\s+```python\n(.*?)```", README.read_text(), re.S).group(1)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    u = scope["u"]
    assert scope["mean"].shape == (100,) and scope["var"].shape == (100,)
    assert (
        np.linalg.norm(scope["mean"] - u(scope["X_star"])) / np.linalg.norm(u(scope["X_star"]))
        < 1e-3
    )
    assert scope["K_fu"].shape == (100, 20)
    np.testing.assert_array_equal(scope["same"].predict(scope["X_star"])[0], scope["mean"])


def test_the_readme_tables_are_the_benchmark_runs():
    """The README's performance and calibration tables are the ones
    ``benchmarks/_tables.py`` makes from ``benchmarks/results/`` (the docs' tables come
    from there too)."""
    import importlib.util

    path = README.parent / "benchmarks" / "_tables.py"
    spec = importlib.util.spec_from_file_location("tables", path)
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    assert tables.performance_readme() in README.read_text()
    # The calibration table too (benchmarks/results/calibration*.json).
    assert tables.calibration() in README.read_text()
