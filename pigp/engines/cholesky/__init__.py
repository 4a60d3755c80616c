"""The sparse inverse-Cholesky engine: kernel collocation at 10^4-10^5 points.

- ``ordering``: the maximin order of the measurements and each column's neighbours
  (points alone: one pattern serves every kernel and Gauss-Newton step);
- ``factor``: the KL-optimal sparse factor ``U``, ``Theta^-1 ~ U U'``, from pigp's
  tape-derived kernel blocks in batches of small dense Cholesky factorisations;
- ``solve``: triangular solves, products with ``Theta``, preconditioned CG;
- ``collocation``: linear and Gauss-Newton solves of a PDE through the factors.

Not yet behind ``PIGP.fit``: the functions here are the engine's stages, used directly.
"""
