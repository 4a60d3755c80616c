"""The command line: user errors are one line on stderr and exit code 2."""

import os
import subprocess
import sys

import pytest

from pigp.experiments import cli


@pytest.mark.parametrize("argv,message", [
    (["heat", "--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    (["heat", "--out", "{file}/sub"], "--out: cannot create the folder '{file}/sub'"),
    (["heat", "--seed", "abc"], "argument --seed: invalid int value: 'abc'"),
    (["nope"], "argument EXPERIMENT: invalid choice: 'nope'"),
    ([], "the following arguments are required: EXPERIMENT"),
], ids=["existing-file", "under-a-file", "bad-seed", "unknown", "missing"])
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
    result = subprocess.run([sys.executable, example, "--out", str(file)], capture_output=True,
                            text=True, timeout=120, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 2
    # (TensorFlow's own start-up log lines, if any, are not the command's.)
    lines = [line for line in result.stderr.splitlines() if line.startswith("heat_equation")]
    assert lines == [f"heat_equation.py: error: --out: '{file}' exists and is not a folder"]
    assert "Traceback" not in result.stderr
