"""Where the benchmark scripts write their JSON."""

import json
import os


def write_json(path: str, data) -> None:
    """Write ``data`` to ``path`` as indented JSON, creating its folder."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2)
