"""The example problems: exact solutions recovered, learned coefficients found."""

import json

import numpy as np
import pytest

from pigp import experiments
from pigp.experiments import problems

# problem: (largest relative L2 of u, {coefficient: (true value, largest |error|)})
TARGETS = {
    "poisson1d": (1e-3, {}),
    "advection_diffusion": (1e-3, {"operator.c": (1.0, 1e-3), "operator.nu": (0.1, 1e-3)}),
    "wave": (1e-3, {"operator.c": (0.8, 1e-3)}),
    "helmholtz2d": (1e-3, {}),
    "heat2d": (2e-2, {}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TARGETS))
def test_problem_meets_its_target(name, tmp_path):
    metrics = problems.PROBLEMS[name](str(tmp_path), seed=0)
    tolerance, learned = TARGETS[name]
    assert metrics["relative_l2"] < tolerance
    for key, (true, error) in learned.items():
        entry = metrics["learned"][key]
        assert abs(entry["estimate"] - true) < error
        assert 0 < entry["laplace_std"] < np.inf
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["relative_l2"] == metrics["relative_l2"]
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000


def test_command_line_lists_every_experiment():
    text = experiments.parser().format_help()
    for name in ["heat", "seed", *problems.PROBLEMS]:
        assert name in text
    args = experiments.parser().parse_args(["wave", "--seed", "3", "--dtype", "float32"])
    assert (args.experiment, args.seed, args.dtype) == ("wave", 3, "float32")
