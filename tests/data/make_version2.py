"""Write the version-2 model files of tests/test_io.py with the pigp of commit f432f77:

git worktree add /tmp/old f432f77
PYTHONPATH=/tmp/old python tests/data/make_version2.py tests/data
"""

import sys

import numpy as np

import pigp

print(pigp.__file__, file=sys.stderr)
out = sys.argv[1]
rng = np.random.default_rng(0)
u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
X_u, X_f = rng.uniform(size=(8, 2)), rng.uniform(size=(10, 2))
model = pigp.PIGP(
    pigp.kernels.SquaredExponential(), pigp.operators.heat(pigp.Parameter(1.5, name="diffusivity"))
)
edge = pigp.Observations(np.array([[0.0, 0.5], [1.0, 0.5]]), [0.0, 0.0], name="edge")
model.fit(X_u, u(X_u), X_f, (np.pi**2 - 1) * u(X_f), observations=[edge], steps=50)
model.save(f"{out}/version2_pigp.npz")
X = rng.uniform(size=(6, 2))
sparse = pigp.SparsePIGP(
    pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), num_inducing=5
)
X_s = rng.uniform(size=(30, 2))
sparse.fit(X_s, u(X_s), steps=20)
sparse.save(f"{out}/version2_sparse.npz")
np.savez(
    f"{out}/version2_predictions.npz",
    X=X,
    pigp_mean=model.predict(X)[0],
    pigp_var=model.predict(X)[1],
    sparse_mean=sparse.predict(X)[0],
    sparse_var=sparse.predict(X)[1],
)
