"""Fit a small SparsePIGP with the stochastic ELBO under a tf.distribute strategy and
write its losses as JSON: started in its own process by tests/test_sparse.py.

    python sparse_worker.py OUT one|mirrored|multiworker STEPS

``mirrored`` splits the CPU into two logical devices first; ``multiworker`` reads
``TF_CONFIG`` (set by the test) and writes only from worker 0.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

out, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
elif mode == "multiworker":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
else:
    strategy = tf.distribute.get_strategy()

import pigp  # noqa: E402
from pigp import kernels, operators  # noqa: E402

rng = np.random.default_rng(0)
X_u = rng.random((200, 2))
y_u = np.exp(-X_u[:, 1]) * np.sin(np.pi * X_u[:, 0]) + 0.01 * rng.standard_normal(200)
X_f = rng.random((100, 2))
y_f = (np.pi**2 - 1) * np.exp(-X_f[:, 1]) * np.sin(np.pi * X_f[:, 0])
with strategy.scope():
    model = pigp.SparsePIGP(
        kernels.SquaredExponential(lengthscales=[0.5, 0.5]),
        operators.heat(diffusivity=1.0),
        num_inducing=16,
    )
model.fit(X_u, y_u, X_f, y_f, method="stochastic", steps=steps, batch_size=30, seed=3)
task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
if task.get("index", 0) == 0:
    with open(out, "w") as handle:
        json.dump(
            {
                "losses": model.history,
                "replicas": strategy.num_replicas_in_sync,
                "values": {k: np.asarray(v).tolist() for k, v in model.parameter_values().items()},
            },
            handle,
        )
