"""The command line: help without TensorFlow, a summary table or JSON, and user errors as
one line on stderr with exit code 2."""

import inspect
import json
import os
import subprocess
import sys

import pytest

from pigp.experiments import cli


@pytest.mark.parametrize(
    "argv,message",
    [
        (["heat", "--out", "{file}"], "--out: '{file}' exists and is not a folder"),
        (["heat", "--out", "{file}/sub"], "--out: cannot create the folder '{file}/sub'"),
        (["heat", "--seed", "abc"], "argument --seed: invalid int value: 'abc'"),
        (["nope"], "argument EXPERIMENT: invalid choice: 'nope'"),
        ([], "the following arguments are required: EXPERIMENT"),
    ],
    ids=["existing-file", "under-a-file", "bad-seed", "unknown", "missing"],
)
def test_user_errors_are_one_line_and_exit_code_two(argv, message, tmp_path, capsys):
    file = tmp_path / "taken.txt"
    file.write_text("")
    argv = [a.format(file=file) for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pigp: error: {message.format(file=file)}")
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err


def test_an_example_script_reports_a_bad_out_in_one_line(tmp_path):
    file = tmp_path / "taken.txt"
    file.write_text("")
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "heat_equation.py")
    result = subprocess.run(
        [sys.executable, example, "--out", str(file)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"heat_equation.py: error: --out: '{file}' exists and is not a folder"
    ]


def _python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )


def test_help_answers_without_importing_tensorflow():
    result = _python(
        "import sys\n"
        "from pigp.experiments import cli\n"
        "try:\n"
        "    cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('tensorflow imported:', 'tensorflow' in sys.modules)"
    )
    assert result.returncode == 0 and result.stderr == ""
    assert "tensorflow imported: False" in result.stdout
    for name in cli.EXPERIMENTS:
        assert name in result.stdout
    # The console script prints no TensorFlow log line either.
    script = os.path.join(os.path.dirname(sys.executable), "pigp")
    if os.path.exists(script):
        done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == "" and "usage: pigp" in done.stdout


def test_experiment_help_shows_its_description_as_written(capsys):
    with pytest.raises(SystemExit):
        cli.main(["heat", "--help"])
    out = capsys.readouterr().out
    assert "noise-free and with 1% noise" in out and "%%" not in out
    assert "seed, ..., seed + 4" in out  # the docstring's own line breaks


def test_the_catalog_lists_every_experiment_with_its_docstring():
    from pigp.experiments import heat, nonlinear, problems, systems

    functions = {
        **heat.EXPERIMENTS,
        **problems.PROBLEMS,
        **nonlinear.NONLINEAR,
        **systems.SYSTEMS,
    }
    assert list(cli.EXPERIMENTS) == list(functions)
    for name, function in functions.items():
        assert cli._docstring(name) == inspect.getdoc(function)


def test_an_experiment_prints_a_summary_or_with_json_the_metrics(tmp_path, capsys):
    out = tmp_path / "poisson"
    assert cli.main(["poisson1d", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    metrics = json.loads((out / "metrics.json").read_text())
    lines = printed.splitlines()
    assert lines[0].split() == ["part", "rel.", "L2", "of", "u", "95%", "coverage", "fit", "s"]
    assert lines[2].split()[:3] == [
        "poisson1d",
        f"{metrics['relative_l2']:.3g}",
        f"{metrics['coverage_95']:.3g}",
    ]
    assert lines[-1] == f"all metrics: {out / 'metrics.json'}"
    assert "{" not in printed  # no JSON

    assert cli.main(["poisson1d", "--quick", "--json", "--out", str(tmp_path / "again")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == json.loads((tmp_path / "again" / "metrics.json").read_text())
    assert again["relative_l2"] == metrics["relative_l2"]  # deterministic
    assert metrics["noise"] == 0.0

    # --noise: the same design with 5% noise on every target (seeded): a larger error.
    assert cli.main(["poisson1d", "--quick", "--noise", "0.05", "--out", str(tmp_path / "n")]) == 0
    capsys.readouterr()
    noisy = json.loads((tmp_path / "n" / "metrics.json").read_text())
    assert noisy["noise"] == 0.05
    assert noisy["relative_l2"] > 10 * metrics["relative_l2"]
    assert cli.main(["poisson1d", "--noise", "-1"]) == 2
    assert "--noise: expected a number >= 0" in capsys.readouterr().err
    assert cli.main(["heat", "--noise", "0.01"]) == 2  # heat has its own noisy cases


def test_the_summary_lists_draws_and_learned_coefficients():
    from pigp.experiments.report import summary

    metrics = {
        "experiment": "demo",
        "noise_1pct": {
            "draws": [{"seed": 3, "relative_l2": 0.012345, "coverage_95": 0.9, "fit_seconds": 2.0}],
            "max_relative_l2": 0.012345,
            "pooled_coverage_95": 0.9,
        },
        "learned": {"nu": {"true": 0.1, "start": 0.5, "estimate": 0.100123, "laplace_std": 2e-4}},
    }
    rows = [line.split() for line in summary(metrics).splitlines()]
    assert ["noise_1pct/draws", "seed", "3", "0.0123", "0.9", "2.0"] in rows
    assert ["noise_1pct", "(all", "draws)", "max", "0.0123", "pooled", "0.9"] in rows
    # The estimate shows two digits past where it departs from the truth: 1.23e-4.
    assert ["nu", "0.100123", "0.1", "0.000123", "0.0002"] in rows
    metrics["learned"]["nu"]["estimate"] = 0.1 + 4e-7
    rows = [line.split() for line in summary(metrics).splitlines()]
    assert ["nu", "0.1000004", "0.1", "4e-07", "0.0002"] in rows
