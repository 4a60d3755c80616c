# %% [markdown]
# # Plotting and diagnostics
#
# `pigp.plotting` draws what a fitted model knows: posterior mean, standard
# deviation and error maps with the data overlaid, 1-D slices with ±2σ bands,
# and the training curve. Every function takes an optional matplotlib `ax`,
# returns the axes, and works headless (the Agg backend).

# %%
import textwrap

import matplotlib.pyplot as plt
import numpy as np

import pigp

rng = np.random.default_rng(1)
u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
X_u = np.array(
    [[x, 0.0] for x in np.linspace(0, 1, 8)]
    + [[b, t] for b in (0.0, 1.0) for t in np.linspace(0, 1, 7)[1:]]
)
X_f = rng.uniform(size=(30, 2))
noise = 0.01
y_u = u(X_u) + noise * rng.standard_normal(len(X_u))
y_f = (np.pi**2 - 1) * u(X_f) * (1 + noise * rng.standard_normal(len(X_f)))

log = []
model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
model.fit(
    X_u, y_u, X_f, y_f, callback=lambda step, loss, m: log.append((step, loss))
)
seen = ", ".join(f"{step}: {loss:.2f}" for step, loss in log)
print(textwrap.fill(f"callback saw (step: loss) {seen}", 79))

# %% [markdown]
# `fit(..., verbose=True)` shows a tqdm progress bar with the current loss; the
# `callback(step, loss, model)` hook is called after every compiled call of up to
# 250 Adam steps (return `True` from it to stop early).
#
# ## Maps

# %%
X, _ = pigp.plotting.grid(60)
mean, var = model.predict(X)
pigp.plotting.posterior_maps(
    X, mean, var, truth=u(X), points={"u data": X_u, "f data": X_f}
)
inside = np.abs(mean - u(X)) <= 1.96 * np.sqrt(var)
print(f"95% band covers {inside.mean():.0%} of the grid")

# %% [markdown]
# ## Slices with ±2σ bands, and the forcing

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
for t in (0.25, 0.75):
    pigp.plotting.slice_at(model, t, ax=axes[0], truth=u)
pigp.plotting.slice_at(
    model, 0.5, ax=axes[1], output="f", truth=lambda X: (np.pi**2 - 1) * u(X)
)

# %% [markdown]
# ## The training curve
#
# The loss at every iteration: Adam's steps (up to 2000; fewer where Adam
# stalls, see the performance page), then L-BFGS-B's iterations
# (`model.lbfgs_evaluations` holds every loss its line searches evaluated).
# Steps whose loss or gradient was not finite would be marked (they are
# skipped, see `model.rejected_steps`).

# %%
ax = pigp.plotting.training_curve(model.history, rejected=model.rejected_steps)
ax.set_yscale("symlog")
print(
    f"{len(model.history)} iterations "
    f"({len(model.lbfgs_evaluations)} L-BFGS evaluations), "
    f"final loss {model.history[-1]:.3f}, {len(model.rejected_steps)} rejected"
)
