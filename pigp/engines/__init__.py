"""Engines: the ways pigp computes a posterior from the joint covariance.

- ``model``: what every engine's model shares (``Model``: the prior, the data sets,
  the parameters, saving, Laplace and NUTS);
- ``dense``: the exact GP (``PIGP``): one Cholesky factor of all the data;
- ``variational``: inducing points (``SparsePIGP``): Titsias's collapsed bound and
  the minibatched variational bound;
- ``cholesky``: sparse inverse-Cholesky factors for collocation at 10^4-10^5 points
  (its stages, not yet behind ``PIGP.fit``).
"""
