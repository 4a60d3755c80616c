"""The benchmark suite's registry: every named case, what it measures, the command it
runs and the JSON and page that publish it.

``python -m benchmarks`` lists the cases by group; ``python -m benchmarks NAME`` runs
one (``--publish`` writes its JSON where the docs read it, ``benchmarks/results/``;
otherwise under ``build/benchmarks/``); ``python -m benchmarks --index`` writes
``benchmarks/README.md`` from this table, and a test checks that it is current.

A case is a script of this folder and its arguments: each script prints a table and
writes JSON (``--out``), and runs on its own too (``python benchmarks/NAME.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The groups, in the order the index shows them, with what their cases measure.
GROUPS = {
    "accuracy": "errors against closed forms and reference solvers, per problem and seed",
    "calibration": "whether intervals and bands hold the truth as often as they say",
    "speed": "where the time goes: steps, schedules, compilation, fresh processes",
    "scale": "memory and time as the data grow",
    "peers": "pigp beside GPflow, DeepXDE and the published figures",
    "studies": "one question each, answered once; kept runnable for a rerun",
}


@dataclass(frozen=True)
class Case:
    name: str
    group: str
    script: str  # in benchmarks/
    args: tuple  # without --out
    json: str  # in benchmarks/results/
    page: str  # the docs page (and section) that publishes it
    about: str
    peers: bool = False  # needs the peers extra's environment (.venv-peers)

    def command(self, out: str | None = None) -> list:
        return [f"benchmarks/{self.script}", *self.args, "--out", out or self.published]

    @property
    def published(self) -> str:
        return f"benchmarks/results/{self.json}"


def _calibration(family: str, noise: str, kernel: str | None = None) -> Case:
    suffix = f"_{kernel}" if kernel else ""
    args = ("--family", family, "--noise", noise) + (("--kernel", kernel) if kernel else ())
    return Case(
        f"calibration-{family}-{noise}{suffix.replace('_', '-')}",
        "calibration",
        "calibration.py",
        args,
        f"calibration_{family}_{noise}{suffix}.json",
        "docs/calibration.md (calibration table)",
        f"α's Laplace and NUTS intervals over 20 seeds: the {family} family at {noise} noise"
        + (f", {kernel} kernel" if kernel else ", squared exponential"),
    )


CASES = [
    # accuracy
    Case(
        "heat-schedules",
        "accuracy",
        "schedules.py",
        (),
        "schedules.json",
        "docs/results.md#the-heat-equation",
        "the heat example and every example problem under the default schedule and 2000 "
        "Adam steps: errors, coverage, fit times",
    ),
    Case(
        "pde-suite",
        "accuracy",
        "pde_suite.py",
        ("--seeds", "3"),
        "pde_suite.json",
        "docs/results.md#every-example-problem",
        "every example problem over 3 seeds: u's error and learned coefficients",
    ),
    Case(
        "raissi-inverse",
        "accuracy",
        "raissi_inverse.py",
        ("--seeds", "5"),
        "raissi_inverse.json",
        "docs/results.md#raissi-et-als-inverse-heat-problem",
        "Raissi et al.'s inverse heat problem, SE and spectral mixture, 5 seeds",
    ),
    Case(
        "elliptic-darcy",
        "accuracy",
        "nonlinear.py",
        ("--problems", "elliptic", "darcy"),
        "nonlinear_elliptic_darcy.json",
        "docs/results.md#a-conductivity-that-varies-in-space",
        "−Δu + u³ = f and Darcy with a varying conductivity, forward and inverse",
    ),
    Case(
        "burgers-kernels",
        "accuracy",
        "nonlinear.py",
        ("--problems", "burgers", "burgers-fine", "--burgers-seeds", "0", "1", "2", "3", "4"),
        "nonlinear_burgers_kernels.json",
        "docs/results.md#nonlinear-equations-by-gaussnewton",
        "Burgers (ν = 0.02) at 1000 + 200 and 2400 + 200 points, SE and RQ, 5 seeds",
    ),
    Case(
        "burgers-front",
        "accuracy",
        "nonlinear.py",
        (
            "--problems",
            "burgers",
            "--kernels",
            "rational_quadratic_front",
            "--burgers-seeds",
            "0",
            "1",
            "2",
            "3",
            "4",
        ),
        "nonlinear_front_main_env.json",
        "docs/results.md#nonlinear-equations-by-gaussnewton",
        "Burgers with the RQ kernel warped around the front, 5 seeds",
    ),
    Case(
        "burgers-front-fine",
        "accuracy",
        "nonlinear.py",
        (
            "--problems",
            "burgers-fine",
            "--kernels",
            "rational_quadratic_front",
            "--burgers-seeds",
            "0",
            "1",
            "2",
            "3",
            "4",
        ),
        "nonlinear_front_fine.json",
        "docs/results.md#nonlinear-equations-by-gaussnewton",
        "the same at 2400 + 200 points",
    ),
    Case(
        "burgers-inverse",
        "accuracy",
        "nonlinear.py",
        ("--problems", "inverse"),
        "nonlinear_inverse.json",
        "docs/results.md#nonlinear-equations-by-gaussnewton",
        "Burgers' ν learned from 300 noisy u values, 1000 + 200 points, 5 seeds",
    ),
    Case(
        "burgers-inverse-2400",
        "accuracy",
        "nonlinear.py",
        ("--problems", "inverse", "--inverse-interior", "2400"),
        "nonlinear_inverse_2400.json",
        "docs/results.md#nonlinear-equations-by-gaussnewton",
        "the same at 2400 + 200 points",
    ),
    Case(
        "reaction-inverse",
        "accuracy",
        "reaction_inverse.py",
        (),
        "reaction_inverse.json",
        "docs/calibration.md (reaction coefficients)",
        "Fisher–KPP, Allen–Cahn and Zeldovich coefficients from three starts",
    ),
    Case(
        "navier-stokes",
        "accuracy",
        "navier_stokes.py",
        (),
        "navier_stokes.json",
        "docs/results.md#navierstokes",
        "steady Navier–Stokes over three fields: Kovasznay flow (u, v, p errors and bands, "
        "ν learned from noisy sensors over 5 seeds) and the lid-driven cavity against Ghia",
    ),
    Case(
        "navier-stokes-cavity-re",
        "accuracy",
        "navier_stokes.py",
        (
            "--problems",
            "cavity",
            "--cavity-re",
            "400",
            "1000",
            "--cavity-sizes",
            "30",
            "40",
            "--cavity-lengthscale",
            "0.15",
        ),
        "navier_stokes_cavity_re.json",
        "docs/results.md#navierstokes",
        "the lid-driven cavity at Re = 400 and 1000 against Ghia's centre lines",
    ),
    Case(
        "brusselator",
        "accuracy",
        "brusselator.py",
        (),
        "brusselator.json",
        "docs/results.md#a-nonlinear-system-in-time-the-brusselator",
        "two species, two nonlinear reaction-diffusion equations in time by space-time "
        "collocation over two fields, against the method of lines",
    ),
    Case(
        "nonlinear-noise",
        "calibration",
        "nonlinear_noise.py",
        (),
        "nonlinear_noise.json",
        "docs/results.md#noisy-data-passed-without-a-noise",
        "three nonlinear inverse problems whose noisy data are passed without a noise: "
        "what the fit keeps, the coefficient and its interval",
    ),
    Case(
        "systems",
        "accuracy",
        "systems.py",
        ("--problems", "stokes", "independent", "floor", "curl", "reaction-diffusion"),
        "systems.json",
        "docs/results.md#several-fields",
        "Stokes, a divergence-free field and a reaction–diffusion pair against independent GPs",
    ),
    Case(
        "systems-walls",
        "accuracy",
        "systems.py",
        ("--problems", "stokes-walls", "independent-walls", "floor-walls", "--seeds", "5"),
        "systems_walls.json",
        "docs/peers.md (Stokes with walls)",
        "Stokes with exact wall data, 5 seeds, against a GP per component",
    ),
    Case(
        "systems-floor",
        "accuracy",
        "systems.py",
        ("--problems", "floor", "independent", "--seeds", "20"),
        "systems_floor.json",
        "docs/results.md#several-fields",
        "the least-squares floor of the Stokes design without walls, 20 seeds",
    ),
    Case(
        "elasticity",
        "accuracy",
        "elasticity.py",
        (),
        "elasticity.json",
        "docs/performance.md (elasticity table)",
        "two-field plane elasticity of 480 values: fit, Laplace, peak memory",
    ),
    Case(
        "exact-data",
        "accuracy",
        "exact_data.py",
        (),
        "exact_data.json",
        "docs/reliability.md (noise choices)",
        "how a noise the user does not give is decided, on every example problem",
    ),
    Case(
        "extreme-data",
        "accuracy",
        "extreme_data.py",
        (),
        "extreme_data.json",
        "docs/reliability.md (extreme data)",
        "inputs and targets at extreme scales, 1 to 5000 points: a fit or a clear error",
    ),
    # calibration
    Case(
        "calibration-raissi",
        "calibration",
        "calibration.py",
        ("--seeds", "20", "--noise", "0.01"),
        "calibration.json",
        "docs/guide.md#priors-and-sampling",
        "Laplace against NUTS on Raissi's problem with 1% noise, 20 seeds",
    ),
    Case(
        "calibration-noise-free",
        "calibration",
        "calibration.py",
        ("--seeds", "20", "--noise", "0", "--noise-floor", "1e-4"),
        "calibration_noise_free.json",
        "docs/guide.md#priors-and-sampling",
        "the same without noise, with a noise floor of 1e-4",
    ),
    *(
        _calibration(family, noise, kernel)
        for family in ("everyday", "cosine", "slow")
        for noise in ("0.01", "0.05")
        for kernel in (None, "decaying")
    ),
    Case(
        "calibration-kinds",
        "calibration",
        "calibration_kinds.py",
        ("--seeds", "20"),
        "calibration_kinds.json",
        "docs/calibration.md#beyond-the-heat-family",
        "coefficient intervals and u's bands over 20 seeds of several fields (conditioned "
        "and counted), SparsePIGP, a nonlinear inverse problem and a coefficient function",
    ),
    # speed
    Case(
        "performance",
        "speed",
        "performance.py",
        (),
        "performance.json",
        "docs/performance.md; docs/results.md#performance",
        "Gram assembly, a training step, LAPACK and autodiff floors, GPflow's GPR step, "
        "prediction, fresh processes (GPflow row: peers environment)",
    ),
    Case(
        "everyday-versus-gpflow",
        "speed",
        "everyday.py",
        ("--versus-gpflow", "--kernels", "squared_exponential", "--seeds", "10"),
        "everyday_versus_gpflow.json",
        "docs/performance.md (everyday fits)",
        "a default fit of the 40-point inverse heat problem against GPflow's GPR fit",
        peers=True,
    ),
    Case(
        "everyday-fusion",
        "speed",
        "everyday.py",
        ("--fusion", "20", "40", "48", "52", "56", "64", "96", "128", "--seeds", "3"),
        "everyday_fusion.json",
        "docs/performance.md (fused programs)",
        "one XLA program against separate ones, by size",
    ),
    Case(
        "refit",
        "speed",
        "refit.py",
        (),
        "refit.json",
        "docs/results.md#against-a-plain-gp-and-a-pinn",
        "what compilation costs and what refitting one model saves",
    ),
    Case(
        "versions",
        "speed",
        "versions.py",
        ("--against", "90d24ee", "--rounds", "3"),
        "versions_90d24ee_fused.json",
        "docs/performance.md (before and after)",
        "two versions of pigp measured alternately in one run",
    ),
    Case(
        "shared-machine",
        "speed",
        "shared_machine.py",
        ("--jobs", "0", "1", "2"),
        "shared_machine.json",
        "docs/performance.md#on-a-shared-machine",
        "fits alone and beside one or two busy processes: wall and CPU time, pigp's BLAS "
        "threads against the BLAS's own",
    ),
    # scale
    Case(
        "memory",
        "scale",
        "memory.py",
        (),
        "memory.json",
        "docs/reliability.md (memory)",
        "peak memory of a fresh process per N against pigp.memory's estimate",
    ),
    Case(
        "memory-float32",
        "scale",
        "memory.py",
        ("--dtype", "float32", "--sizes", "2000", "4000", "6000", "8000", "10000"),
        "memory_float32.json",
        "docs/reliability.md (memory, float32)",
        "the same in float32",
    ),
    Case(
        "memory-fields",
        "scale",
        "memory.py",
        ("--fields", "2", "--sizes", "240", "480", "960"),
        "memory_fields.json",
        "docs/reliability.md (memory, two fields)",
        "the same for two fields, fit and Laplace",
    ),
    Case(
        "scale",
        "scale",
        "scale.py",
        ("--peers-python", ".venv-peers/bin/python"),
        "scale.json",
        "docs/performance.md (scale table); docs/guide.md#large-data",
        "SparsePIGP from 10⁴ to 10⁶ values beside GPflow's SVGP and the exact PIGP",
    ),
    Case(
        "sparse-collocation",
        "scale",
        "collocation_scale.py",
        ("--grids", "100", "200", "316", "500"),
        "collocation_scale.json",
        "docs/performance.md (Large PDE solves: sparse inverse-Cholesky collocation)",
        "the sparse inverse-Cholesky engine on -Δu + u³ = f by Gauss–Newton from 10⁴ to "
        "2.5·10⁵ interior points: error, time by stage, PCG iterations and peak memory "
        "(pigp.engines.cholesky)",
    ),
    Case(
        "engine-crossover",
        "scale",
        "engine_crossover.py",
        ("--grids", "20", "30", "40", "50", "60", "80", "100"),
        "engine_crossover.json",
        "docs/performance.md (Large PDE solves: sparse inverse-Cholesky collocation)",
        "PIGP with engine='dense' against engine='cholesky' on -Δu + u³ = f by N, the "
        "kernel held: time, error and peak memory (where the default engine switches)",
    ),
    Case(
        "vecchia-likelihood",
        "accuracy",
        "vecchia_likelihood.py",
        (),
        "vecchia_likelihood.json",
        "docs/performance.md (Large PDE solves: sparse inverse-Cholesky collocation)",
        "the Vecchia log-likelihood against the exact one at 2,500 u and f values of the "
        "heat equation: its value and the maximum in α and in a lengthscale, by ρ",
    ),
    Case(
        "sparse-agreement",
        "accuracy",
        "collocation_agreement.py",
        ("--grid", "50", "--rhos", "3", "4", "5", "6", "--nuggets", "1e-10", "1e-12"),
        "collocation_agreement.json",
        "docs/performance.md (Large PDE solves: sparse inverse-Cholesky collocation)",
        "the sparse engine against dense Gauss–Newton at 2,500 interior points (Poisson, "
        "-Δu + u³ = f, the heat equation and Burgers in space-time) by ρ and nugget: the "
        "posterior mean's distance from dense, errors, time",
    ),
    Case(
        "sparse-evolution",
        "accuracy",
        "collocation_evolution.py",
        ("--iterations", "25"),
        "collocation_evolution.json",
        "docs/performance.md (Large PDE solves: sparse inverse-Cholesky collocation)",
        "Burgers (ν = 0.02) and Allen–Cahn (ε = 1e-4) by space–time collocation through "
        "the sparse engine at 10⁴ and 1.28·10⁴ points against their references (larger "
        "grids and ν = 0.01/π by --runs)",
    ),
    Case(
        "sparse-evolution-windows",
        "accuracy",
        "collocation_evolution.py",
        (
            "--runs",
            "allen-cahn:0:256:200:0.05:0.05",
            "burgers:0.0031831:512:200:0.01:0.05",
            "--windows",
            "20",
            "--iterations",
            "30",
        ),
        "collocation_evolution_windows.json",
        "docs/performance.md (Large PDE solves: sparse inverse-Cholesky collocation)",
        "Allen–Cahn (ε = 1e-4) at 51,200 and Burgers (ν = 0.01/π) at 102,400 space–time "
        "points in 20 time windows (pigp.engines.cholesky.marching.march) against their "
        "references",
    ),
    Case(
        "sparse-heat-learning",
        "scale",
        "heat_large.py",
        ("--sizes", "10000"),
        "heat_large.json",
        "docs/performance.md (Large PDE solves: sparse inverse-Cholesky collocation)",
        "the diffusivity of u_t = αu_xx + f learned from 10⁴ noisy values by the sparse "
        "engine's Vecchia likelihood, against SparsePIGP given the same time",
    ),
    # peers
    Case(
        "peers",
        "peers",
        "peers.py",
        (),
        "peers.json",
        "docs/peers.md; docs/results.md#against-a-plain-gp-and-a-pinn",
        "pigp against GPflow's GPR, a DeepXDE PINN and a Crank–Nicolson solver",
        peers=True,
    ),
    Case(
        "kernels",
        "peers",
        "kernels.py",
        (),
        "kernels.json",
        "docs/results.md#against-a-plain-gp-and-a-pinn",
        "the peers problems with the spectral mixture",
    ),
    Case(
        "burgers-pinn-fine",
        "peers",
        "nonlinear.py",
        (
            "--problems",
            "burgers-fine",
            "pinn-fine",
            "--kernels",
            "rational_quadratic",
            "--burgers-seeds",
            "0",
            "1",
            "2",
        ),
        "nonlinear_fine_recheck.json",
        "docs/results.md#nonlinear-equations-by-gaussnewton",
        "Burgers at 2400 + 200 points beside a DeepXDE PINN",
        peers=True,
    ),
    Case(
        "burgers-pinn-forming",
        "peers",
        "nonlinear.py",
        (
            "--problems",
            "burgers",
            "pinn",
            "--kernels",
            "rational_quadratic_forming",
            "--burgers-seeds",
            "0",
            "1",
            "2",
            "3",
            "4",
        ),
        "nonlinear_forming.json",
        "docs/results.md#nonlinear-equations-by-gaussnewton",
        "Burgers with the forming-front warp beside a DeepXDE PINN",
        peers=True,
    ),
    Case(
        "stokes-pinn",
        "peers",
        "systems.py",
        ("--problems", "pinn"),
        "systems_pinn.json",
        "docs/results.md#several-fields",
        "a DeepXDE PINN on the Stokes data",
        peers=True,
    ),
    Case(
        "navier-stokes-pinn",
        "peers",
        "navier_stokes.py",
        ("--problems", "pinn", "cavity-pinn"),
        "navier_stokes_pinn.json",
        "docs/results.md#navierstokes",
        "DeepXDE's PINN on the Kovasznay and cavity points of the navier-stokes case",
        peers=True,
    ),
    # studies
    Case(
        "rounding",
        "studies",
        "rounding.py",
        (),
        "rounding.json",
        "docs/results.md#raissi-et-als-inverse-heat-problem",
        "how far the reported figures move when the data change in their last digits",
    ),
    Case(
        "exact-data-cost",
        "studies",
        "exact_data.py",
        ("--cost",),
        "exact_data_cost.json",
        "docs/reliability.md (noise choices)",
        "what the exact-data decision costs",
    ),
]

#: Studies retired from the suite: their findings stay on the page named, their JSON in
#: benchmarks/results/, their script in git history at the commit named.
RETIRED = {
    "calibration_bias.py": ("docs/calibration.md", "calibration_bias.json"),
    "calibration_kernels.py": ("docs/calibration.md", None),
    "frequency_starts.py": ("docs/peers.md", "frequency_starts.json"),
    "natural_gradients.py": ("docs/performance.md", "natural_gradients.json"),
    "restarts.py": ("docs/reliability.md", "restarts.json"),
}
RETIRED_AT = "8268462"

#: Scripts that are not cases: the tables' maker and the refactoring check.
TOOLS = {
    "_tables.py": "makes the docs' tables from benchmarks/results/ (the docs build runs it)",
    "fingerprint.py": "numbers a refactoring must not change: --out before.npz, then --compare",
    "common.py": "the shared helpers: JSON output, timing, peak memory, table rows",
}


def by_name() -> dict:
    return {case.name: case for case in CASES}
