# %% [markdown]
# # Quick start: the heat equation in 15 lines
#
# The field $u(x, t) = e^{-t}\sin(\pi x)$ solves $u_t - u_{xx} = f$ with
# $f = (\pi^2 - 1)\,u$. We observe u at 20 points on the initial and boundary
# lines, f at 30 interior points, and ask pigp for u everywhere, with its
# uncertainty.

# %%
import numpy as np

import pigp

u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # columns: x, t
X_u = np.array(
    [[x, 0.0] for x in np.linspace(0, 1, 8)]
    + [[b, t] for b in (0.0, 1.0) for t in np.linspace(0, 1, 7)[1:]]
)
X_f = np.random.default_rng(0).uniform(size=(30, 2))
y_u, y_f = u(X_u), (np.pi**2 - 1) * u(X_f)

model = pigp.PIGP(
    pigp.kernels.SquaredExponential(), pigp.operators.heat(diffusivity=1.0)
)
model.fit(X_u, y_u, X_f, y_f)  # Adam, then L-BFGS polish

X, shape = pigp.plotting.grid(50)  # a 50 x 50 grid of [0, 1]^2
mean, var = model.predict(X)
error = np.linalg.norm(mean - u(X)) / np.linalg.norm(u(X))
print(f"relative L2 error of u on the grid: {error:.2e}")
print(f"largest posterior std: {np.sqrt(var).max():.2e}")

# %% [markdown]
# `fit` learned the kernel's variance and lengthscales by maximising the log
# marginal likelihood. The noise variances were learned too, and then each data
# set was tried exact (noise 0): these data are exact, and the likelihood
# barely changes without the noise, so `fit` kept them exact
# (`model.noise_choice` has the two log marginal likelihoods of each set):

# %%
for name, value in model.parameter_values().items():
    print(f"{name:22s} {np.array2string(np.asarray(value), precision=4)}")
for name, c in model.noise_choice.items():
    print(f"{name}: log ML {c.learned:.2f} learned, {c.exact:.2f} exact")
    print(f"   kept {c.kept}")

# %% [markdown]
# The posterior mean, its standard deviation and the error against the exact
# solution, with the data points overlaid:

# %%
pigp.plotting.posterior_maps(
    X, mean, var, truth=u(X), points={"u data": X_u, "f data": X_f}
)

# %% [markdown]
# `model.predict(X, output="f")` gives the posterior of $f = Lu$ instead, and
# `model.covariance(X1, X2, left="f", right="u")` any prior block.
# The same experiment with noisy data, five draws and figures is
# `pigp heat --out results/heat` (or `python examples/heat_equation.py`).
