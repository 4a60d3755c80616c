# %% [markdown]
# # Several fields
#
# Many problems couple fields: a velocity and a pressure, two displacements, two
# reacting species. pigp gives each *latent field* its own Gaussian-process prior
# and kernel, and every observed quantity is a linear operator applied to the
# fields, summed over them. The covariance of two observed quantities is then
# the sum over fields of the blocks pigp already builds for one field:
#
# $$\operatorname{cov}(L_i g, L_j g) = \sum_f L_{i,f}\, L'_{j,f}\, k_f .$$
#
# In code, the kernel is a dict from field names to kernels, and operators name
# the field they act on with `field`:
#
# ```python
# from pigp.operators import D, field
# psi, p = field("psi"), field("p")
# u = D("y") @ psi                    # the velocity from a stream function
# model = pigp.PIGP({"psi": kernel_1, "p": kernel_2}, equation)
# ```
#
# ## A divergence-free velocity
#
# A 2-D velocity that is the curl of a stream function, $u = \psi_y$,
# $v = -\psi_x$, has zero divergence whatever $\psi$ is. Putting the prior on
# $\psi$ makes every draw, and the posterior mean, divergence-free. Here 30
# sensors measure both components with 1% noise.

# %%
import matplotlib.pyplot as plt
import numpy as np

import pigp
from pigp.experiments import systems
from pigp.operators import D, field

psi = field("psi")
u = (D("y") @ psi).with_dims("x", "y")
v = (-(D("x") @ psi)).with_dims("x", "y")

design = systems.curl_design(sensors=30, seed=0)
curl = pigp.PIGP(
    {"psi": pigp.kernels.SquaredExponential()}, u, dims=("x", "y")
)
curl.fit(
    observations=[
        pigp.Observations(design["X_s"], design["y_u"], u, name="sensors_u"),
        pigp.Observations(design["X_s"], design["y_v"], v, name="sensors_v"),
    ]
)

X = systems.unit_grid(50)
truth = systems.curl_solution(X)
mean_u, _ = curl.predict(X, output=u)
u_x, _ = curl.predict(X, output=D("x") @ u)
v_y, _ = curl.predict(X, output=D("y") @ v)
error = np.linalg.norm(mean_u - truth["u"]) / np.linalg.norm(truth["u"])
print(f"relative L2 error of u: {error:.1e}")
divergence = np.abs(u_x + v_y).max() / np.abs(u_x).max()
print(f"max |u_x + v_y| / max |u_x|: {divergence:.0e}")

# %% [markdown]
# A curl-free field is the gradient of a potential the same way:
# `D("x") @ field("phi")` and `D("y") @ field("phi")`.
#
# ## Stokes flow: the pressure nobody measured
#
# Slow viscous flow on the unit square obeys
# $-\nu \Delta \mathbf{u} + \nabla p = \mathbf{g}$ and
# $\nabla\cdot\mathbf{u} = 0$. With the stream function
# $\psi = \sin(\pi x)\sin(\pi y)$, the pressure $p = \cos(\pi x)\cos(\pi y)$
# and $\nu = 0.1$, the body force $\mathbf{g}$ is known; 50 sensors measure the
# velocity with 1% noise, and the two momentum equations hold at 200
# collocation points. There are no pressure data, and $\nu$ is learned from a
# start of 1. The fields are $\psi$ (continuity then holds exactly) and $p$.

# %%
p = field("p")
nu = pigp.Parameter(1.0, positive=True, name="viscosity")
laplacian = D("x", 2) + D("y", 2)
v = -(D("x") @ psi)
momentum_x = (-(nu * laplacian) @ u + D("x") @ p).with_dims("x", "y")
momentum_y = (-(nu * laplacian) @ v + D("y") @ p).with_dims("x", "y")
v = v.with_dims("x", "y")

data = systems.stokes_design(sensors=50, collocation=200, seed=0)
X_s, X_c = data["X_s"], data["X_c"]
kernels = {
    "psi": pigp.kernels.SquaredExponential(),
    "p": pigp.kernels.SquaredExponential(),
}
stokes = pigp.PIGP(kernels, momentum_x, dims=("x", "y"))
stokes.fit(
    observations=[
        pigp.Observations(X_s, data["y_u"], u, name="sensors_u"),
        pigp.Observations(X_s, data["y_v"], v, name="sensors_v"),
        pigp.Observations(X_c, data["g_x"], momentum_x, name="momentum_x"),
        pigp.Observations(X_c, data["g_y"], momentum_y, name="momentum_y"),
    ],
    steps=300,  # Adam steps first, then L-BFGS-B
    optimizer="adam+lbfgs",
)
std = stokes.parameter_uncertainty()["operator.viscosity"]
print(f"nu = {nu.numpy():.4f} +- {1.96 * std:.4f} (truth 0.1)")

truth = systems.stokes_solution(X)
for name, output in (("u", u), ("v", v), ("p", "p")):
    mean, _ = stokes.predict(X, output=output)
    if name == "p":  # the data fix the pressure up to a constant
        mean, exact = mean - mean.mean(), truth["p"] - truth["p"].mean()
    else:
        exact = truth[name]
    error = np.linalg.norm(mean - exact) / np.linalg.norm(exact)
    print(f"relative L2 error of {name}: {error:.1e}")

# %% [markdown]
# A model of several fields trains by L-BFGS-B alone by default
# (`FitPlan.fields_training`): each step costs every derivative of each field's
# kernel. Here `optimizer="adam+lbfgs"` with `steps=300` runs 300 Adam steps first,
# then L-BFGS-B: with wall data, L-BFGS-B alone stopped short of the optimum on one
# of five seeds (`benchmarks/systems.py`). On these 500 values a step takes about
# 30 ms, and the default one-field schedule's 2000 Adam steps ended at an optimum
# with the same errors.
#
# The pressure's posterior mean, shifted by the one constant the data cannot
# fix, against the truth:

# %%
mean_p, var_p = stokes.predict(X, output="p")
shift = np.mean(truth["p"] - mean_p)
fig, axes = plt.subplots(2, 2, figsize=(9.0, 7.4), constrained_layout=True)
pigp.plotting.posterior_maps(
    X,
    mean_p + shift,
    var_p,
    truth=truth["p"],
    points={"velocity sensors": X_s, "collocation": X_c},
    axes=axes,
    labels=("x", "y"),
)
plt.show()

# %% [markdown]
# The equations see only the gradient of $p$, so the data leave its level
# open, and its posterior band (the std map above) keeps that part of the
# prior: compare the mean posterior std of p with that of u:

# %%
_, var_u = stokes.predict(X, output=u)
std_u, std_p = np.sqrt(var_u).mean(), np.sqrt(var_p).mean()
print(f"mean posterior std: u {std_u:.1e}, p {std_p:.1e}")

# %% [markdown]
# ## What else takes several fields
#
# - Data on some fields and none on others, as here, or observations of sums
#   such as `D("x") @ field("u") + D("y") @ field("v")`.
# - Coefficients shared across equations: `nu` above sits in both momentum
#   equations and is learned once.
# - `parameter_values()` names each field's kernel parameters
#   `"kernel.psi.lengthscales"`; `save`, `load`, `parameter_uncertainty` and
#   `sample` work as for one field. `SparsePIGP` and nonlinear equations take
#   one field.
