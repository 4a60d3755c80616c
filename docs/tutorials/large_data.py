# %% [markdown]
# # Large data sets
#
# The exact `pigp.PIGP` factorises the joint covariance of all N data values:
# memory grows as $N^2$ and time as $N^3$, so a few thousand values is its
# range on a laptop. Sensor records, simulation snapshots and dense
# collocation give $10^4$ to $10^7$. `pigp.SparsePIGP` keeps the physics and
# replaces the $N \times N$ covariance by the values of u at M inducing points
# $Z$ (Titsias 2009; Hensman et al. 2013): every data set, u, f, boundary or
# Neumann, enters through its own operator's cross block with $u(Z)$ and its
# own noise. It has the same `fit` / `predict` / `save` /
# `parameter_values` as `PIGP`.
#
# The heat equation $u_t = u_{xx} + f$ with $u = e^{-t}\sin(\pi x)$, observed
# with 1% noise: 20 000 scattered values of u and 2 000 of f. (The benchmark
# `benchmarks/scale.py` runs the same problem up to $10^6$ values; this page
# is executed when the docs are built, so it stays small.)

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import pigp
from pigp import kernels, operators


def heat(X):
    u = np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
    return u, (np.pi**2 - 1) * u


rng = np.random.default_rng(0)


def noisy(y):
    return y + 0.01 * np.sqrt(np.mean(y**2)) * rng.standard_normal(len(y))


X_u, X_f = rng.random((20_000, 2)), rng.random((2_000, 2))
y_u, y_f = noisy(heat(X_u)[0]), noisy(heat(X_f)[1])

x = np.linspace(0, 1, 100)
grid = np.stack(np.meshgrid(x, x), axis=-1).reshape(-1, 2)
truth = heat(grid)[0]


def report(model, seconds):
    mean, var = model.predict(grid)
    error = np.linalg.norm(mean - truth) / np.linalg.norm(truth)
    covered = np.mean(np.abs(mean - truth) <= 1.96 * np.sqrt(var))
    print(
        f"{seconds:5.1f} s   relative L2 of u {error:.2e}   "
        f"95% band covers {covered:.1%}"
    )
    return mean


# %% [markdown]
# ## Minibatches
#
# `method="stochastic"` maximises the evidence lower bound on minibatches.
# Each step draws `batch_size` values from all data sets in proportion to
# their sizes and weights each value by $N_i / b_i$, so the estimate of the
# bound is unbiased; Adam trains the kernel's and the operator's parameters
# and the noise variances, natural-gradient steps train $q(u(Z))$. A step
# costs $O(B M^2)$ whatever N is. Before the steps, `fit` fits the parameters
# to the collapsed bound of a random subset of 2048 values (`warm_start`);
# after them it sets $q$ to its optimum for the final parameters by one pass
# over the data (`optimal_q`).

# %%
model = pigp.SparsePIGP(
    kernels.SquaredExponential(),
    operators.heat(diffusivity=1.0),
    num_inducing=128,
)
start = time.perf_counter()
model.fit(X_u, y_u, X_f, y_f, method="stochastic", steps=500, batch_size=1024)
mean = report(model, time.perf_counter() - start)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
axes[0].plot(model.history, lw=0.5)
axes[0].set(
    xlabel="step", ylabel="minibatch estimate of -ELBO", yscale="symlog"
)
image = axes[1].imshow(
    np.abs(mean - truth).reshape(100, 100),
    origin="lower",
    extent=(0, 1, 0, 1),
    cmap="magma",
)
Z = model.inducing_points
axes[1].plot(Z[:, 0], Z[:, 1], "c.", ms=3, label="inducing points")
axes[1].set(xlabel="x", ylabel="t", title="|error of u|")
axes[1].legend(loc="upper right", fontsize=8)
fig.colorbar(image, ax=axes[1])
fig.tight_layout()

# %% [markdown]
# ## All data at once
#
# `method="collapsed"` maximises Titsias's bound, in which the optimal $q$ is
# in closed form: each evaluation sees every value (time $O(N M^2)$, memory
# $O(N M)$), with no minibatch noise, so L-BFGS can maximise it.
# `method="auto"` (the default) takes it up to 20 000 values.

# %%
model = pigp.SparsePIGP(
    kernels.SquaredExponential(),
    operators.heat(diffusivity=1.0),
    num_inducing=128,
)
start = time.perf_counter()
model.fit(X_u, y_u, X_f, y_f, method="collapsed")
mean = report(model, time.perf_counter() - start)

# %% [markdown]
# Which to use: the collapsed bound while an evaluation over all values is
# affordable and they fit in memory as an $N \times M$ block (here, on 22 000
# values, it reached the same error as the stochastic fit in less time); beyond
# that, the stochastic bound, whose memory does not grow with N. Both need M
# large enough for the field: the error stops falling with N once the inducing
# points, not the data, limit it; raise `num_inducing` then.
#
# ## What the physics buys when u is scarce
#
# u only on the initial and boundary lines (300 values), the forcing at
# 5 000 points inside. A sparse GP on u alone knows nothing of the interior;
# the physics-informed one carries the boundary values inwards through the PDE.

# %%
t_side = np.linspace(0, 1, 101)[1:]
X_line = np.concatenate(
    [
        np.stack([x, np.zeros(100)], 1),
        np.stack([0 * t_side, t_side], 1),
        np.stack([1 + 0 * t_side, t_side], 1),
    ]
)
y_line = noisy(heat(X_line)[0])
X_inside = rng.random((5_000, 2))
y_inside = noisy(heat(X_inside)[1])

plain = pigp.SparsePIGP(
    kernels.SquaredExponential(), operators.heat(1.0), num_inducing=64
)
start = time.perf_counter()
plain.fit(X_line, y_line, method="collapsed")
mean_plain = report(plain, time.perf_counter() - start)

physics = pigp.SparsePIGP(
    kernels.SquaredExponential(), operators.heat(1.0), num_inducing=128
)
start = time.perf_counter()
physics.fit(
    X_line,
    y_line,
    X_inside,
    y_inside,
    method="collapsed",
)
mean_physics = report(physics, time.perf_counter() - start)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for ax, mean, title in zip(
    axes, (mean_plain, mean_physics), ("u data only", "u and f data")
):
    image = ax.imshow(
        np.abs(mean - truth).reshape(100, 100),
        origin="lower",
        extent=(0, 1, 0, 1),
        cmap="magma",
    )
    ax.set(xlabel="x", ylabel="t", title=f"|error of u|, {title}")
    fig.colorbar(image, ax=ax)
fig.tight_layout()

# %% [markdown]
# ## Several devices and machines
#
# Training is data-parallel through `tf.distribute`: create the model under a
# strategy's scope, and `fit` splits every global minibatch across the
# replicas, sums their losses and gradients, and applies the same update on
# each. The global batches do not depend on the number of replicas, so
# neither does the result: in the tests, two replicas follow one device's
# losses to 1e-11, relative, over 50 steps, and two worker processes follow
# one process's over 20.
#
# On the GPUs of one machine:
#
# ```python
# strategy = tf.distribute.MirroredStrategy()  # every visible GPU
# with strategy.scope():
#     model = pigp.SparsePIGP(
#         kernels.SquaredExponential(), operators.heat(1.0), num_inducing=512
#     )
# model.fit(
#     X_u, y_u, X_f, y_f, method="stochastic", batch_size=4096, steps=5000
# )
# ```
#
# On several machines, run the same script on each, with `TF_CONFIG` naming
# the cluster and this machine's place in it, and
# `tf.distribute.MultiWorkerMirroredStrategy()` as the strategy:
#
# ```bash
# # on host-a (index 1 on host-b)
# export TF_CONFIG='{"cluster": {"worker": ["host-a:12345", "host-b:12345"]},
#                    "task": {"type": "worker", "index": 0}}'
# python train.py
# ```
#
# Every worker reads the whole data set and draws the same global batches
# (the same `seed`), then takes its own replicas' share of each. Save and
# predict from worker 0. The batch size is global: with more replicas, raise
# it to keep each replica busy. The step is compiled with XLA where a process
# holds one replica (one device, or one per worker); with several replicas in
# one process the kernel blocks run as a plain TensorFlow graph.
