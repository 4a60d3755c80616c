"""``python -m benchmarks``: list, run and index the suite's cases (``suite.py``).

    python -m benchmarks                      # the cases, by group
    python -m benchmarks NAME [NAME ...]      # run cases; JSON under build/benchmarks/
    python -m benchmarks --group speed        # every case of a group
    python -m benchmarks NAME --publish       # JSON into benchmarks/results/ (the docs')
    python -m benchmarks NAME -- --seeds 1    # extra arguments for the script
    python -m benchmarks --index              # write benchmarks/README.md

Each case runs in a fresh process of its own (timings and peak memory are per
process); a case of the peers group needs the peers extra's environment: pass
``--python .venv-peers/bin/python``.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

from .suite import CASES, GROUPS, RETIRED, RETIRED_AT, TOOLS, by_name

ROOT = pathlib.Path(__file__).resolve().parents[1]


def listing() -> str:
    lines = []
    for group, about in GROUPS.items():
        lines.append(f"{group}: {about}")
        for case in CASES:
            if case.group == group:
                lines.append(f"  {case.name:<32} {case.about}")
    return "\n".join(lines)


def index() -> str:
    """``benchmarks/README.md``: each published table, its command and its JSON."""
    out = [
        "# Benchmarks",
        "",
        "One suite, `python -m benchmarks`, of named cases (`benchmarks/suite.py`). Each case is",
        "a script of this folder with its arguments: it prints a table and writes JSON. Run one",
        "with `python -m benchmarks NAME` (JSON under `build/benchmarks/`) or with `--publish`",
        "(JSON into `benchmarks/results/`, where the docs' tables are made from:",
        "`benchmarks/_tables.py`, run by the docs build). `python -m benchmarks` lists the cases;",
        "`python -m benchmarks --group NAME` runs a group. Tests never assert timings: the",
        "figures here are measurements, each from the run its page names; compare ratios",
        "measured in one run.",
        "",
        "Why a registry and not asv or pytest-benchmark: most cases measure accuracy and",
        "calibration over seeds (minutes to an hour each, errors and intervals in JSON), not",
        "timings of small functions across commits; asv's model (timing functions in fresh",
        "environments per commit) and pytest-benchmark's (timings inside tests) fit only the",
        "speed group, whose before-and-after comparisons `versions.py` makes in one run.",
        "",
        "This page is written by `python -m benchmarks --index`; a test checks it is current.",
        "",
    ]
    for group, about in GROUPS.items():
        out += [f"## {group}", "", about[0].upper() + about[1:] + ".", ""]
        out += [
            "| case | what it measures | command | JSON | published in |",
            "|---|---|---|---|---|",
        ]
        for case in CASES:
            if case.group != group:
                continue
            python = ".venv-peers/bin/python" if case.peers else "python"
            command = f"`{python} -m benchmarks {case.name} --publish`"
            out.append(
                f"| `{case.name}` | {case.about} | {command} | `{case.json}` | {case.page} |"
            )
        out.append("")
    out += [
        "`python -m benchmarks NAME --publish` runs "
        "`python benchmarks/SCRIPT ARGS --out benchmarks/results/JSON`.",
        "",
        "## Tools",
        "",
        "| script | what it does |",
        "|---|---|",
        *(f"| `{name}` | {about} |" for name, about in TOOLS.items()),
        "",
        "## Retired studies",
        "",
        f"Their findings stay on the page named and their JSON in `benchmarks/results/`; the "
        f"script is in git history (`git show {RETIRED_AT}:benchmarks/SCRIPT`).",
        "",
        "| script | findings | JSON |",
        "|---|---|---|",
        *(
            f"| `{name}` | {page} | {f'`{json}`' if json else '–'} |"
            for name, (page, json) in RETIRED.items()
        ),
        "",
    ]
    return "\n".join(out)


def run(case, python: str, publish: bool, extra: list) -> int:
    out = case.published if publish else f"build/benchmarks/{case.json}"
    command = [python, *case.command(out), *extra]
    print(f"== {case.name}: {' '.join(command)}", flush=True)
    return subprocess.run(command, cwd=ROOT).returncode


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", help="cases to run (none: list them)")
    parser.add_argument("--group", choices=list(GROUPS), help="run every case of a group")
    parser.add_argument(
        "--publish", action="store_true", help="write the JSON into benchmarks/results/"
    )
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run with")
    parser.add_argument("--index", action="store_true", help="write benchmarks/README.md")
    args = parser.parse_args(argv)
    if args.index:
        (ROOT / "benchmarks" / "README.md").write_text(index())
        return 0
    cases = by_name()
    unknown = [name for name in args.names if name not in cases]
    if unknown:
        parser.error(f"no case {', '.join(unknown)}; python -m benchmarks lists them")
    chosen = [cases[name] for name in args.names]
    chosen += [case for case in CASES if case.group == args.group and case not in chosen]
    if not chosen:
        print(listing())
        return 0
    failed = [case.name for case in chosen if run(case, args.python, args.publish, extra)]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
