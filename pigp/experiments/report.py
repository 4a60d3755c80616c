"""What every experiment reports: accuracy figures, JSON metrics and PNG figures."""

from __future__ import annotations

import json
import os

import numpy as np

__all__ = ["relative_l2", "accuracy", "jsonable", "figure", "finish"]


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
    """Write ``out/metrics.json``, print it, and return the metrics."""
    with open(os.path.join(out, "metrics.json"), "w") as handle:
        json.dump(metrics, handle, indent=2)
    print(json.dumps(metrics, indent=2))
    return metrics
