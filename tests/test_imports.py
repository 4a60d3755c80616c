"""The package's modules import each other without cycles."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "pigp"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: pathlib.Path, modules: set) -> set:
    """The pigp modules ``path`` imports, at module level or inside functions."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from . import kernels`` imports the submodule pigp.kernels.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def graph() -> dict:
    paths = sorted(ROOT.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports(p, modules) for p in paths}


def find_cycle(edges: dict):
    """A list of modules forming a cycle, or None (depth-first search)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_checker_finds_a_cycle_and_resolves_relative_imports():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    edges = graph()
    assert "pigp.kernels.covariance" in edges["pigp"]  # from . import covariance
    assert "pigp.experiments.report" in edges["pigp.experiments.heat"]  # from .report import
    assert "pigp.linalg" in edges["pigp.engines.dense.posterior"]


def test_no_import_cycles():
    cycle = find_cycle(graph())
    if cycle:
        pytest.fail("import cycle: " + " -> ".join(cycle))


@pytest.mark.parametrize("first", ["pigp", "pigp, then tensorflow", "tensorflow, then pigp"])
def test_import_and_a_first_fit_print_nothing_on_stderr(first):
    """TensorFlow's C++ start-up lines and TFP's distutils warning stay off, even with
    Python's warnings shown (-W default), unless TF_CPP_MIN_LOG_LEVEL is set; also
    where the program imports tensorflow itself after pigp. Where it imports tensorflow
    first, TensorFlow's own import lines are written before pigp exists; nothing after
    ``import pigp``."""
    import os
    import subprocess
    import sys

    code = (
        ("import sys, tensorflow\nprint('pigp', file=sys.stderr)\n" if first[0] == "t" else "")
        + "import numpy as np, pigp, pigp.inference.nuts\n"
        + ("import tensorflow as tf\n" if first == "pigp, then tensorflow" else "")
        + "m = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.D('x', 2), dims=('x',))\n"
        "x = np.linspace(0, 1, 8)[:, None]\n"
        "m.fit(x[[0, -1]], np.sin(x[[0, -1], 0]), x, -np.sin(x[:, 0]), steps=20)\n"
        "print(m.predict(x)[0].shape)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(8,)"
    after = done.stderr.split("pigp\n")[-1] if first[0] == "t" else done.stderr
    assert after == "", after


def test_fitting_is_a_floor_below_the_models():
    """``pigp.fitting`` takes the model as an argument: none of its modules imports a
    model class's module (no arrow back up), and the sampler's driver does not either."""
    edges = graph()
    above = {
        "pigp.engines.dense.model",
        "pigp.engines.variational.model",
        "pigp.engines.model",
        "pigp.inference.sampler",
    }
    for name, targets in edges.items():
        if name.startswith("pigp.fitting") or name == "pigp.inference.sampler":
            assert not targets & (above - {name}), (name, sorted(targets & above))
    assert "pigp.fitting" in edges["pigp.engines.dense.model"]


def test_no_module_is_longer_than_700_lines():
    """One concept a module: a file past 700 lines holds more than one."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 700
    }
    assert not long, long


def folder(module: str) -> str:
    """The concept folder (``pigp.kernels``, ``pigp.engines``...) or module a module is in."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (ROOT / parts[-1]).is_dir() else module


def test_the_folders_import_one_way():
    """Between folders and top-level modules the imports form no cycle either: kernels
    below operators below data, fitting and inference below the engines, nothing
    below reaching up."""
    edges = {}
    for name, targets in graph().items():
        for target in targets:
            if folder(target) != folder(name):
                edges.setdefault(folder(name), set()).add(folder(target))
    cycle = find_cycle(edges)
    assert cycle is None, " -> ".join(cycle)
    assert "pigp.kernels" in edges["pigp.operators"]
    assert "pigp.fitting" in edges["pigp.engines"]
    for low in ("pigp.kernels", "pigp.operators", "pigp.data", "pigp.fitting", "pigp.inference"):
        assert "pigp.engines" not in edges.get(low, set()), low


def test_moved_modules_import_by_their_old_names_as_the_same_objects():
    """``import pigp.models`` and the other paths from before the folders give the
    module at its new path (the same object), and ``pigp.<old name>`` too."""
    import importlib

    import pigp
    from pigp._moved import MOVED

    for old, new in MOVED.items():
        module = importlib.import_module(old)
        assert module is importlib.import_module(new), old
        assert getattr(pigp, old.rpartition(".")[2]) is module, old
    from pigp.models import PIGP

    assert PIGP is pigp.PIGP
    assert pigp.kernels.SquaredExponential.__module__ == "pigp.kernels"
    assert pigp.operators.D.__module__ == "pigp.operators"
