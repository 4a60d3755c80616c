"""pigp.fitting: the plan's checks, policy set through ``plan=``, the report saved whole,
the old module constants for one release, warnings at the user's line, and the sparse
model's Laplace and NUTS through the same machinery."""

import math
import warnings

import numpy as np
import pytest

import pigp
from pigp.fitting import FitPlan, FitReport, NoiseChoice, NoiseRestart, Solver, Step, Training


def _heat(seed=0, n=12, noise=0.01):
    """u = e^-t sin(pi x) (f = (pi^2 - 1) u) at ``n`` + ``n`` uniform points, with
    ``noise`` relative Gaussian noise."""
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.uniform(size=(n, 2)), rng.uniform(size=(n, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # noqa: E731
    y_u, y_f = u(X_u), (np.pi**2 - 1) * u(X_f)
    y_u = y_u + noise * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(n)
    y_f = y_f + noise * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(n)
    return X_u, y_u, X_f, y_f


def _model(**settings):
    return pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.operators.heat(pigp.Parameter(2.0, positive=True, name="diffusivity")),
        **settings,
    )


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: FitPlan(noise_restart=-1.0), r"plan\.noise_restart: expected a positive"),
        (lambda: FitPlan(exact_refit=0), r"plan\.exact_refit: expected an integer >= 1"),
        (lambda: FitPlan(noise_restart_start=1.5), r"plan\.noise_restart_start: expected"),
        (lambda: FitPlan(training={"steps": 3}), r"plan\.training: expected a pigp"),
        (lambda: Training(steps=-1), r"steps: expected a non-negative integer"),
        (lambda: Training(optimizer="sgd"), r"optimizer: expected 'adam'"),
        (lambda: Solver(learn="often"), r"solver\['learn'\]: expected"),
        (lambda: Solver(learn_phases=0), r"solver\['learn_phases'\]: expected an integer"),
        (lambda: Solver.updated(Solver(), {"iteration": 3}), r"solver: expected a dict"),
    ],
)
def test_a_plan_refuses_bad_settings_naming_them(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_fit_refuses_what_is_not_a_plan_before_anything_changes():
    model = _model()
    with pytest.raises(ValueError, match="plan: expected a pigp.fitting.FitPlan"):
        model.fit(*_heat(), plan={"noise_restart": None})
    assert model.data is None and model.history == []


def test_fits_arguments_override_the_plans_training():
    plan = FitPlan(training=Training(steps=40, learning_rate=0.05, optimizer="adam"))
    assert plan.training_for(False) == Training(40, 0.05, "adam")
    assert plan.training_for(False, steps=7) == Training(7, 0.05, "adam")
    assert plan.training_for(True) == FitPlan().nonlinear_training
    assert FitPlan().training_for(False, fields=2) == Training(1000, 0.02, "lbfgs")
    assert plan.training_for(False, fields=2, steps=9) == Training(9, 0.02, "lbfgs")
    assert FitPlan().training_for(False, optimizer="adam+lbfgs", fields=2) == Training()
    assert plan.training_for(False, optimizer="lbfgs", fields=2) == Training(40, 0.05, "lbfgs")
    assert plan.replace(fields_training=None).training_for(False, fields=3) == plan.training
    assert plan.training_for(True, fields=2) == FitPlan().nonlinear_training
    with pytest.raises(ValueError, match="plan.fields_training: expected a pigp.fitting.Training"):
        FitPlan(fields_training={"steps": 5})
    model = _model(noise_u=1e-3, noise_f=1e-3).fit(*_heat(), plan=plan)
    assert len(model.history) == 40  # Adam alone, exactly the plan's steps
    model.fit(*_heat(), plan=plan, steps=25)
    assert len(model.history) == 25


def test_a_module_constant_still_sets_the_policy_with_a_deprecation_warning(monkeypatch):
    """``pigp.engines.dense.model.EXACT_EVIDENCE = None`` (the old way) fits as
    ``plan=FitPlan(exact_evidence=None)``, bit for bit, and says to use the plan."""
    planned = _model().fit(*_heat(noise=0.0), plan=FitPlan(exact_evidence=None))
    assert planned.noise_choice == {}  # no exact decision with the plan's setting
    monkeypatch.setattr(pigp.engines.dense.model, "EXACT_EVIDENCE", None)
    with pytest.warns(DeprecationWarning, match=r"\['exact_evidence'\].*plan=") as caught:
        legacy = _model().fit(*_heat(noise=0.0))
    assert caught[0].filename == __file__
    assert legacy.noise_choice == {}
    for name, value in planned.parameter_values().items():
        np.testing.assert_array_equal(legacy.parameter_values()[name], value)
    assert legacy.history == planned.history


def test_the_whole_report_is_saved_and_loaded(tmp_path):
    """Every field of the report comes back from the file, equal, infinities included;
    a file without one (written before) keeps its histories from the arrays."""
    model = _model().fit(*_heat())
    assert model.report.noise_choice and model.report is not None
    report = model.report
    report.noise_restart = NoiseRestart(("u",), 1.5, 2.5, "restart", -math.inf)
    report.kernel_choice = {"SquaredExponential": 3.25, "SpectralMixture": 4.5}
    report.gauss_newton = [
        Step(1, math.inf, 0.5, 1.0, True, -3.0, 12),
        Step(2, 1e-7, 0.1, 0.5, False, -4.0, 12),
    ]
    report.held = ("kernel.variance",)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = pigp.load(path).report
    assert loaded == report
    assert isinstance(loaded.noise_choice["u"], NoiseChoice)
    assert FitReport.from_config(report.to_config()) == report


def test_warnings_of_every_stage_point_at_the_users_line():
    """A noise that explains the data (fit's noise stage) and a sampler's default
    priors (the NUTS driver) warn at this file's line, however deep they start."""
    X_u, y_u, X_f, y_f = _heat(seed=3, noise=0.0)
    y_u = y_u + np.random.default_rng(0).standard_normal(len(y_u))  # u mostly noise
    model = _model(noise_f=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X_u, y_u, X_f, y_f, plan=FitPlan(noise_restart=None))
    noise = [w for w in caught if "learned noise variance" in str(w.message)]
    assert noise and all(w.filename == __file__ for w in noise)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.sample(num_results=2, num_burnin=2, num_chains=1)
    priors = [w for w in caught if "no prior for" in str(w.message)]
    assert priors and all(w.filename == __file__ for w in priors)


def _u_only(seed=0, n=25):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    y = np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0]) + 0.02 * rng.standard_normal(n)
    return X, y


def test_sparse_laplace_equals_the_exact_models_where_the_bound_is_exact():
    """With the inducing points at the data's inputs Titsias's bound is the exact log
    marginal likelihood, so ``SparsePIGP.parameter_uncertainty`` (through the collapsed
    bound) equals the exact model's at the same parameter values."""
    X, y = _u_only()
    sparse = pigp.SparsePIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), inducing_points=X
    )
    sparse.fit(X, y)
    exact = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), noise_u=1e-3)
    exact.fit(X, y, steps=0)
    for name, p in exact.parameters_by_name().items():
        p.assign(sparse.parameter_values()[name])
    bound = -float(
        sparse.objective().loss(
            *sparse.data.tensors(sparse.dtype)[:1], sparse.data.tensors(sparse.dtype)[1].numpy()
        )
    )
    assert bound == pytest.approx(exact.log_marginal_likelihood(), rel=1e-6)
    got, want = sparse.parameter_uncertainty(), exact.parameter_uncertainty()
    assert set(got) == set(want) == {"kernel.variance", "kernel.lengthscales", "noise_u"}
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-3)
    intervals = sparse.parameter_intervals()
    low, high = intervals["noise_u"]
    assert low < sparse.parameter_values()["noise_u"] < high


@pytest.mark.slow
def test_sparse_sample_draws_the_bounds_posterior():
    """NUTS on the sparse model's collapsed bound: its draws of the noise centre on the
    Laplace approximation's (same bound, inducing points at the inputs)."""
    X, y = _u_only()
    sparse = pigp.SparsePIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), inducing_points=X
    )
    sparse.fit(X, y)
    std = sparse.parameter_uncertainty()["noise_u"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = sparse.sample(num_results=100, num_burnin=100, num_chains=2, seed=1)
    draws = samples["noise_u"]
    assert draws.shape == (2, 100) and np.all(np.isfinite(draws))
    assert abs(np.median(draws) - sparse.parameter_values()["noise_u"]) < 3 * std


def test_sparse_uncertainty_is_refused_beyond_the_collapsed_bounds_size(monkeypatch):
    X, y = _u_only()
    sparse = pigp.SparsePIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), 8)
    sparse.fit(X, y)
    monkeypatch.setattr(pigp.engines.variational.model, "COLLAPSED_UP_TO", 10)
    with pytest.raises(ValueError, match="up to 10 values; this model has 25"):
        sparse.parameter_uncertainty()
