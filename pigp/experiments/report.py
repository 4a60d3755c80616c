"""What every experiment reports: accuracy figures, JSON metrics and PNG figures."""

from __future__ import annotations

import json
import math
import os

import numpy as np

__all__ = ["relative_l2", "accuracy", "jsonable", "figure", "finish", "summary", "MAPS_SIZE"]

# Inches of a 2 x 2 grid of maps: legible at a page's content width.
MAPS_SIZE = (9.0, 7.4)


def relative_l2(estimate, truth) -> float:
    """``||estimate - truth|| / ||truth||``."""
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def accuracy(mean, var, truth) -> dict:
    """Relative L2 and max abs error, mean posterior std, and 95% band coverage."""
    std = np.sqrt(var)
    return {
        "relative_l2": relative_l2(mean, truth),
        "max_abs_error": float(np.max(np.abs(mean - truth))),
        "mean_posterior_std": float(np.mean(std)),
        "coverage_95": float(np.mean(np.abs(mean - truth) <= 1.959964 * std)),
    }


def jsonable(values: dict) -> dict:
    """Parameter values with arrays as lists."""
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in values.items()}


def figure(out: str, name: str, draw, size) -> None:
    """``draw(fig)`` on a new figure of ``size`` inches, saved as ``out/name``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=size, constrained_layout=True)
    draw(fig)
    fig.savefig(os.path.join(out, name), dpi=110)
    plt.close(fig)


def finish(out: str, metrics: dict) -> dict:
    """Write ``out/metrics.json`` and return the metrics."""
    with open(os.path.join(out, "metrics.json"), "w") as handle:
        json.dump(metrics, handle, indent=2)
    return metrics


def _number(value: float) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _estimate(estimate: float, true: float) -> str:
    """``estimate`` with the digits that show where it departs from ``true`` (two
    beyond the first that differs; at least 3, at most 15 significant)."""
    error = abs(estimate - true)
    size = max(abs(estimate), abs(true))
    if error == 0 or size == 0:
        return _number(estimate)
    first = math.floor(math.log10(size)) - math.floor(math.log10(error)) + 1
    digits = min(15, max(3, first + 2))
    return f"{estimate:.{digits}g}"


def summary(metrics: dict) -> str:
    """A short table of what an experiment's metrics say: for every part that has
    an accuracy (relative L2 of u, 95% band coverage, fit time) one row, then each
    learned coefficient: its estimate (with the digits where it departs from the
    truth), the true value, the absolute error and the Laplace std. Other numbers
    to 3 significant digits."""
    rows = [("part", "rel. L2 of u", "95% coverage", "fit s")]
    learned = [("coefficient", "estimate", "true", "abs. error", "Laplace std")]

    def walk(path: str, value) -> None:
        if not isinstance(value, dict):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, dict) and "seed" in item:
                        walk(f"{path} seed {item['seed']}", item)
            return
        if "relative_l2" in value:
            rows.append(
                (
                    path or metrics.get("experiment", "result"),
                    _number(value["relative_l2"]),
                    _number(value["coverage_95"]) if "coverage_95" in value else "",
                    f"{value['fit_seconds']:.1f}" if "fit_seconds" in value else "",
                )
            )
        if "max_relative_l2" in value:
            rows.append(
                (
                    f"{path} (all draws)",
                    f"max {_number(value['max_relative_l2'])}",
                    f"pooled {_number(value['pooled_coverage_95'])}",
                    "",
                )
            )
        for key, item in value.get("learned", {}).items():
            learned.append(
                (
                    key,
                    _estimate(item["estimate"], item["true"]),
                    _number(item["true"]),
                    _number(abs(item["estimate"] - item["true"])),
                    _number(item["laplace_std"]),
                )
            )
        for key, item in value.items():
            if key != "learned" and isinstance(item, (dict, list)):
                walk(f"{path}/{key}".strip("/"), item)

    walk("", metrics)
    text = _table(rows)
    if len(learned) > 1:
        text += "\n\n" + _table(learned)
    return text


def _table(rows) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
