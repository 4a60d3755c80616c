# %% [markdown]
# # Writing your own operator
#
# Operators are built from `pigp.operators.D` (a partial derivative of any
# order in a named or numbered input column), `pigp.Identity`, sums,
# differences, scalar coefficients (numbers, or learnable `pigp.Parameter`s) and
# composition `@`. pigp derives every covariance block from the operator; there
# is nothing to differentiate by hand.

# %%
import numpy as np

import pigp
from pigp.operators import D, Identity

heat = D("t") - 1.0 * D("x", 2)  # u_t - u_xx
wave = D("t", 2) - pigp.Parameter(2.0, name="c") ** 2 * D("x", 2)
mixed = D({"x": 1, "t": 1})  # u_xt
helmholtz = D("x", 2) + D("y", 2) + 4.0 * Identity  # (Laplacian + k^2) u
biharmonic = (D("x", 2) + D("y", 2)) @ (D("x", 2) + D("y", 2))
for name, op in [
    ("heat", heat),
    ("wave", wave),
    ("mixed", mixed),
    ("helmholtz", helmholtz),
    ("biharmonic", biharmonic),
]:
    print(f"{name:10s} order {op.order}:  {op}")

# %% [markdown]
# Column names are declared once, on the operator (`.with_dims("x", "t")`) or
# on the model (`PIGP(..., dims=("x", "y"))`), and checked against the columns
# of X. `D(0, 2)` indexes a column instead.
#
# ## A boundary-value problem with Dirichlet and Neumann data
#
# $u'' = f$ on $[0, 1]$ with $u = \sin(\pi x / 2)$: forcing data in the
# interior, the value $u(0) = 0$ (Dirichlet) and the slope $u'(1) = 0$ (Neumann).
# Each extra data set is a `pigp.Observations` with its own operator and noise;
# pigp assembles the blocks between all pairs of sets.

# %%
u = lambda x: np.sin(np.pi * x / 2)
X_f = np.linspace(0.05, 0.95, 12)[:, None]
model = pigp.PIGP(pigp.kernels.SquaredExponential(), D(0, 2))
model.fit(
    X_f=X_f,
    y_f=-((np.pi / 2) ** 2) * u(X_f[:, 0]),
    observations=[
        pigp.Observations([[0.0]], [0.0], Identity, name="dirichlet"),
        pigp.Observations([[1.0]], [0.0], D(0), name="neumann"),
    ],
)
x = np.linspace(0, 1, 201)[:, None]
mean, var = model.predict(x)
print(f"max |error| of u on [0, 1]: {np.abs(mean - u(x[:, 0])).max():.2e}")
slope, _ = model.predict([[1.0]], output="neumann")
print(f"u'(1) predicted: {slope[0]:.2e}")

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 3.5))
std = np.sqrt(var)
ax.plot(x[:, 0], mean, label="posterior mean")
ax.fill_between(
    x[:, 0], mean - 2 * std, mean + 2 * std, alpha=0.3, label="±2σ"
)
ax.plot(x[:, 0], u(x[:, 0]), "k--", lw=1, label="exact")
ax.legend()
ax.set_xlabel("x")

# %% [markdown]
# ## 2-D Helmholtz with a custom kernel
#
# Any TensorFlow function of a pair of points is a kernel
# (`pigp.kernels.Custom`). Write squares as `tf.square(a)`, never `a**2`
# (see [the seed's problem](seed_problem.md)). Here $\Delta u + 4u = f$ on the
# unit square with $u = \sin(2x)\cos(y)$, so $f = -u$, boundary values of u
# on the four sides:

# %%
import tensorflow as tf


def anisotropic_se(x1, x2, variance, lx, ly):
    r2 = tf.square((x1[..., 0] - x2[..., 0]) / lx) + tf.square(
        (x1[..., 1] - x2[..., 1]) / ly
    )
    return variance * tf.exp(-0.5 * r2)


kernel = pigp.kernels.Custom(
    anisotropic_se, {"variance": 1.0, "lx": 0.5, "ly": 0.5}, stationary=True
)
exact = lambda X: np.sin(2 * X[:, 0]) * np.cos(X[:, 1])
rng = np.random.default_rng(0)
side = np.linspace(0, 1, 6)
X_b = np.concatenate(
    [
        np.stack([side, 0 * side], 1),
        np.stack([side, 1 + 0 * side], 1),
        np.stack([0 * side[1:-1], side[1:-1]], 1),
        np.stack([1 + 0 * side[1:-1], side[1:-1]], 1),
    ]
)
X_f = rng.uniform(size=(30, 2))
model = pigp.PIGP(kernel, helmholtz.with_dims("x", "y"))
model.fit(X_b, exact(X_b), X_f, -exact(X_f))
X, _ = pigp.plotting.grid(40)
mean, var = model.predict(X)
error = np.linalg.norm(mean - exact(X)) / np.linalg.norm(exact(X))
print(f"relative L2 error of u: {error:.2e}")
for name, value in model.parameter_values().items():
    print(f"{name:16s} {value:.4g}")

# %% [markdown]
# An operator of a higher order than a kernel can take is refused before any
# work is done:

# %%
import textwrap

try:
    pigp.PIGP(pigp.kernels.Matern52(), biharmonic.with_dims("x", "y")).fit(
        X_b, exact(X_b), X_f, exact(X_f)
    )
except ValueError as error:
    print(textwrap.fill(f"ValueError: {error}", 79))
