# %% [markdown]
# # The seed's problem explained
#
# pigp grew out of a question: a heat-equation GP with 20 u points and 30 f
# points, whose fourth-order block $K_{ff} = L L' k$ had NaN at two corner
# entries, `[0, 0]` and `[19, 29]`. The cause is not the data or the
# hyper-parameters: it is how the kernel squared a difference.
#
# ## Why `**2` made NaNs
#
# TensorFlow differentiates `a**2` as `2 * a**1`, then `2 * a**0`, then
# `0 * a**-1`. At `a = 0` the last one is `0 * inf = NaN`. The f-f block needs
# four derivatives of $k$ in x, so every pair of *coincident* points (here the
# first and the last point of both grids, x = t = 0 and x = t = 1) gets NaN.

# %%
import numpy as np
import tensorflow as tf


def derivative(function, a, order):
    """The order-th derivative of function at a, one nested tape per order."""
    if order == 0:
        return function(a)
    with tf.GradientTape() as tape:
        tape.watch(a)
        lower = derivative(function, a, order - 1)
    return tape.gradient(lower, a)


def fourth_derivative(square, a):
    return derivative(
        lambda r: tf.exp(-0.5 * square(r)), tf.constant(a, tf.float64), 4
    ).numpy()


for a in (0.0, 0.3):
    print(
        f"r = {a}:  with a**2: {fourth_derivative(lambda a: a**2, a):+.6f}   "
        f"with tf.square(a): {fourth_derivative(tf.square, a):+.6f}   exact: "
        f"{(a**4 - 6 * a**2 + 3) * np.exp(-(a**2) / 2):+.6f}"
    )

# %% [markdown]
# pigp squares with `tf.square`, whose derivatives are polynomials, and its
# Matérn kernels switch to their Taylor series near $r = 0$ so that every
# derivative is the exact one there (clipping the distance would change it).
#
# ## How pigp derives the blocks
#
# A kernel is written for one pair of points. For an operator
# $L = \sum_a c_a \partial^a$, the block $\mathrm{cov}(L u(z), M u(z'))$ is
# $\sum_{a,b} c_a e_b \partial^a \partial'^b k$. For a stationary kernel
# $k(z - z')$ a derivative in $z'$ is one in $r = z - z'$ with a sign, so pigp
# only takes derivatives in $r$, one nested tape per order, entry by entry
# over all pairs. The seed's configuration, with the question's initial
# hyper-parameters (amplitude $\mathrm{softplus}(0.5)$, inverse squared
# lengthscales $w_x = \mathrm{softplus}(-1)$ and $w_t = \mathrm{softplus}(-3)$):

# %%
import pigp
from pigp.parameters import softplus

g20, g30 = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
X_u, X_f = (
    np.stack([g20, g20], 1),
    np.stack([g30, g30], 1),
)  # x = t: the diagonal
amplitude, (w_x, w_t) = softplus(0.5), softplus(np.array([-1.0, -3.0]))
kernel = pigp.kernels.SquaredExponential.from_weights(amplitude, [w_x, w_t])
heat = pigp.operators.heat(1.0)
K_ff = pigp.kernels.covariance.block(
    kernel,
    tf.constant(X_f),
    tf.constant(X_f),
    heat.resolve(2),
    heat.resolve(2),
).numpy()
print("K_ff finite everywhere:", bool(np.all(np.isfinite(K_ff))))
print(f"corners [0, 0] and [29, 29]: {K_ff[0, 0]:.6f}, {K_ff[29, 29]:.6f}")
exact = amplitude**2 * (w_t + 3 * w_x**2)
print(f"exact L L' k at r = 0, amplitude^2 (w_t + 3 w_x^2): {exact:.6f}")

# %% [markdown]
# ## What a diagonal-only layout can and cannot determine
#
# Both grids lie on the line x = t. Data on one line pin u down *on* that line
# and say little about how u varies across it. Fit the seed's layout (with
# $u = e^{-t}\sin(\pi x)$) and look at the error and the posterior standard
# deviation over the whole square:

# %%
u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
model = pigp.PIGP(kernel, heat)  # starts from the question's hyper-parameters
model.fit(X_u, u(X_u), X_f, (np.pi**2 - 1) * u(X_f))
X, _ = pigp.plotting.grid(50)
mean, var = model.predict(X)
distance = np.abs(X[:, 0] - X[:, 1]) / np.sqrt(2)
for lo, hi in [(0, 0.05), (0.05, 0.2), (0.2, 1)]:
    band = (distance >= lo) & (distance < hi)
    err = np.linalg.norm(mean[band] - u(X)[band]) / np.linalg.norm(u(X)[band])
    print(
        f"distance to the diagonal {lo:.2f}-{hi:.2f}: relative L2 {err:.2f}, "
        f"mean posterior std {np.sqrt(var[band]).mean():.2g}"
    )

# %%
pigp.plotting.posterior_maps(
    X, mean, var, truth=u(X), points={"u data": X_u, "f data": X_f}
)

# %% [markdown]
# The standard deviation grows away from the diagonal, as it should, but the
# lengthscales learned from one line cannot know how fast u changes across it,
# so the band is too narrow there. To determine the field, put data off the
# diagonal: initial and boundary values, as in the [quick start](quickstart.md).
#
# ## Averaging over the hyper-parameters
#
# Where the data cannot fix the lengthscales, a band from one fitted set is
# over-confident; `sample` draws them from their posterior instead, and
# `predict(..., samples=...)` widens the band by their spread. One thing first:
# these data are exact, and `fit` kept them so (noise variance 0), where the
# likelihood is so sharp that the sampler would need steps of ~0.001 (it took ~10
# minutes here and its chains still disagreed). The model is not exact on this
# square, though: fitted on one line, it misses u away from the line by about u's
# own size (the errors above), so exact data is the wrong claim. `sample`
# therefore draws the noise variances that `fit` found exact as well, above a
# floor of 1e-4 (`noise_floor`; standardised units: the model is good to about
# 1% of the data's spread), and says so:

# %%
samples = model.sample(num_results=300, num_burnin=300, seed=0)
print(samples.summary())
print(f"sampler: {samples.seconds:.0f} s; floors: {samples.noise_floors}")

# %% [markdown]
# How much of the square does each 95% band cover?

# %%
truth = u(X)


def coverage(mean, var):
    return np.mean(np.abs(mean - truth) <= 1.959964 * np.sqrt(var))


mixture = model.predict(X, samples=samples, max_draws=200)
print(
    f"ML-II (one set of hyper-parameters): {coverage(*model.predict(X)):.2f}"
)
print(f"samples (200 of the draws):          {coverage(*mixture):.2f}")

# %% [markdown]
# The draws carry the uncertainty of the lengthscales and of the amplitude into
# the band, which now covers the truth over (almost) the whole square; the mean
# is no better: only data off the diagonal can fix that.
