"""Where the benchmark scripts write their JSON."""

import json
import os


def write_json(path: str, data) -> None:
    """Write ``data`` to ``path`` as indented JSON, creating its folder."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2)


def best_of(function, repeats=3) -> float:
    """The shortest of ``repeats`` wall times of ``function()``, in seconds."""
    import time

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def print_row(row: dict, columns, width: int) -> None:
    """One table row: ``row["problem"]`` padded to ``width``, the seed, then each
    ``(key, format)`` of ``columns`` (blank where ``row`` has no such key)."""
    cells = [f"{row['problem']:<{width}}", f"{row['seed']:>4}"]
    for key, form in columns:
        cells.append(form.format(row[key]) if key in row else " " * len(form.format(0)))
    print(" ".join(cells), flush=True)
