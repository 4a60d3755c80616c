# %% [markdown]
# # Uncertainty in a PDE coefficient
#
# Raissi et al.'s inverse heat problem: $u = e^{-t}\sin(2\pi x)$ solves
# $u_t = \alpha u_{xx} + f$ with $\alpha = 1$. From 20 noisy values of u and 20
# of f (1% noise), learn $\alpha$, and say how sure we are. `fit` gives the
# maximum of the marginal likelihood and `parameter_uncertainty` a Laplace
# standard deviation; `sample` draws every parameter from its posterior with
# TensorFlow Probability's No-U-Turn sampler, and `predict(..., samples=...)`
# averages the prediction over the draws.

# %%
import warnings

import numpy as np
from scipy.stats import qmc

import pigp


def solution(X):
    u = np.exp(-X[:, 1]) * np.sin(2 * np.pi * X[:, 0])
    return u, (4 * np.pi**2 - 1) * u


design = qmc.LatinHypercube(d=2, seed=0)
X_u, X_f = design.random(20), design.random(20)
rng = np.random.default_rng(0)
y_u, y_f = solution(X_u)[0], solution(X_f)[1]
y_u = y_u + 0.01 * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(20)
y_f = y_f + 0.01 * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(20)

alpha = pigp.Parameter(2.0, name="diffusivity")
model = pigp.PIGP(
    pigp.kernels.SquaredExponential(), pigp.operators.heat(diffusivity=alpha)
)
model.fit(X_u, y_u, X_f, y_f)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the noise of u may sit at its floor
    std = model.parameter_uncertainty()["operator.diffusivity"]
print(f"ML-II alpha = {alpha.numpy():.4f}, Laplace std = {std:.4f}")

# %% [markdown]
# ## Sampling
#
# Four chains of 1000 draws after 500 burn-in steps. The parameters without a
# prior (all of them here) get a weak log-normal centred on the fitted value;
# `pigp.Parameter(..., prior=...)` sets one.

# %%
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    samples = model.sample(
        num_results=1000, num_burnin=500, num_chains=4, seed=0
    )
print(samples.summary())

# %% [markdown]
# R-hat near 1 says the chains agree; ESS is the number of independent draws
# they are worth. The traces of $\alpha$, and its posterior beside the Laplace
# Gaussian:

# %%
import matplotlib.pyplot as plt

fig, (left, right) = plt.subplots(
    1, 2, figsize=(10, 3.8), constrained_layout=True
)
pigp.plotting.traces(samples, "operator.diffusivity", ax=left)
pigp.plotting.posterior(
    samples,
    "operator.diffusivity",
    ax=right,
    laplace=(float(alpha.numpy()), std),
    truth=1.0,
)
draws = samples["operator.diffusivity"].ravel()
low, high = np.quantile(draws, [0.025, 0.975])
print(f"NUTS 95% interval of alpha: [{low:.4f}, {high:.4f}]")
print(
    f"Laplace 95% interval:       [{alpha.numpy() - 1.96 * std:.4f}, "
    f"{alpha.numpy() + 1.96 * std:.4f}]"
)

# %% [markdown]
# ## The predictive band
#
# ML-II's band uses one set of hyper-parameters; the band from samples also
# carries their uncertainty. How much of a 50 x 50 grid does each 95% band
# cover?

# %%
X, _ = pigp.plotting.grid(50)
u = solution(X)[0]
for name, options in (("ML-II", {}), ("NUTS", {"samples": samples})):
    mean, var = model.predict(X, **options)
    inside = np.abs(mean - u) <= 1.96 * np.sqrt(var)
    error = np.linalg.norm(mean - u) / np.linalg.norm(u)
    covered = inside.mean()
    print(f"{name}: relative L2 of u {error:.2e}, band covers {covered:.0%}")
