# %% [markdown]
# # Navier–Stokes: nonlinear equations over several fields
#
# Steady incompressible flow couples a velocity $(u, v)$ and a pressure $p$ through
# two momentum equations and continuity:
#
# $$
# \begin{aligned}
# u u_x + v u_y + p_x - \nu (u_{xx} + u_{yy}) &= 0, \\
# u v_x + v v_y + p_y - \nu (v_{xx} + v_{yy}) &= 0, \\
# u_x + v_y &= 0.
# \end{aligned}
# $$
#
# In pigp each field gets its own Gaussian-process prior (a dict of kernels, as in
# [Several fields](fields.md)), each *feature* of the equations names the field it
# acts on, and the residual returns the three equations as a tuple: a system.
# Gauss–Newton ([Nonlinear PDEs](nonlinear.md)) linearises all three jointly at the
# current solution, conditions the three fields on the linearised system at the
# collocation points and on the boundary data, and repeats. The right-hand sides come
# as an array of shape (n, 3), one column per equation.
#
# The test case is Kovasznay's flow behind a grid at Re = 20 (ν = 0.05), which has a
# closed form, on DeepXDE's domain $[-0.5, 1] \times [-0.5, 1.5]$: the velocity is
# given on the boundary, the equations at a 12 × 12 interior grid, and nothing about
# the pressure, which is therefore known up to a constant.

# %%
import matplotlib.pyplot as plt
import numpy as np

import pigp
from pigp.experiments.navier_stokes import (
    LOWER,
    UPPER,
    kovasznay_design,
    kovasznay_solution,
)
from pigp.operators import D, field, nonlinear

u, v, p = field("u"), field("v"), field("p")
laplacian = D("x", 2) + D("y", 2)


def residual(f, q):
    return (
        f["u"] * f["u_x"]
        + f["v"] * f["u_y"]
        + f["p_x"]
        - q["nu"] * f["lap_u"],
        f["u"] * f["v_x"]
        + f["v"] * f["v_y"]
        + f["p_y"]
        - q["nu"] * f["lap_v"],
        f["u_x"] + f["v_y"],
    )


equations = nonlinear(
    residual,
    features={
        "u": u,
        "v": v,
        "u_x": D("x") @ u,
        "u_y": D("y") @ u,
        "v_x": D("x") @ v,
        "v_y": D("y") @ v,
        "lap_u": laplacian @ u,
        "lap_v": laplacian @ v,
        "p_x": D("x") @ p,
        "p_y": D("y") @ p,
    },
    parameters={"nu": 0.05},
).with_dims("x", "y")

X_f, X_b = kovasznay_design(interior=12, per_side=12)
u_b, v_b, _ = kovasznay_solution(X_b)
kernel = pigp.kernels.SquaredExponential
model = pigp.PIGP({"u": kernel(), "v": kernel(), "p": kernel()}, equations)
model.fit(
    X_f=X_f,
    y_f=np.zeros((len(X_f), 3)),
    observations=[
        pigp.Observations(X_b, u_b, u, name="u_boundary"),
        pigp.Observations(X_b, v_b, v, name="v_boundary"),
    ],
)
print(
    f"{len(X_f)} collocation points x 3 equations, "
    f"{2 * len(X_b)} boundary values"
)
print(
    f"Gauss-Newton iterations: {len(model.gauss_newton)}, "
    f"last change {model.gauss_newton[-1].change:.1e}"
)

# %% [markdown]
# The change Gauss–Newton stops on is, with several fields, the largest relative
# change of the features acting on one field: the pressure's constant, which no
# equation sees, is left out of it.
#
# ## Errors and bands
#
# `predict(X, "u")` gives a field's posterior mean and variance; any feature
# (`"p_x"`) or operator of the fields works too, and `predict(X, "f")` gives the three
# residuals, shape (n, 3).

# %%
X, shape = pigp.plotting.grid(60, bounds=tuple(zip(LOWER, UPPER)))
exact = dict(zip("uvp", kovasznay_solution(X)))
moments = {name: model.predict(X, name) for name in "uvp"}
for name in "uv":
    mean, var = moments[name]
    error = np.linalg.norm(mean - exact[name]) / np.linalg.norm(exact[name])
    inside = np.mean(np.abs(mean - exact[name]) <= 1.96 * np.sqrt(var))
    print(
        f"{name}: relative L2 error {error:.1e}, "
        f"95% band holds it at {inside:.0%} of the grid"
    )
mean_p = moments["p"][0]
error_p = np.linalg.norm(
    mean_p - mean_p.mean() - (exact["p"] - exact["p"].mean())
)
print(
    f"p (up to a constant): relative L2 error "
    f"{error_p / np.linalg.norm(exact['p'] - exact['p'].mean()):.1e}"
)

# %%
fig, axes = plt.subplots(2, 3, figsize=(12, 7), constrained_layout=True)
x, y = X[:, 0].reshape(shape), X[:, 1].reshape(shape)
for column, name in enumerate("uvp"):
    mean, var = moments[name]
    shown = mean - mean.mean() if name == "p" else mean
    top = axes[0, column].contourf(
        x, y, shown.reshape(shape), 30, cmap="RdBu_r"
    )
    fig.colorbar(top, ax=axes[0, column])
    axes[0, column].set_title(
        f"{name}: posterior mean" + (" (less its mean)" if name == "p" else "")
    )
    low = axes[1, column].contourf(
        x, y, np.sqrt(var).reshape(shape), 30, cmap="viridis"
    )
    fig.colorbar(low, ax=axes[1, column])
    axes[1, column].set_title(f"{name}: posterior standard deviation")
for ax in axes.flat:
    ax.set_aspect("equal")
axes[0, 0].plot(X_f[:, 0], X_f[:, 1], "k.", ms=2)
axes[0, 0].plot(X_b[:, 0], X_b[:, 1], "kx", ms=3)

# %% [markdown]
# The velocity's standard deviation vanishes on the boundary, where it is given
# exactly, and peaks between the collocation points; the pressure's is largest where
# only its gradient constrains it. The benchmark (`python -m benchmarks navier-stokes`)
# runs this at 12 × 12 and 20 × 20 and learns ν from noisy velocity sensors; the
# [results page](../results.md#navierstokes) has its table, with the
# lid-driven cavity against Ghia et al.'s centre lines.
#
# ## Writing your own system
#
# - Every feature of a model with several fields names its field; a feature named
#   like a field (`"u"` above) must be that field.
# - The residual returns a tuple of k tensors, each of shape (n,); `y_f` then has
#   shape (n, k).
# - Coefficients (`nu` here) can be `pigp.Parameter`s to learn, with Laplace
#   intervals from `model.parameter_intervals()`, as for one equation.
