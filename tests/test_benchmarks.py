"""The benchmark suite's registry: every case runs a script that exists with its
published JSON beside it, the index is current, and the runner lists and refuses."""

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.__main__ import index  # noqa: E402
from benchmarks.suite import CASES, GROUPS, RETIRED, TOOLS  # noqa: E402


def test_every_case_has_its_script_its_json_and_a_page():
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    for case in CASES:
        assert case.group in GROUPS, case.name
        assert (ROOT / "benchmarks" / case.script).is_file(), case.name
        json.loads((ROOT / case.published).read_text())  # published and readable
        page = case.page.split("#")[0].split(" ")[0].rstrip(";")
        assert (ROOT / page).is_file(), (case.name, page)


def test_every_script_is_a_case_a_tool_or_a_helper_and_retired_ones_are_gone():
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    used = {case.script for case in CASES} | set(TOOLS) | {"__init__.py", "__main__.py", "suite.py"}
    assert scripts == used, sorted(scripts ^ used)
    assert not set(RETIRED) & scripts


def test_the_index_is_current_and_names_every_published_json():
    text = (ROOT / "benchmarks" / "README.md").read_text()
    assert text == index(), "run: python -m benchmarks --index"
    for case in CASES:
        assert f"`{case.json}`" in text


def test_the_runner_lists_and_refuses_an_unknown_case():
    listed = subprocess.run(
        [sys.executable, "-m", "benchmarks"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0 and "pde-suite" in listed.stdout
    unknown = subprocess.run(
        [sys.executable, "-m", "benchmarks", "no-such-case"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unknown.returncode == 2 and "no case no-such-case" in unknown.stderr
