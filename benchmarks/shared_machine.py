"""A fit on a machine shared with other jobs: wall and CPU time, alone and beside them.

Each workload runs in a fresh process, first alone, then beside ``--jobs`` other
processes that keep the cores busy: copies of the same workload in a loop (other
TensorFlow jobs) or plain Python loops (``--others python``). A fair share of 2
cores beside 2 busy jobs is half of them, so a fit that degrades in proportion takes
about 2x its time alone (1 job: 1.5x) and about the same CPU time; threads that spin
while they wait for each other burn CPU instead, and the fit's CPU time grows.

    python benchmarks/shared_machine.py --out benchmarks/results/shared_machine.json
    python benchmarks/shared_machine.py --threads blas-all   # the BLAS's own threads
"""

import argparse
import json
import os
import subprocess
import sys
import time

from common import write_json

HERE = os.path.dirname(os.path.abspath(__file__))

#: A child's set-up: the heat problem with ``n`` u and ``n`` f values at random points,
#: ``make()`` a new model, one first fit that compiles.
SETUP = """
import numpy as np, pigp
from pigp.experiments import heat_solution
rng = np.random.default_rng(0)
X_u, X_f = rng.uniform(size=({n}, 2)), rng.uniform(size=({n}, 2))
y_u, y_f = heat_solution(X_u)[0], heat_solution(X_f)[1]
make = lambda: pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat({operator}),
                         noise_u={noise}, noise_f={noise})
make().fit(X_u, y_u, X_f, y_f{warm})   # compile first
"""
ADAM = ', steps={}, optimizer="adam"'
#: Child programs: set-up, then what is timed (the program prints wall and CPU time).
WORKLOADS = {
    # 800 values of the heat problem, 250 Adam steps (the report that found the slowdown)
    "heat-800": SETUP.format(n=400, operator="1.0", noise="1e-3", warm=ADAM.format(5)),
    # 3000 values, 10 Adam steps: where the BLAS's own threads pay alone
    "heat-3000": SETUP.format(n=1500, operator="1.0", noise="1e-3", warm=ADAM.format(2)),
    # the 40-point inverse heat problem's default fit (benchmarks/everyday.py)
    "everyday-40": SETUP.format(
        n=20, operator="pigp.Parameter(2.0, positive=True)", noise="None", warm=""
    ),
}
RUN = {
    "heat-800": "make().fit(X_u, y_u, X_f, y_f" + ADAM.format(250) + ")",
    "heat-3000": "make().fit(X_u, y_u, X_f, y_f" + ADAM.format(10) + ")",
    "everyday-40": "[make().fit(X_u, y_u, X_f, y_f) for _ in range(10)]",
}
TIMED = """
import json, resource, time, warnings
warnings.simplefilter("ignore")
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0, t0 = cpu(), time.perf_counter()
{run}
print(json.dumps({{"wall": time.perf_counter() - t0, "cpu": cpu() - c0}}))
"""
LOOP = "\nwhile True:\n    {run}\n"
PYTHON_LOOP = "while True:\n    sum(range(10**6))\n"


#: Thread settings to compare: environment variables of the fit and the other jobs.
#: "pigp": pigp's default (one BLAS thread inside its calls, ``pigp._threads``);
#: "blas-all": the BLAS's own threads (``PIGP_BLAS_THREADS=all``, pigp before).
SETTINGS = {
    "pigp": {},
    "blas-all": {"PIGP_BLAS_THREADS": "all"},
    "blas-all-tf1": {
        "PIGP_BLAS_THREADS": "all",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
    },
}
_VARIABLES = {"PIGP_BLAS_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"}


def environment(threads: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _VARIABLES}
    env.update(SETTINGS[threads])
    return env


def measure(workload: str, jobs: int, others: str, threads: str) -> dict:
    env = environment(threads)
    background = []
    for _ in range(jobs):
        code = (
            PYTHON_LOOP
            if others == "python"
            else WORKLOADS[workload] + LOOP.format(run=RUN[workload])
        )
        background.append(
            subprocess.Popen(
                [sys.executable, "-c", code],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        if jobs:
            time.sleep(15)  # the others past their start and compilation
        code = WORKLOADS[workload] + TIMED.format(run=RUN[workload])
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=3000,
            check=True,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        for process in background:
            process.kill()
            process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--jobs", nargs="*", type=int, default=[0, 2])
    parser.add_argument("--others", default="tensorflow", choices=["tensorflow", "python"])
    parser.add_argument(
        "--threads",
        nargs="*",
        default=["pigp", "blas-all"],
        choices=list(SETTINGS),
        help="thread settings (SETTINGS)",
    )
    parser.add_argument("--out", default="build/benchmarks/shared_machine.json")
    args = parser.parse_args()
    rows = []
    print(
        f"{'workload':<12} {'threads':>8} {'jobs':>4} {'wall s':>8} {'cpu s':>8} "
        f"{'wall / alone':>12} {'cpu / alone':>11}",
        flush=True,
    )
    for workload in args.workloads:
        for threads in args.threads:
            alone = None
            for jobs in args.jobs:
                row = {
                    "workload": workload,
                    "threads": threads,
                    "jobs": jobs,
                    "others": args.others,
                    **measure(workload, jobs, args.others, threads),
                }
                alone = alone or (row if jobs == 0 else None)
                if alone:
                    row["wall_ratio"] = row["wall"] / alone["wall"]
                    row["cpu_ratio"] = row["cpu"] / alone["cpu"]
                rows.append(row)
                print(
                    f"{workload:<12} {threads:>8} {jobs:>4} {row['wall']:8.2f} "
                    f"{row['cpu']:8.2f} {row.get('wall_ratio', float('nan')):12.2f} "
                    f"{row.get('cpu_ratio', float('nan')):11.2f}",
                    flush=True,
                )
    write_json(args.out, {"cores": os.cpu_count(), "rows": rows})


if __name__ == "__main__":
    main()
