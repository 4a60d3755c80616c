"""The docs site builds in strict mode, with every tutorial executed."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIALS = ["quickstart", "seed_problem", "custom_operator", "learning_coefficients",
             "choosing_a_kernel", "plotting"]


@pytest.mark.slow
def test_mkdocs_build_strict_executes_the_tutorials(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                    str(tmp_path)], cwd=ROOT, env=env, check=True, capture_output=True)
    for name in TUTORIALS:
        page = (tmp_path / "tutorials" / name / "index.html").read_text()
        assert f"../figures/{name}_0.png" in page
        assert (tmp_path / "tutorials" / "figures" / f"{name}_0.png").stat().st_size > 10_000
    quickstart = (tmp_path / "tutorials" / "quickstart" / "index.html").read_text()
    assert "relative L2 error of u on the grid: " in quickstart
    assert "pigp.PIGP.fit" in (tmp_path / "api" / "index.html").read_text()
    # The kernel tutorial's printed errors: the spectral mixture's is far below the SE's.
    kernels = (tmp_path / "tutorials" / "choosing_a_kernel" / "index.html").read_text()
    errors = [float(e) for e in re.findall(r"relative L2 of u ([0-9.e+-]+)", kernels)]
    assert len(errors) == 2 and errors[1] < 1e-4 < 1e-3 < errors[0]
