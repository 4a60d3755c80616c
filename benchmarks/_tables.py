"""Markdown tables of benchmark results, the one source of the numbers that the
README and the docs quote.

The docs' hook (``docs/hooks.py``) replaces a line ``<!-- results: NAME -->`` in a
page with ``TABLES[NAME]()``; ``tests/test_readme.py`` checks that the README
holds the same text for the tables it quotes. So a new benchmark run changes the
site by itself, and the README by ``python benchmarks/_tables.py NAME``.
"""

from __future__ import annotations

import json
import pathlib
import statistics
import sys

from pigp.memory import fit_bytes  # no TensorFlow: pigp's names are imported on first use

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def _load(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def seconds(value) -> str:
    """A duration to 3 significant digits, in µs, ms or s."""
    if value is None:
        return "–"
    if value < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if value < 1.0:
        return f"{value * 1e3:.3g} ms"
    return f"{value:.3g} s"


def ratio(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def gib(mib) -> str:
    return f"{mib / 1024:.2f} GiB"


# A column of a performance table: (header, key in a row, format).
STEP = ("step", "step_s", seconds)
LAPACK = ("LAPACK floor", "lapack_floor_s", seconds)
STEP_OVER_LAPACK = ("step / LAPACK", "step_over_lapack", ratio)
GPFLOW = ("GPflow step", "gpflow_step_s", seconds)
STEP_OVER_GPFLOW = ("step / GPflow", "step_over_gpflow", ratio)
PEAK = ("peak RSS", "peak_rss_mib", gib)
ASSEMBLY = ("assembly", "assembly_s", seconds)
CLOSED = ("closed form", "closed_form_s", seconds)
ASSEMBLY_OVER_CLOSED = ("assembly / closed", "assembly_over_closed_form", ratio)
TF_FLOOR = ("TF floor", "tf_floor_s", seconds)
PREDICT = ("predict 10⁴ points", "predict_1e4_s", seconds)


def performance_table(dtype: str, columns) -> str:
    """The rows of one dtype of ``performance.json``: N, then ``columns``."""
    rows = [
        (r["N"], *(form(r[key]) for _, key, form in columns))
        for r in _load("performance")["rows"]
        if r["dtype"] == dtype
    ]
    return _table((f"{dtype}, N", *(header for header, _, _ in columns)), rows)


def performance_steps(dtype: str) -> str:
    """The training step against the LAPACK floor and GPflow's plain GPR step, and
    the peak memory of the process that measured the row."""
    columns = (STEP, LAPACK, STEP_OVER_LAPACK, GPFLOW, STEP_OVER_GPFLOW, PEAK)
    return performance_table(dtype, columns)


def performance_parts(dtype: str) -> str:
    """The parts of a step: the assembly against the closed form, TensorFlow's
    autodiff floor, and prediction at 10^4 points."""
    return performance_table(dtype, (ASSEMBLY, CLOSED, ASSEMBLY_OVER_CLOSED, TF_FLOOR, PREDICT))


def performance_readme() -> str:
    """The float64 rows, as the README quotes them."""
    columns = (
        STEP,
        LAPACK,
        STEP_OVER_LAPACK,
        GPFLOW,
        ("assembly / closed form",) + ASSEMBLY_OVER_CLOSED[1:],
    )
    return performance_table("float64", columns)


def performance_cold_start() -> str:
    """A fresh process on the README's quick start."""
    c = _load("performance")["cold_start"]
    rows = [
        ("import (TensorFlow, pigp, SciPy)", seconds(c["import_s"])),
        ("a new model's first fit", seconds(c["first_fit_s"])),
        ("the same model's second fit", seconds(c["second_fit_s"])),
        ("a second new model's first fit", seconds(c["new_model_fit_s"])),
        ("relative L2 of u after the first fit", f"{c['relative_l2']:.2g}"),
    ]
    cached = c.get("with_compilation_cache")
    if cached:
        rows += [
            ("with `pigp.compilation_cache` filled: first fit", seconds(cached["first_fit_s"])),
            ("with `pigp.compilation_cache` filled: second fit", seconds(cached["second_fit_s"])),
        ]
    return _table(("fresh process, README quick start", "time"), rows)


def performance_kernels() -> str:
    """The kernels on Raissi's inverse problem, in a fresh process."""
    rows = [
        (
            r["seed"],
            r["kernel"].replace("_", " "),
            r["chosen"],
            seconds(r["fit_s"]),
            f"{r['relative_l2']:.2e}",
            f"{r['alpha_error']:.1e}",
        )
        for r in _load("performance")["raissi_kernels"]
    ]
    header = ("seed", "kernel", "fitted", "fit", "rel. L2 of u", "α error")
    return _table(header, rows)


def performance_prediction() -> str:
    rows = [
        (
            f"{r['points']:,}",
            seconds(r["seconds"]),
            f"{r['microseconds_per_point']:.3g} µs",
            "yes" if r["finite"] else "no",
        )
        for r in _load("performance")["prediction"]
    ]
    return _table(("test points", "time", "per point", "all finite"), rows)


def memory(name: str = "memory", dtype: str = "float64") -> str:
    """Measured growth of peak memory over a fit, against ``pigp.memory.fit_bytes``."""
    measured = {r["N"]: r for r in _load(name)["rows"]}
    rows = []
    for n in sorted(set(measured) | {10_000, 12_000, 20_000}):
        estimate = fit_bytes(n, dtype=dtype)
        r = measured.get(n)
        rows.append(
            (
                f"{n:,}",
                f"{r['grew_bytes'] / 1e9:.2f} GB" if r else "–",
                f"{r['bytes_per_entry']:.0f} B" if r else "–",
                f"{estimate / 1e9:.2f} GB",
                f"{estimate / r['grew_bytes']:.2f}" if r else "–",
            )
        )
    return _table(
        (
            "N (data values)",
            "measured growth of peak memory",
            "per entry of K",
            "`fit_bytes(N)`" if dtype == "float64" else f"`fit_bytes(N, dtype='{dtype}')`",
            "estimate / measured",
        ),
        rows,
    )


def memory_fields() -> str:
    """Two fields: growth of peak memory over a fit and its Laplace, against
    ``pigp.memory.fit_bytes(N, 2)``."""
    rows = []
    for r in _load("memory_fields")["rows"]:
        estimate = fit_bytes(r["N"], r["fields"])
        rows.append(
            (
                f"{r['N']:,}",
                f"{r['grew_fit_bytes'] / 1e9:.2f} GB",
                f"{r['grew_bytes'] / 1e9:.2f} GB",
                f"{estimate / 1e9:.2f} GB",
                f"{estimate / r['grew_bytes']:.2f}",
            )
        )
    return _table(
        (
            "N (data values)",
            "growth after fit",
            "after its Laplace",
            "`fit_bytes(N, 2)`",
            "estimate / measured",
        ),
        rows,
    )


def elasticity() -> str:
    """``benchmarks/elasticity.py``: the two-field fit of 480 values by each schedule."""
    rows = []
    for name, label in (
        ("elasticity", "default (L-BFGS-B alone)"),
        ("elasticity_adam", "Adam, then L-BFGS-B"),
    ):
        r = _load(name)
        rows.append(
            (
                label,
                f"{r['fit_seconds']:.1f} s",
                f"{r['laplace_seconds']:.1f} s",
                f"{r['peak_after_laplace_gb']:.2f} GB",
                f"{r['log_marginal_likelihood']:.1f}",
                f"{r['lam']:.4f} ± {1.96 * r['std_lam']:.4f}",
                f"{r['mu']:.4f} ± {1.96 * r['std_mu']:.4f}",
                f"{r['u_relative_l2']:.1e} / {r['v_relative_l2']:.1e}",
            )
        )
    header = (
        "schedule",
        "fit",
        "Laplace",
        "peak memory",
        "log marginal likelihood",
        "λ (truth 1), 95%",
        "μ (truth 0.5), 95%",
        "u / v rel. L2",
    )
    return _table(header, rows)


def scale() -> str:
    """``benchmarks/scale.py``: the sparse model, GPflow's SVGP and the exact PIGP."""
    data = _load("scale")
    names = {"sparse": "SparsePIGP", "svgp": "GPflow SVGP (u only)", "exact": "exact PIGP, 4000"}
    rows = []
    for r in data["rows"]:
        if "error" in r:
            continue
        method = names[r["method"]] + (", u-only batches" if r.get("u_only") else "")
        step = r.get("step_seconds")
        values = r["n"] + (10_000 if r["regime"] == "sensor" else 1000)
        if r["method"] == "svgp" or r.get("u_only"):
            values = r["n"] if r["regime"] == "sensor" and r["method"] != "exact" else 1000
        rows.append(
            (
                r["regime"],
                method,
                f"{r['n']:,}",
                r.get("m", "–"),
                f"{r['relative_l2']:.2e}",
                f"{r['coverage']:.3f}",
                seconds(r["seconds"]),
                r["steps"],
                seconds(step),
                seconds(None if step is None else step * values / data["batch_size"]),
                f"{r['peak_rss_gib']:.2f} GiB",
            )
        )
    header = ("data", "method", "N", "M", "rel. L2 of u", "95% cover", "time", "steps",
              "step", "epoch", "peak RSS")  # fmt: skip
    return _table(header, rows)


def exact_data() -> str:
    """The noise choices on every example problem: relative L2 of u (95% coverage)."""
    rows = _load("exact_data")
    choices = list(dict.fromkeys(r["choice"] for r in rows))
    cases = list(dict.fromkeys((r["problem"], r["noise"]) for r in rows))
    found = {(r["problem"], r["noise"], r["choice"]): r for r in rows}
    body = [
        (problem, f"{noise:g}")
        + tuple(
            f"{found[problem, noise, c]['relative_l2']:.1e} "
            f"({found[problem, noise, c]['coverage_95']:.2f})"
            for c in choices
        )
        for problem, noise in cases
    ]
    names = {
        "poisson1d": "Poisson 1-D",
        "advection_diffusion": "advection",
        "helmholtz2d": "Helmholtz",
        "heat2d": "heat 2-D",
        "reaction1d": "reaction 1-D",
        "advection_negative": "c = -0.5",
    }
    body = [(names.get(row[0], row[0]),) + row[1:] for row in body]
    return _table(("problem", "noise") + tuple(choices), body)


#: (JSON in results/, family, alpha, noise) of ``benchmarks/calibration.py``'s runs
CALIBRATION_RUNS = (
    ("calibration", "Raissi et al.'s, noise variances given", 1.0, 0.01),
    *(
        (f"calibration_{family}_{noise}{suffix}", label, alpha, noise)
        for family, label, alpha in (
            ("everyday", "everyday: sin(πx) cos(πt) + x(1-x)/2", 0.5),
            ("cosine", "cosine: e^-t cos(2πx) + xt", 0.2),
            ("slow", "slow: e^-2t sin(πx) + x²t", 0.05),
        )
        for noise in (0.01, 0.05)
        for suffix in ("", "_decaying")
    ),
)

#: How the table names the kernels of ``calibration.py --kernel``.
CALIBRATION_KERNELS = {
    "squared_exponential": "SE",
    "decaying": "Decaying(SE)",
    "spectral_mixture": "SM(1)",
    "matern52": "Matérn 5/2",
    "auto": "auto",
}


def calibration() -> str:
    """alpha's 95% intervals over 20 seeds per family: how many hold the truth (Laplace:
    ``parameter_intervals``; its delta-method std as value +- 1.96 std; NUTS)."""
    body = []
    for name, family, alpha, noise in CALIBRATION_RUNS:
        if not (RESULTS / f"{name}.json").exists():
            continue
        rows = _load(name)["rows"]
        n = len(rows)

        def held(method, rows=rows, n=n):
            if not all(method in r for r in rows):
                return "–"
            text = f"{sum(r[method]['contains_truth'] for r in rows)}/{n}"
            unmixed = sum(
                r[method]["contains_truth"] and r[method].get("max_rhat", 1.0) > 1.1 for r in rows
            )
            return text + (f" ({unmixed} with R-hat > 1.1)" if unmixed else "")

        errors = sorted(r["laplace"]["relative_l2"] for r in rows)
        delta = (
            f"{sum(r['laplace']['delta_contains_truth'] for r in rows)}/{n}"
            if all("delta_contains_truth" in r["laplace"] for r in rows)
            else "–"
        )
        kernel = _load(name)["summary"].get("kernel", "squared_exponential")
        body.append(
            (
                family,
                f"{alpha:g}",
                f"{noise:.0%}",
                CALIBRATION_KERNELS.get(kernel, kernel),
                held("laplace"),
                delta,
                held("nuts"),
                f"{statistics.median(errors):.1e} ({errors[-1]:.1e})",
            )
        )
    header = (
        "family",
        "α",
        "noise",
        "kernel",
        "Laplace holds α",
        "± 1.96 std holds α",
        "NUTS holds α",
        "u rel. L2 median (max)",
    )
    return _table(header, body)


def reaction_inverse() -> str:
    """``benchmarks/reaction_inverse.py``: reaction coefficients from three starts."""
    labels = {
        "fisher_kpp": "Fisher–KPP `u_t = 0.01 u_xx + r u(1-u)` (r = 2)",
        "allen_cahn": "Allen–Cahn `u_t = 0.01 u_xx + a(u - u³)` (a = 2)",
        "zeldovich": "Zeldovich `u_t = D u_xx + k u²(1-u)` (D = 0.01, k = 5, both learned)",
    }
    rows, seen = [], set()
    for r in _load("reaction_inverse")["rows"]:
        coefficients = r["coefficients"]
        several = len(coefficients) > 1

        digits = {name: 5 if c["truth"] < 0.1 else 4 for name, c in coefficients.items()}
        learned = ", ".join(
            (f"{n} " if several else "") + f"{c['value']:.{digits[n]}f}"
            for n, c in coefficients.items()
        )
        intervals = ", ".join(
            f"({c['interval'][0]:.{digits[n]}f}, {c['interval'][1]:.{digits[n]}f})"
            + ("" if c["holds"] else " misses")
            for n, c in coefficients.items()
        )
        first = r["problem"] not in seen
        seen.add(r["problem"])
        truth = next(iter(coefficients.values()))["truth"]
        start = f"×{r['start']:g}" if several else f"{r['start'] * truth:g}"
        noise = f"{r['noise_std']:.1e}" + (f" ({r['true_noise_std']:.1e})" if first else "")
        rows.append(
            (
                labels.get(r["problem"], r["problem"]) if first else "",
                start,
                learned,
                intervals,
                f"{r['u_relative_l2']:.2e}",
                noise,
                f"{r['band_coverage']:.0%}",
                ", ".join(r["unidentified"]) or "–",
                f"{r['seconds']:.0f} s",
            )
        )
    header = (
        "problem (truth)",
        "start",
        "learned",
        "95% Laplace interval",
        "u error",
        "noise std (true)",
        "band covers",
        "not identified",
        "fit",
    )
    return _table(header, rows)


def collocation_scale() -> str:
    """``benchmarks/collocation_scale.py``: the sparse engine on -Lap u + u^3 = f by N."""
    rows = []
    for r in _load("collocation_scale"):
        its = r["pcg_iterations"]
        rows.append(
            (
                f"{r['interior']:,}",
                f"{r['measurements']:,}",
                f"{r['relative_l2']:.2e}",
                f"{r['seconds']:.1f} s",
                f"{r['pattern_seconds']:.1f} / {r['factor_seconds']:.1f} / "
                f"{r['reduced_factor_seconds']:.1f} / {r['pcg_seconds']:.1f} s",
                r["gauss_newton_steps"],
                f"{min(its)}–{max(its)}",
                f"{r['factor_entries_per_column']:.0f}",
                f"{r['peak_gb']:.2f} GB",
            )
        )
    header = (
        "interior points",
        "measurements",
        "error",
        "time",
        "pattern / factor / reduced factor / PCG",
        "GN steps",
        "PCG its/step",
        "factor entries/column",
        "peak",
    )
    return _table(header, rows)


def collocation_agreement() -> str:
    """``benchmarks/collocation_agreement.py``: sparse against dense by rho and nugget."""
    rows = []
    for r in _load("collocation_agreement"):
        its = r["pcg_iterations"]
        rows.append(
            (
                r["problem"],
                f"{r['rho']:g}",
                f"{r['nugget']:.0e}",
                f"{r['difference_from_dense']:.1e}",
                f"{r['sparse_error']:.2e}",
                f"{r['dense_error']:.2e}",
                f"{r['sparse_seconds']:.1f} s",
                f"{min(its)}–{max(its)}",
                f"{r['sparse_peak_gb']:.2f} GB",
            )
        )
    header = (
        "problem",
        "ρ",
        "nugget",
        "from dense",
        "error",
        "dense error",
        "sparse time",
        "PCG its/step",
        "peak",
    )
    return _table(header, rows)


def engine_crossover() -> str:
    """``benchmarks/engine_crossover.py``: dense against cholesky through PIGP by N."""
    rows = []
    for r in _load("engine_crossover"):
        rows.append(
            (
                f"{r['interior']:,}",
                f"{r['values']:,}",
                r["engine"],
                f"{r['relative_l2']:.2e}",
                f"{r['fit_seconds']:.1f} s",
                f"{r['seconds']:.1f} s",
                r["gauss_newton_steps"],
                f"{r['peak_gb']:.2f} GB",
            )
        )
    header = (
        "interior",
        "values",
        "engine",
        "error",
        "fit",
        "fit and predict",
        "Gauss–Newton steps",
        "peak",
    )
    return _table(header, rows)


def vecchia_likelihood() -> str:
    """``benchmarks/vecchia_likelihood.py``: the Vecchia log-likelihood against dense."""
    data = _load("vecchia_likelihood")
    rows = []
    for r in data["rows"]:
        rows.append(
            (
                "dense" if r["rho"] is None else f"{r['rho']:g}",
                f"{r.get('entries_per_column', data['values']):.0f}",
                f"{r['log_likelihood']:.1f}",
                f"{r['gap']:.1f}",
                f"{r['argmax_alpha']:.4f}",
                f"{r['argmax_lengthscale_x']:.4f}",
                f"{r['seconds']:.2f} s",
            )
        )
    header = ("ρ", "entries/column", "log p", "gap", "maximum in α", "maximum in ℓₓ", "time")
    return _table(header, rows)


def collocation_evolution(name: str = "collocation_evolution") -> str:
    """``benchmarks/collocation_evolution.py``: Burgers and Allen-Cahn in space-time."""
    rows = []
    for r in _load(name):
        its = r["pcg_iterations"]
        name = "Allen–Cahn" if r["problem"] == "allen-cahn" else f"Burgers ν = {r['nu']:.4g}"
        steps = f"{r['gauss_newton_steps']}" + ("" if r["converged"] else " (not converged)")
        windows = r.get("windows", 1)
        if windows > 1:
            low, high = min(r["window_steps"]), max(r["window_steps"])
            steps += f" ({low}–{high} a window)"
        rows.append(
            (
                name,
                f"{r['n_x']} × {r['n_t']}" + (f", {windows} windows" if windows > 1 else ""),
                f"({r['lengthscales'][0]:g}, {r['lengthscales'][1]:g})",
                f"{r['error']:.2e}",
                f"{r['max_error']:.1e}",
                steps,
                f"{min(its)}–{max(its)}",
                f"{r['seconds']:.0f} s",
                f"{r['peak_gb']:.2f} GB",
            )
        )
    header = (
        "problem",
        "x × t points",
        "ℓ (x, t)",
        "relative L2",
        "max error",
        "Gauss–Newton steps",
        "PCG its/step",
        "time",
        "peak",
    )
    return _table(header, rows)


def heat_large() -> str:
    """``benchmarks/heat_large.py``: the diffusivity learned at 10^4+ values, cholesky
    against SparsePIGP given the same time."""
    rows = []
    for r in _load("heat_large"):
        space = "(x, t)" if r["space"] == 1 else "(x, y, t)"
        method = (
            f"cholesky, Vecchia at ρ {r['learn_rho']:g}, mean at ρ {r['rho']:g}"
            if r["method"] == "cholesky"
            else f"SparsePIGP, M = {r['m']}"
        )
        rows.append(
            (
                f"{r['n']:,} in {space}",
                method,
                f"{r['alpha']:.4f} ({100 * r['alpha_error']:.1f}%)",
                f"{r['relative_l2']:.2e}",
                f"{r['coverage']:.3f}",
                f"{r['fit_seconds']:.0f} s",
                f"{r['seconds']:.0f} s",
                f"{r['peak_gb']:.2f} GB",
            )
        )
    header = ("values", "model", "α (error)", "u error", "95% band holds", "fit", "total", "peak")
    return _table(header, rows)


#: What a warning says where it says an interval or a fit cannot be trusted as it stands.
_UNTRUSTED = (
    "inducing points leave",
    "were passed without a noise",
    "at the lower bound",
    "fell below 1% of",
)


def calibration_kinds() -> str:
    """``benchmarks/calibration_kinds.py``: intervals and bands over 20 seeds of model
    kinds beyond the single-field heat family."""
    data = _load("calibration_kinds")
    labels = {
        "fields": "two fields, equations conditioned on",
        "fields-counted": "two fields, equations' zeros counted",
        "sparse": "SparsePIGP, M = 64",
        "nonlinear": "Fisher-KPP's r (Gauss-Newton)",
        "coefficient": "Darcy's θ in a = exp(θx)",
    }
    rows = []
    for kind, s in data["summary"].items():
        mine = [r for r in data["rows"] if r["kind"] == kind]
        coefficients = ", ".join(f"{name} {held}/{s['seeds']}" for name, held in s["holds"].items())
        warned = sum(any(any(c in w for c in _UNTRUSTED) for w in r["warnings"]) for r in mine)
        rows.append(
            (
                labels.get(kind, kind),
                coefficients,
                f"{s['coverage_mean']:.3f} ({s['coverage_median']:.3f})",
                f"{s['coverage_in_0.8_0.99']}/{s['seeds']}",
                f"{s['relative_l2_median']:.1e}",
                f"{warned}/{s['seeds']}",
                f"{s['seconds_median']:.0f} s",
            )
        )
    header = (
        "model kind",
        "intervals hold",
        "band: mean (median)",
        "seeds in 0.8-0.99",
        "u error (median)",
        "warned",
        "time (median)",
    )
    return _table(header, rows)


def navier_stokes() -> str:
    """``benchmarks/navier_stokes.py``: Kovasznay flow and the lid-driven cavity, pigp
    and the PINN."""
    found = _load("navier_stokes")["rows"]
    published = (RESULTS / "navier_stokes_pinn.json").exists()
    pinn = _load("navier_stokes_pinn")["rows"] if published else []

    def kind(rows, prefix):
        return [r for r in rows if r["problem"].split()[0] == prefix]

    def pinn_name(r):
        return f"DeepXDE PINN (4 × 50 tanh, Adam {r['adam']} + L-BFGS ≤ {r['lbfgs_max']})"

    rows = []
    for r in kind(found, "forward") + kind(pinn, "pinn"):
        pinned = r["problem"].startswith("pinn")
        bands = "–" if pinned else f"{r['coverage_u']:.0%} / {r['coverage_v']:.0%}"
        rows.append(
            (
                pinn_name(r) if pinned else "pigp, fields u, v, p",
                r["problem"].split()[1],
                f"{r['error_u']:.2e}",
                f"{r['error_v']:.2e}",
                f"{r['error_p']:.2e}",
                bands,
                seconds(r["seconds"]),
            )
        )
    header = ("Kovasznay", "interior grid + boundary points", "u", "v", "p (less its mean)")
    tables = [_table(header + ("95% bands hold u / v", "fit time"), rows)]
    rows = []
    for r in kind(found, "inverse"):
        low, high = r["nu_interval"]
        rows.append(
            (
                r["seed"],
                f"{r['nu']:.5f}",
                f"[{low:.5f}, {high:.5f}]",
                "yes" if r["interval_holds"] else "no",
                f"{r['error_u']:.1e} / {r['error_v']:.1e}",
                f"{r['coverage_u']:.0%} / {r['coverage_v']:.0%}",
                seconds(r["seconds"]),
            )
        )
    if rows:
        header = ("seed", "ν (truth 0.05, from 0.1)", "95% Laplace interval", "holds")
        header += ("u / v error", "95% bands hold u / v", "fit time")
        tables.append(_table(header, rows))
    rows = []
    higher = RESULTS / "navier_stokes_cavity_re.json"
    more = _load("navier_stokes_cavity_re")["rows"] if higher.exists() else []
    for r in kind(found, "cavity") + kind(pinn, "cavity-pinn") + kind(more, "cavity"):
        pinned = r["problem"].startswith("cavity-pinn")
        steps = "–" if pinned else str(r["gauss_newton"])
        if not pinned and not r["converged"]:
            steps += " (not converged)"
        ell = r.get("lengthscale", 0.3)
        rows.append(
            (
                f"{r.get('re', 100):.0f}",
                pinn_name(r) if pinned else f"pigp, Matérn 7/2, ℓ = {ell:g} held",
                r["problem"].split()[1],
                f"{r['max_deviation_u']:.3f}",
                f"{r['max_deviation_v']:.3f}",
                steps,
                seconds(r["seconds"]),
            )
        )
    if rows:
        header = ("cavity, Re", "model", "interior grid + wall points", "u: largest deviation")
        header += ("v: largest deviation", "Gauss–Newton steps", "fit time")
        tables.append(_table(header, rows))
    return "\n\n".join(tables)


def brusselator() -> str:
    """``benchmarks/brusselator.py``: the Brusselator against the method of lines."""
    rows = []
    for r in _load("brusselator")["rows"]:
        steps = str(r["gauss_newton"]) + ("" if r["converged"] else " (not converged)")
        rows.append(
            (
                f"{r['n']} × {r['n']}",
                r["values"],
                f"{r['error_u']:.2e}",
                f"{r['error_v']:.2e}",
                f"{r['coverage_u']:.0%} / {r['coverage_v']:.0%}",
                steps,
                seconds(r["seconds"]),
                f"{r['peak_gb']:.2f} GB",
            )
        )
    header = ("collocation grid", "values", "u", "v", "95% bands hold u / v")
    header += ("Gauss–Newton steps", "fit time", "peak memory")
    return _table(header, rows)


def nonlinear_noise() -> str:
    """``benchmarks/nonlinear_noise.py``: noisy data passed without a noise."""
    rows = []
    for r in _load("nonlinear_noise")["rows"]:
        low, high = r["interval"]
        evidence = (
            "–" if r["kept"] is None else f"{r['evidence_learned']:.1f} / {r['evidence_exact']:.1f}"
        )
        rows.append(
            (
                {"burgers": "Burgers", "fisher_kpp": "Fisher–KPP", "allen_cahn": "Allen–Cahn"}[
                    r["problem"]
                ],
                r["seed"],
                f"{r['truth']:g}",
                f"{r['value']:.4g} ({r['relative_error']:.1%})",
                f"[{low:.4g}, {high:.4g}]",
                "yes" if r["holds"] else "no",
                r["kept"] or "–",
                evidence,
                "yes" if r["warned"] else "no",
                seconds(r["seconds"]),
            )
        )
    header = ("problem", "seed", "truth", "learned (error)", "95% Laplace interval", "holds")
    header += ("kept", "likelihood given the rest: learned / exact", "warned", "fit time")
    return _table(header, rows)


TABLES = {
    "nonlinear-noise": nonlinear_noise,
    "navier-stokes": navier_stokes,
    "brusselator": brusselator,
    "calibration": calibration,
    "calibration-kinds": calibration_kinds,
    "vecchia-likelihood": vecchia_likelihood,
    "collocation-scale": collocation_scale,
    "engine-crossover": engine_crossover,
    "collocation-agreement": collocation_agreement,
    "collocation-evolution": collocation_evolution,
    "heat-large": heat_large,
    "collocation-evolution-windows": lambda: collocation_evolution("collocation_evolution_windows"),
    "performance-steps-float64": lambda: performance_steps("float64"),
    "performance-steps-float32": lambda: performance_steps("float32"),
    "performance-parts-float64": lambda: performance_parts("float64"),
    "performance-parts-float32": lambda: performance_parts("float32"),
    "performance-readme": performance_readme,
    "performance-cold-start": performance_cold_start,
    "performance-kernels": performance_kernels,
    "performance-prediction": performance_prediction,
    "memory": memory,
    "memory-float32": lambda: memory("memory_float32", "float32"),
    "memory-fields": memory_fields,
    "elasticity": elasticity,
    "scale": scale,
    "exact-data": exact_data,
    "reaction-inverse": reaction_inverse,
}

if __name__ == "__main__":
    for name in sys.argv[1:] or TABLES:
        print(f"<!-- {name} -->\n{TABLES[name]()}\n")
