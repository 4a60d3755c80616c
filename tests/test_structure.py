"""One structure keys every compiled program: models share programs exactly when their
structures (kernel class and settings, operator terms and their kinds, parameter places,
shapes and constraints, jitter, dtype) are equal, and a shared program computes each
model's own numbers."""

import numpy as np
import pytest
import tensorflow as tf

import pigp
from pigp import structure
from pigp.kernels import Custom, Matern52, SpectralMixture, SquaredExponential
from pigp.operators import D, heat

X_TEST = np.random.default_rng(9).uniform(size=(5, 2))


def _rbf(x1, x2, scale):
    return tf.exp(-tf.reduce_sum(tf.square(x1 - x2), axis=-1) / scale)


def _laplace(x1, x2, scale):
    return tf.exp(-tf.reduce_sum(tf.square(x1 - x2), axis=-1) / (2.0 * scale))


def _diffusivity(X):
    return 1.0 + tf.square(X[:, 0])


def _other_diffusivity(X):
    return 2.0 - X[:, 1]


def _custom(function, stationary=False):
    return Custom(function, {"scale": pigp.Parameter(0.3)}, stationary=stationary)


def _model(kernel=None, operator=None, noise_f=1e-3, jitter=None, dtype="float64", extra=None):
    return pigp.PIGP(
        kernel if kernel is not None else SquaredExponential(1.0, [0.4, 0.6]),
        operator if operator is not None else heat(1.0),
        noise_u=1e-3,
        noise_f=noise_f,
        jitter=jitter,
        dtype=dtype,
    ), extra


def _shared_noise():
    noise = pigp.Parameter(1e-3, name="noise")
    return pigp.PIGP(
        SquaredExponential(1.0, [0.4, 0.6]), heat(1.0), noise_u=noise, noise_f=noise
    ), None


def _edge(operator):
    return pigp.Observations([[0.0, 0.5], [1.0, 0.5]], [0.1, -0.2], operator, 1e-3, name="edge")


def _shared_coefficient():
    alpha = pigp.Parameter(1.0, name="diffusivity")
    return _model(operator=heat(alpha), extra=_edge(heat(alpha)))


def _own_coefficients():
    alpha = pigp.Parameter(1.0, name="diffusivity")
    return _model(operator=heat(alpha), extra=_edge(heat(pigp.Parameter(1.0, name="beta"))))


#: Each differs from "base" (and from the others) in one component of the structure.
VARIANTS = {
    "base": lambda: _model(),
    "kernel class": lambda: _model(kernel=Matern52(1.0, [0.4, 0.6])),
    "spectral mixture of 1": lambda: _model(kernel=SpectralMixture(1)),
    "spectral mixture of 2": lambda: _model(kernel=SpectralMixture(2)),
    "custom function": lambda: _model(kernel=_custom(_rbf)),
    "custom other function": lambda: _model(kernel=_custom(_laplace)),
    "custom stationary": lambda: _model(kernel=_custom(_rbf, stationary=True)),
    "operator constant": lambda: _model(operator=heat(0.5)),
    "operator multi-index": lambda: _model(operator=D(1) - D(0)),
    "coefficient a parameter": lambda: _model(operator=heat(pigp.Parameter(1.0))),
    "coefficient varying with x": lambda: _model(operator=D(1) - _diffusivity * D(0, 2)),
    "coefficient varying otherwise": lambda: _model(operator=D(1) - _other_diffusivity * D(0, 2)),
    "coefficient positive": lambda: _model(operator=heat(pigp.Parameter(1.0, positive=True))),
    "coefficient with a lower bound": lambda: _model(operator=heat(pigp.Parameter(1.0, lower=0.1))),
    "noise shared by u and f": _shared_noise,
    "exact f data": lambda: _model(noise_f=0),
    "a third data set": lambda: _model(extra=_edge(pigp.Identity)),
    "third set sharing the coefficient": _shared_coefficient,
    "third set with its own coefficient": _own_coefficients,
    "jitter": lambda: _model(jitter=1e-9),
    "dtype": lambda: _model(dtype="float32"),
}


def _data(make, seed=0, sizes=(6, 7)):
    """A model of ``make``'s structure and its validated data on data of ``seed`` and
    ``sizes`` (nothing compiled)."""
    model, extra = make()
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.uniform(size=(sizes[0], 2)), rng.uniform(size=(sizes[1], 2))
    arrays = (X_u, np.sin(3 * X_u[:, 0]) + X_u[:, 1], X_f, np.cos(2 * X_f[:, 1]))
    observations = [] if extra is None else [extra]
    return model, arrays, observations


def _structure(make, seed=0, sizes=(6, 7)) -> structure.Structure:
    """The structure a fit of ``make``'s model on such data would key its programs by,
    built as ``fit`` builds it (nothing compiled)."""
    model, arrays, observations = _data(make, seed, sizes)
    data = model.prepare_data(*arrays, observations)
    model.kernel.build(np.concatenate([s.X for s in data.sets]))
    return structure.Structure(model.kernel, data.sets, model.jitter, model.dtype)


def _fitted(make, seed=0, sizes=(6, 7)):
    """A model of ``make``'s structure on data of ``seed`` and ``sizes``, after every
    kind of program has run: the loss and gradient, the posterior, predict."""
    model, arrays, observations = _data(make, seed, sizes)
    model.fit(*arrays, observations=observations, steps=0)
    Xs, y = model.data.tensors(model.dtype)
    model.objective().loss_and_gradient(Xs, y)
    model.predict(X_TEST)
    return model


def _programs(model) -> set:
    """The compiled programs in the process's table under the model's structure."""
    key = model.objective().structure.key
    return {
        id(p)
        for k, p in structure._programs.items()
        if k[0] == key or (isinstance(k[0], tuple) and k[0] and k[0][0] == key)
    }


def test_structures_differ_in_each_component_and_not_with_the_data():
    """Every variant's structure differs from every other's; the same structure on
    other data (sizes, values, fresh parameters and kernels) is equal."""
    keys = {name: _structure(make) for name, make in VARIANTS.items()}
    names = list(keys)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert keys[a] != keys[b], (a, b)
        assert _structure(VARIANTS[a], seed=1, sizes=(9, 4)) == keys[a], a


#: Variants whose programs are compiled and compared (compiling all takes minutes).
COMPILED = (
    "base",
    "kernel class",
    "coefficient a parameter",
    "coefficient varying with x",
    "third set sharing the coefficient",
    "dtype",
)


@pytest.mark.slow
def test_models_share_programs_exactly_when_their_structures_are_equal(monkeypatch):
    """Models of the structures above never share a program (objective, predict);
    models of one structure on other data share all of them."""
    monkeypatch.setattr(structure, "PROGRAMS_KEPT", 10_000)
    models = {name: _fitted(VARIANTS[name]) for name in COMPILED}
    programs = {name: _programs(m) for name, m in models.items()}
    for i, a in enumerate(COMPILED):
        assert len(programs[a]) >= 4, a  # gram, vjp, step, Gram in graph, cross
        for b in COMPILED[i + 1 :]:
            assert not programs[a] & programs[b], (a, b)
    for name in COMPILED[:4]:
        again = _fitted(VARIANTS[name], seed=1, sizes=(9, 4))
        assert again.objective().structure == models[name].objective().structure
        assert _programs(again) == programs[name], name


def _reference_prediction(model, X):
    """The posterior mean from uncompiled blocks (numpy solve), for a shared program's
    numbers to be checked against."""
    from pigp.kernels.covariance import block

    Xs, y = model.data.tensors(model.dtype)
    K = model.objective().covariance(Xs).numpy()
    terms = tuple(pigp.Identity.resolve(2))
    Xt = tf.constant(X, model.dtype)
    cross = np.concatenate(
        [block(model.kernel, Xt, Xi, terms, s.terms).numpy() for Xi, s in zip(Xs, model.data.sets)],
        axis=1,
    )
    return cross @ np.linalg.solve(K, y.numpy()) * model.y_scale


def test_a_shared_program_computes_each_models_own_numbers():
    """Two models of one structure (other kernel values, coefficient values, data):
    the second runs the first one's programs and gets its own loss, gradient and
    prediction (against an uncompiled reference)."""
    first = _fitted(lambda: _model(operator=heat(pigp.Parameter(1.0))), seed=2)
    second, _ = _model(
        kernel=SquaredExponential(2.0, [0.7, 0.2]), operator=heat(pigp.Parameter(0.3))
    )
    rng = np.random.default_rng(3)
    X_u, X_f = rng.uniform(size=(8, 2)), rng.uniform(size=(5, 2))
    second.fit(X_u, np.exp(X_u[:, 0]), X_f, X_f[:, 1], steps=0)
    assert second.objective().structure == first.objective().structure
    Xs, y = second.data.tensors(second.dtype)
    loss, grads = second.objective().loss_and_gradient(Xs, y)
    with tf.GradientTape() as tape:
        reference = second.objective().nll(Xs, y)
    expected = tape.gradient(reference, second.objective().variables)
    assert float(loss) == pytest.approx(float(reference), rel=1e-10)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-8, atol=1e-10)
    mean, _ = second.predict(X_TEST)
    np.testing.assert_allclose(mean, _reference_prediction(second, X_TEST), rtol=1e-8)
    assert _programs(second) == _programs(first)


@pytest.mark.slow
def test_new_models_of_a_compiled_structure_trace_nothing(caplog, monkeypatch):
    """A loop of new models of one structure (fit, Laplace, predict, NUTS) compiles its
    programs once: later models trace nothing and TensorFlow warns of no retracing."""
    monkeypatch.setattr(structure, "PROGRAMS_KEPT", 10_000)

    def new_model(seed):
        rng = np.random.default_rng(seed)
        X_u, X_f = rng.uniform(size=(8, 2)), rng.uniform(size=(10, 2))
        u = np.exp(-X_u[:, 1]) * np.sin(np.pi * X_u[:, 0])
        f = (np.pi**2 - 1) * np.exp(-X_f[:, 1]) * np.sin(np.pi * X_f[:, 0])
        operator = heat(pigp.Parameter(1.5, name="diffusivity"))
        model = pigp.PIGP(SquaredExponential(), operator, noise_u=1e-3)
        model.fit(X_u, u + 0.01 * rng.standard_normal(8), X_f, f, steps=300)
        model.parameter_uncertainty()
        model.predict(X_TEST)
        with pytest.warns(RuntimeWarning):
            model.sample(num_results=4, num_burnin=0, num_chains=2, seed=seed)

    def traces():
        return {
            key: program.experimental_get_tracing_count()
            for key, program in structure._programs.items()
            if hasattr(program, "experimental_get_tracing_count")
        }

    new_model(0)
    first = traces()
    caplog.clear()
    for seed in range(1, 6):
        new_model(seed)
    assert traces() == first
    retraced = [r.getMessage()[:160] for r in caplog.records if "retracing" in r.getMessage()]
    assert not retraced
