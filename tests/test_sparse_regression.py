"""``PIGP(engine="cholesky")``: linear regression through the sparse inverse-Cholesky
factor, against the dense engine on the same data and parameters."""

import numpy as np
import pytest

import pigp
from pigp.engines.cholesky import regression

pytestmark = pytest.mark.slow


def heat_u(X):
    return np.sin(np.pi * X[:, 0]) * np.exp(-X[:, 1])


def heat_f(X, alpha=0.5):
    return (alpha * np.pi**2 - 1) * heat_u(X)


@pytest.fixture(scope="module")
def design():
    rng = np.random.default_rng(4)
    X_u, X_f = rng.uniform(size=(200, 2)), rng.uniform(size=(200, 2))
    X = rng.uniform(size=(60, 2))
    return X_u, heat_u(X_u), X_f, heat_f(X_f), X


@pytest.fixture(scope="module")
def kernel():
    """One kernel for the models at fixed parameters (its compiled programs shared)."""
    return pigp.kernels.Matern52(lengthscales=[0.5, 0.5])


def model(kernel, engine, rho=5.0, noise=1e-4, **options):
    operator = pigp.operators.heat(diffusivity=pigp.Parameter(0.5, trainable=False))
    return pigp.PIGP(
        kernel,
        operator,
        noise_u=pigp.Parameter(noise, trainable=False),
        noise_f=pigp.Parameter(noise, trainable=False),
        engine=engine,
        engine_options={"rho": rho, **options} if engine == "cholesky" else None,
    )


def relative(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def dense(kernel, design):
    X_u, y_u, X_f, y_f, X = design
    m = model(kernel, "dense").fit(X_u, y_u, X_f, y_f, steps=0)
    return m, m.predict(X), m.predict(X, output="f")


def test_the_mean_approaches_the_dense_one_as_rho_grows(kernel, design, dense):
    """u and f = u_t - 0.5 u_xx at 200 random points each (noise 1e-4), new points:
    the mean through the factor is the dense posterior mean where the columns see
    everything (rho 40), and within 1% at the default rho 5; the variance is the dense
    one where it is conditioned on every datum, and above it (an upper bound) with 100
    neighbours."""
    X_u, y_u, X_f, y_f, X = design
    _, (mean, var), (mean_f, _) = dense
    differences = {}
    for rho in (5.0, 40.0):
        sparse = model(kernel, "cholesky", rho).fit(X_u, y_u, X_f, y_f, steps=0)
        got, got_var = sparse.predict(X)
        differences[rho] = relative(got, mean)
        assert sparse.report.engine["name"] == "cholesky"
    assert differences[40.0] < 1e-4
    assert differences[5.0] < 1e-2
    assert differences[5.0] > differences[40.0]
    assert np.all(got_var >= var * (1 - 1e-9))
    got_f, _ = sparse.predict(X, output="f")
    # f of a Matérn 5/2 prior is as rough as a Matérn 1/2: it screens less well.
    assert relative(got_f, mean_f) < 5e-3
    every = regression.regression_of(sparse)
    terms = sparse._output_terms("u", 2)
    full = every.variance(X, terms, neighbours=400) * sparse.y_scale**2
    np.testing.assert_allclose(full, var, rtol=1e-6)


def test_the_check_of_a_linear_fit_estimates_its_distance_from_dense(kernel, design, dense):
    """``check=True`` on the linear path: the relative difference of u's mean at the
    data's points at rho and rho - 1 (the same difference made again by two models at
    rho 3 and 2), warned above 1e-3, falling with rho. It estimates the mean's distance
    from the dense one at new points, not bounds it: 1.1 and 0.49 times it at rho 3 and
    6 when measured (1.4 and 0.65 at 4 and 5)."""
    X_u, y_u, X_f, y_f, X = design
    _, (mean, _), _ = dense
    with pytest.warns(RuntimeWarning, match="differs from the one at rho 2"):
        coarse = model(kernel, "cholesky", 3.0, check=True).fit(X_u, y_u, X_f, y_f, steps=0)
    check = coarse.report.engine["check"]
    points = np.unique(np.concatenate([X_u, X_f]), axis=0)
    coarser = model(kernel, "cholesky", 2.0).fit(X_u, y_u, X_f, y_f, steps=0)
    again = relative(coarser.predict(points)[0], coarse.predict(points)[0])
    assert check == pytest.approx(again, rel=1e-6)
    fine = model(kernel, "cholesky", 6.0, check=True).fit(X_u, y_u, X_f, y_f, steps=0)
    assert fine.report.engine["check"] < check / 5
    for fitted in (coarse, fine):
        distance = relative(fitted.predict(X)[0], mean)
        assert distance / 3 < fitted.report.engine["check"] < 3 * distance


def test_a_stalled_mean_names_lengthscales_past_the_data(design):
    """Lengthscales past the data's extent (2.0 and 1.2 on the unit square, variance 75)
    need a far larger rho than the default: conjugate gradients stall at rho 5 and the
    warning says why, naming the lengthscales and the extent."""
    X_u, y_u, X_f, y_f, X = design
    kernel = pigp.kernels.Matern52(
        variance=pigp.Parameter(75.0, positive=True, trainable=False),
        lengthscales=pigp.Parameter([2.0, 1.2], positive=True, trainable=False),
    )
    sparse = model(kernel, "cholesky", 5.0, maxiter=200).fit(X_u, y_u, X_f, y_f, steps=0)
    with pytest.warns(RuntimeWarning, match=r"lengthscales \[2.0, 1.2\] reach past"):
        sparse.predict(X)


def test_predictions_at_the_data_points_are_the_data_measurements(kernel, design, dense):
    """A prediction of u at a u data point is that measurement (not a second one beside
    it, which would make the features' covariance singular): the mean agrees with
    dense there, repeated points included."""
    X_u, y_u, X_f, y_f, _ = design
    dense_model = dense[0]
    X = np.concatenate([X_u[:20], X_u[:5], X_f[:10]])
    want, want_var = dense_model.predict(X)
    sparse = model(kernel, "cholesky", 40.0).fit(X_u, y_u, X_f, y_f, steps=0)
    got, got_var = sparse.predict(X)
    assert relative(got, want) < 1e-4
    assert np.all(np.isfinite(got_var)) and np.all(got_var >= 0)
    np.testing.assert_array_equal(got[:5], got[20:25])


def test_the_log_likelihood_is_vecchia_and_reaches_the_dense_one(kernel, design, dense):
    """``log_marginal_likelihood`` after a sparse fit is the Vecchia log-likelihood:
    the exact one at a radius that covers the data, below it at rho 3 (its pattern is
    ``learn_rho``'s, 3 by default)."""
    X_u, y_u, X_f, y_f, _ = design
    exact = dense[0].log_marginal_likelihood()
    wide = model(kernel, "cholesky", 1e3, learn_rho=1e3).fit(X_u, y_u, X_f, y_f, steps=0)
    default = model(kernel, "cholesky", 1e3).fit(X_u, y_u, X_f, y_f, steps=0)
    narrow = model(kernel, "cholesky", 3.0).fit(X_u, y_u, X_f, y_f, steps=0)
    assert wide.log_marginal_likelihood() == pytest.approx(exact, rel=1e-6)
    assert narrow.log_marginal_likelihood() < exact - 1.0
    assert wide.report.engine["log_likelihood"] == pytest.approx(exact, rel=1e-6)
    assert default.log_marginal_likelihood() == narrow.log_marginal_likelihood()


def test_a_saved_sparse_model_predicts_the_same(kernel, design, tmp_path):
    X_u, y_u, X_f, y_f, X = design
    sparse = model(kernel, "cholesky", 6.0, rtol=1e-12).fit(X_u, y_u, X_f, y_f, steps=0)
    mean, var = sparse.predict(X)
    sparse.save(tmp_path / "m.pigp")
    loaded = pigp.load(tmp_path / "m.pigp")
    assert loaded.engine == "cholesky" and loaded.engine_options.rho == 6.0
    assert loaded.report.engine == sparse.report.engine
    got, got_var = loaded.predict(X)
    np.testing.assert_array_equal(got, mean)
    np.testing.assert_array_equal(got_var, var)


def test_the_subset_fit_is_the_dense_fit_of_the_subset(design):
    """``learn="subset"``: the parameters are those of the dense engine's fit on the
    maximin subset (``regression.subset``), then every value conditions the mean (no
    standardisation: the subset's own scale would start the reference elsewhere)."""
    X_u, y_u, X_f, y_f, X = design

    def fresh(engine, **options):
        return pigp.PIGP(
            pigp.kernels.Matern52(lengthscales=[0.5, 0.5]),
            pigp.operators.heat(diffusivity=pigp.Parameter(1.0)),
            noise_u=pigp.Parameter(1e-4, trainable=False),
            noise_f=pigp.Parameter(1e-4, trainable=False),
            standardize=False,
            engine=engine,
            engine_options=options or None,
        )

    sparse = fresh("cholesky", learn_points=120)
    sparse.fit(X_u, y_u, X_f, y_f, steps=40, optimizer="lbfgs")
    reference = fresh("dense")
    part = regression.subset(sparse.data, 120)
    assert sum(part.sizes) == 120 and part.y_scale == sparse.data.y_scale
    reference.fit(
        part.sets[0].X, part.sets[0].y, part.sets[1].X, part.sets[1].y, steps=40, optimizer="lbfgs"
    )
    for name, value in reference.parameter_values().items():
        np.testing.assert_allclose(sparse.parameter_values()[name], value, rtol=1e-6)
    assert sparse.report.engine["learned_on"] == 120
    assert sparse.report.engine["measurements"] == 400
    mean, _ = sparse.predict(X)
    everything = fresh("dense")
    for name, p in everything.parameters_by_name().items():
        p.assign(sparse.parameter_values()[name])
    everything.fit(X_u, y_u, X_f, y_f, steps=0)
    assert relative(mean, everything.predict(X)[0]) < 1e-2
    assert relative(mean, heat_u(X)) < 3e-2


def test_vecchia_learning_finds_the_diffusivity():
    """``learn="vecchia"``: u and f of u = sin(pi x) e^-t with alpha = 0.5 (exact data,
    300 + 300 random points); the diffusivity learned from 1.0 by the Vecchia
    log-likelihood is within 2% of 0.5."""
    rng = np.random.default_rng(5)
    X_u, X_f = rng.uniform(size=(300, 2)), rng.uniform(size=(300, 2))
    alpha = pigp.Parameter(1.0)
    m = pigp.PIGP(
        pigp.kernels.Matern52(lengthscales=[0.5, 0.5]),
        pigp.operators.heat(diffusivity=alpha),
        noise_u=1e-4,
        noise_f=1e-4,
        engine="cholesky",
        engine_options={"learn": "vecchia"},
    )
    m.fit(X_u, heat_u(X_u), X_f, heat_f(X_f), steps=30)
    assert alpha.numpy() == pytest.approx(0.5, rel=2e-2)
    assert m.report.engine["learn"] == "vecchia"
    assert m.report.history[-1] < m.report.lbfgs_evaluations[0]


def test_what_the_sparse_engine_refuses(kernel, design):
    X_u, y_u, X_f, y_f, X = design
    heat = pigp.operators.heat(diffusivity=0.5)
    with pytest.raises(ValueError, match="engine: expected one of"):
        pigp.PIGP(kernel, heat, engine="sparse")
    with pytest.raises(ValueError, match="engine_options: unknown"):
        pigp.PIGP(kernel, heat, engine="cholesky", engine_options={"radius": 3})
    with pytest.raises(ValueError, match="rho: expected a number above 1"):
        pigp.PIGP(kernel, heat, engine="cholesky", engine_options={"rho": 0.5})
    with pytest.raises(ValueError, match="learn: expected"):
        pigp.PIGP(kernel, heat, engine="cholesky", engine_options={"learn": "all"})
    m = pigp.PIGP(pigp.kernels.Matern52(), heat, engine="cholesky", dtype="float32")
    with pytest.raises(ValueError, match="engine: 'cholesky' takes .* in float64"):
        m.fit(X_u, y_u, X_f, y_f)
    sparse = model(kernel, "cholesky").fit(X_u, y_u, X_f, y_f, steps=0)
    with pytest.raises(ValueError, match="full_cov"):
        sparse.predict(X, full_cov=True)
    with pytest.raises(ValueError, match="posterior: a sparse fit"):
        sparse.posterior()
