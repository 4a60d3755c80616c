"""pigp.compilation_cache: the flag it sets, its errors, and a second process that
loads the first one's programs and gives the same fit, bit for bit."""

import os
import re
import subprocess
import sys

import pytest

from pigp import compilation
from pigp.compilation import FLAG, compilation_cache


def test_sets_the_flag_beside_other_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=0")
    path = compilation_cache(tmp_path / "cache")
    assert path == str(tmp_path / "cache") and os.path.isdir(path)
    assert os.environ["TF_XLA_FLAGS"].split() == ["--tf_xla_auto_jit=0", f"{FLAG}={path}"]
    # Again with the same folder: nothing added.
    compilation_cache(str(tmp_path / "cache"))
    assert os.environ["TF_XLA_FLAGS"].count(FLAG) == 1


def test_errors_name_the_argument_and_change_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_XLA_FLAGS", "")  # restored after the test
    file = tmp_path / "taken"
    file.write_text("")
    for bad, message in (
        (None, "directory: expected a folder's path, got None"),
        ("", "directory: expected a folder's path, got ''"),
        (file / "sub", "directory: cannot create"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            compilation_cache(bad)
        assert os.environ["TF_XLA_FLAGS"] == ""
    compilation_cache(tmp_path / "a")
    with pytest.raises(ValueError, match="directory: TF_XLA_FLAGS already keeps compiled"):
        compilation_cache(tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_importing_it_does_not_import_tensorflow():
    code = "import sys, pigp; pigp.compilation_cache; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
    assert compilation.__all__ == ["compilation_cache"]


FIT = """
import sys
import numpy as np
import pigp
pigp.compilation_cache(sys.argv[1])
pigp.fitting.training.SECONDS_PER_CALL = float(sys.argv[2])  # how the 30 steps split into calls
X_u = np.stack([np.linspace(0, 1, 6), np.zeros(6)], 1)
X_f = np.random.default_rng(0).uniform(size=(8, 2))
u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
model.fit(X_u, u(X_u), X_f, (np.pi**2 - 1) * u(X_f), steps=30, optimizer="adam")
print(" ".join(float(v).hex() for v in model.history))
"""


@pytest.mark.slow
def test_a_second_process_loads_the_programs_and_fits_the_same(tmp_path):
    cache = tmp_path / "xla"
    env = {k: v for k, v in os.environ.items() if k != "TF_XLA_FLAGS"}
    runs = []
    # The second process splits Adam's steps into other calls (one step each): what
    # runs between the calls must not change the names, hence the cache keys, of the
    # programs traced after them.
    for seconds_per_call in ("0.2", "1e-9"):
        done = subprocess.run(
            [sys.executable, "-c", FIT, str(cache), seconds_per_call],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(done.stdout.split())
        if len(runs) == 1:
            written = sorted(os.listdir(cache))
            assert written, "the first process wrote no compiled program"
    assert sorted(os.listdir(cache)) == written  # the second one loaded them
    assert len(runs[0]) == 30 and runs[0] == runs[1]
