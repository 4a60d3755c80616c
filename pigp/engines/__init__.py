"""Engines: the ways pigp computes a posterior from the joint covariance.

- ``model``: what every engine's model shares (``Model``: the prior, the data sets,
  the parameters, saving, Laplace and NUTS);
- ``dense``: the exact GP (``PIGP``): one Cholesky factor of all the data;
- ``variational``: inducing points (``SparsePIGP``): Titsias's collapsed bound and
  the minibatched variational bound.
"""
