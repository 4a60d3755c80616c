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
import time

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
std = model.parameter_uncertainty()["operator.diffusivity"]
print(f"ML-II alpha = {alpha.numpy():.4f}, Laplace std = {std:.4f}")
print({name: choice.kept for name, choice in model.noise_choice.items()})

# %% [markdown]
# ## Sampling
#
# Four chains of 1000 draws after 500 burn-in steps. The parameters without a
# prior (all of them here) get a weak prior centred on the fitted value: for
# a coefficient of the PDE such as $\alpha$ a normal in its value with standard
# deviation $\max(|\alpha|, 1)$, cut at 0 for a positive one; for the kernel's
# and the noises' positive parameters a log-normal of scale 2. `sample` says
# so in the warning below the cell: give `pigp.Parameter(..., prior=...)` to the
# parameters the data say little about.

# %%
start = time.perf_counter()
samples = model.sample(num_results=1000, num_burnin=500, num_chains=4, seed=0)
seconds = time.perf_counter() - start
print(samples.summary())
steps = 4 * (1000 + 500)
print(
    f"{seconds:.0f} s for {steps} NUTS steps: "
    f"{1e3 * seconds / steps:.1f} ms a step"
)

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

# %% [markdown]
# ## What the numbers mean
#
# **A band from one fit.** `predict` after `fit` conditions on the data with
# the hyper-parameters (lengthscales, variances, noises, and $\alpha$) held at
# their fitted values. Its 95% band says where u is, *if* those values are
# right: it accounts for the noise and for what the data leave undetermined,
# not for the uncertainty of the values themselves. When they are uncertain
# (few data, a coefficient learned from noisy data), the band is too narrow,
# and it covers less than 95% of the grid, as above.
#
# **What NUTS adds.** `predict(X, samples=samples)` averages over draws of
# every trainable parameter: the mean is the average of the draws' means, the
# variance the average of their variances plus the variance of their means.
# The second term is the hyper-parameters' uncertainty that the band from one
# fit leaves out; here it widens the band towards its nominal coverage.
#
# **How much sampling.** The chains need to agree (R-hat below about 1.01)
# and to be worth a few hundred independent draws (ESS) for the quantiles of
# a 95% interval to settle (Vehtari et al., Bayesian Analysis 16, 2021). The
# cost per step is printed above: each step evaluates the marginal
# likelihood and its gradient several times (the leapfrog steps), so it grows
# as $N^3$ with the number of data values, and the four chains above take
# the time printed. Check `samples.rhat` and `samples.ess` before trusting an
# interval; `sample` warns when R-hat is above 1.01, and when transitions
# diverged (the leapfrog steps were too long for a sharply curved part of the
# posterior, which the draws then under-visit): sample again with
# `target_accept=0.95`.
#
# **Evidence is not accuracy.** The log marginal likelihood
# (`model.log_marginal_likelihood()`) measures how probable the data are
# under a model, which is what `PIGP("auto", ...)` and the noise decision of
# `fit` compare. A higher value is evidence for a model of the data, not a
# guarantee of a smaller error in u or in a coefficient: a more flexible
# kernel can explain the same points better and still miss between them.
# Where the error matters, hold out data (or compare against a solution you
# know) before trusting the choice.
