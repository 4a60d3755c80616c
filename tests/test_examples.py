"""The example experiments run end to end and meet their accuracy targets (loosely)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_example(name, out, *args):
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), "--out", str(out), *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads((out / "metrics.json").read_text())


@pytest.mark.slow
def test_heat_example_meets_its_targets(tmp_path):
    metrics = run_example("heat_equation.py", tmp_path, "--seed", "0")
    assert metrics["noise_free"]["relative_l2"] < 1e-3
    assert metrics["noise_1pct"]["max_relative_l2"] < 3e-2
    assert 0.85 <= metrics["noise_1pct"]["pooled_coverage_95"] <= 1.0
    for figure in (
        "heat_noise_free.png",
        "heat_noise_1pct.png",
        "heat_slices.png",
        "heat_training.png",
    ):
        assert (tmp_path / figure).stat().st_size > 10_000


@pytest.mark.slow
def test_seed_example_runs_and_shows_the_diagonal_limit(tmp_path):
    metrics = run_example("heat_seed.py", tmp_path)
    assert metrics["initial_parameters"]["kernel.variance"] == pytest.approx(0.9488259711, rel=1e-9)
    assert metrics["u_on_20_grid"]["relative_l2"] < 2e-2
    bands = metrics["by_distance_from_diagonal"]
    on, far = bands["on_diagonal(d<0.05)"], bands["far(d>=0.2)"]
    assert far["mean_posterior_std"] > 3 * on["mean_posterior_std"]
    assert far["relative_l2"] > 3 * on["relative_l2"]


@pytest.mark.slow
def test_cli_matches_the_example(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run_example("heat_seed.py", a, "--quick", "--seed", "3")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pigp.experiments",
            "seed",
            "--quick",
            "--seed",
            "3",
            "--out",
            str(b),
        ],
        check=True,
        capture_output=True,
    )
    first = json.loads((a / "metrics.json").read_text())
    second = json.loads((b / "metrics.json").read_text())
    first.pop("fit_seconds"), second.pop("fit_seconds")
    assert first == second
