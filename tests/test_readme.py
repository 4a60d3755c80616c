"""The README's quick-start code runs and does what it says, and its headline results
are the ones the docs' pages hold."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _tables():
    spec = importlib.util.spec_from_file_location("tables", ROOT / "benchmarks" / "_tables.py")
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    return tables.TABLES


def page_text(path: Path) -> str:
    """A docs page as the site shows it: ``<!-- results: NAME -->`` lines become the
    table made from ``benchmarks/results/`` (``docs/hooks.py`` does the same)."""
    tables = _tables()
    return re.sub(r"<!-- results: ([\w-]+) -->", lambda m: tables[m.group(1)](), path.read_text())


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


def headlines() -> list:
    """The README's results table: (capability, headline, linked page, anchor)."""
    table = README.read_text().split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\| ([^|]+) \| (.+) \| \[\w+\]\(docs/([\w/]+\.md)(?:#([\w-]+))?\) \|$", table, re.M
    )
    return rows


def test_the_readme_is_a_front_door():
    """About 200 lines: the two set-up commands first, a quick start, a gallery, one
    headline per capability."""
    text = README.read_text()
    assert len(text.splitlines()) <= 220
    first = re.findall(r"```bash\n(.*?)\n```", text, re.S)[:2]
    assert first[0].endswith("python examples/heat_equation.py --out results/heat")
    ci = (ROOT / ".ci" / "run").read_text()
    assert first[1].split("&& ", 1)[1] in ci  # .ci/run runs the README's test command
    assert {row[0] for row in headlines()} >= {
        "linear PDE",
        "inverse problem",
        "nonlinear PDE",
        "several fields",
        "large data",
        "calibration",
    }


@pytest.mark.parametrize("row", headlines(), ids=lambda row: row[0])
def test_each_headline_figure_is_on_the_page_it_links(row):
    """Every number the README's headline quotes (errors like 7.8e-6, ratios like 38x,
    times) appears on the linked docs page, and the anchor is one of its headings."""
    _, headline, page, anchor = row
    text = page_text(ROOT / "docs" / page)
    figures = re.findall(
        r"\d+(?:\.\d+)?e-\d+|\d+(?:\.\d+)?x\b|\d+(?:\.\d+)? (?:ms|s|GiB)\b", headline
    )
    for figure in figures:
        assert figure in text, (page, figure)
    if anchor:
        slugs = {
            re.sub(r"[^\w\- ]", "", h.lower()).strip().replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", text, re.M)
        }
        assert anchor in slugs, (page, anchor, sorted(slugs))


def test_the_moved_tables_are_the_benchmark_runs():
    """The calibration and performance tables that left the README are made on their
    pages from ``benchmarks/results/`` (``<!-- results: NAME -->``)."""
    assert "<!-- results: calibration -->" in (ROOT / "docs" / "guide.md").read_text()
    assert "<!-- results: performance-readme -->" in (ROOT / "docs" / "results.md").read_text()
