"""The training objective: the negative log marginal likelihood and its gradient.

``loss = 0.5 y' K^-1 y + sum(log diag(chol)) + 0.5 N log(2 pi)``, with ``K`` the
joint covariance of the data sets (``pigp.covariance.joint``) and ``chol``
its lower Cholesky factor. Its gradient in any parameter theta is
``0.5 tr((K^-1 - alpha alpha') dK/dtheta)`` with ``alpha = K^-1 y``: one
vector-Jacobian product of the (compiled) Gram assembly with the cotangent
``W = 0.5 (K^-1 - alpha alpha')``. ``K^-1`` comes from one of two back ends,
and nothing differentiates through a factorisation:

- ``"tensorflow"``: TensorFlow's Cholesky; small problems and accelerators;
  also the only one that runs inside a compiled loop of many steps;
- ``"lapack"``: LAPACK's potrf/potrs/potri through SciPy; CPU from N = 500.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict

import numpy as np
import scipy.linalg

from ._tensorflow import tf
from .covariance import joint, joint_blocks, whole_gradient
from .kernels import Kernel
from .parameters import Parameter, substituted

__all__ = ["Objective", "gaussian_nll", "LAPACK_FROM"]

#: Joint sizes from which the LAPACK back end is chosen on a machine without a GPU.
LAPACK_FROM = 500


def gaussian_nll(y_dot_alpha, log_diag_chol, n):
    """``-log N(y | 0, K)`` from ``y' K^-1 y``, ``sum(log diag(chol K))`` and ``len(y)``
    (NumPy numbers or tensors alike)."""
    return 0.5 * y_dot_alpha + log_diag_chol + 0.5 * n * math.log(2.0 * math.pi)


@functools.cache
def has_gpu() -> bool:
    """Whether TensorFlow sees a GPU (fixed once TensorFlow has started)."""
    return bool(tf.config.list_logical_devices("GPU"))


def terms_key(terms) -> tuple:
    """What a compiled program captures of resolved operator terms: each coefficient
    (by identity) and its multi-index."""
    return tuple((id(c), i) for c, i in terms)


def structure(sets) -> tuple:
    """What compiled programs capture of the data sets besides their arrays: names,
    operator terms and noise parameters (by identity)."""
    return tuple((s.name, terms_key(s.terms), id(s.noise)) for s in sets)


def data_parameters(sets) -> list:
    """The parameters of data sets, each once: each set's noise and those in its
    operator's coefficients."""
    return _unique(
        p for s in sets for p in (s.noise, *(q for c, _ in s.terms for q in c.parameters))
    )


def covariance_parameters(kernel, sets) -> list:
    """Every parameter the joint covariance of ``sets`` depends on, each once: the
    kernel's, then ``data_parameters``."""
    return _unique([*kernel.parameters.values(), *data_parameters(sets)])


def _unique(parameters) -> list:
    """``parameters`` in order, each object once."""
    unique = []
    for p in parameters:
        if not any(p is q for q in unique):
            unique.append(p)
    return unique


#: Compiled covariance programs kept for objectives of the same structure, most recent last.
SHARED_PROGRAMS = 16
_shared = OrderedDict()


def structure_key(kernel, sets, parameters, jitter: float, dtype):
    """What the covariance programs of an objective depend on besides the values of
    its parameters (which are their arguments): the kernel's class and settings,
    each set's operator terms and noise, which parameter sits where. None where the
    kernel does not describe itself (``get_config``)."""
    place = {id(p): i for i, p in enumerate(parameters)}

    def describe(item):
        if isinstance(item, Parameter):
            return ("parameter", place.get(id(item)), item.shape)
        if isinstance(item, Kernel):
            return (type(item), describe(item.get_config()))
        if isinstance(item, dict):
            return tuple((k, describe(v)) for k, v in sorted(item.items()))
        if isinstance(item, (list, tuple)):
            return tuple(describe(v) for v in item)
        if isinstance(item, np.ndarray):
            return ("array", item.shape, item.tobytes())
        if item is None or isinstance(item, (bool, int, float, str, np.number)):
            return item
        if callable(item):
            return ("callable", item)
        raise TypeError(f"cannot describe {item!r}")

    try:
        kernel_key = describe(kernel)
    except (NotImplementedError, TypeError):
        return None
    sets_key = tuple(
        (
            tuple(
                ((c.constant, tuple((place[id(p)], k) for p, k in c.factors)), tuple(index))
                for c, index in s.terms
            ),
            place[id(s.noise)],
        )
        for s in sets
    )
    return (kernel_key, sets_key, float(jitter), tf.as_dtype(dtype).name)


def _shared_programs(objective) -> tuple:
    """``(gram, vjp)``: the compiled programs of ``objective``, those of an earlier
    objective of the same structure where there is one (traced and compiled once)."""
    key = structure_key(
        objective.kernel, objective.sets, objective.parameters, objective.jitter, objective.dtype
    )
    if key is not None and key in _shared:
        _shared.move_to_end(key)
        return _shared[key]
    programs = (
        tf.function(objective._covariance_at, jit_compile=True, autograph=False),
        tf.function(objective._vjp, jit_compile=True, autograph=False),
    )
    if key is not None:
        _shared[key] = programs
        while len(_shared) > SHARED_PROGRAMS:
            _shared.popitem(last=False)
    return programs


class Objective:
    """The negative log marginal likelihood of data sets of a fixed structure.

    The data themselves are arguments of every method (``Xs``: one tensor of
    points per set; ``y``: the standardised targets, concatenated), so one
    objective serves any data of the same structure, and its compiled programs
    are traced once per shape.

    Args:
        kernel: the prior covariance of u.
        sets: the data sets (``pigp.data.DataSet``); their terms and noise
            parameters are used, not their arrays.
        variables: the unconstrained ``tf.Variable`` objects gradients are taken in.
        jitter: the relative diagonal jitter of each block.
        dtype: the dtype the covariance is computed in.
        priors: ``pigp.Parameter`` objects with a prior, among those whose
            variables these are: their ``-log prior`` is added to the loss (the
            negative log posterior, up to a constant; its minimum is the mode of
            the constrained values).
    """

    def __init__(self, kernel, sets, variables, jitter: float, dtype, priors=()):
        self.kernel = kernel
        self.sets = tuple(sets)
        self.variables = list(variables)
        self.jitter = float(jitter)
        self.dtype = dtype
        self.priors = tuple(p for p in priors if p.prior is not None)
        self.signature = self.signature_of(self.variables, self.sets, self.priors)
        self.parameters = covariance_parameters(kernel, self.sets)
        # The compiled programs take the parameters' values as arguments: the
        # constraints' transforms run outside them, and gradients in the values
        # are taken on to the variables by a tape around the transforms.
        self._gram, self._gram_vjp = _shared_programs(self)
        # Called from Python, a compiled program is compiled apart from the same
        # program called inside a graph (the training loop); on the TensorFlow
        # path K is therefore taken through a graph too, so that the loss a fit
        # reports and the loss its loop minimised are the same numbers.
        self._gram_in_graph = tf.function(lambda Xs: self._gram(Xs, self.values()), autograph=False)
        self._tf_step = tf.function(self.tf_loss_and_gradient, autograph=False)
        self._programs = {}

    @staticmethod
    def signature_of(variables, sets, priors=()) -> tuple:
        """Two objectives with equal signatures compute the same function."""
        return (
            tuple(id(v) for v in variables),
            structure(sets),
            tuple((id(p), id(p.prior)) for p in priors if p.prior is not None),
        )

    # ----- priors -----------------------------------------------------------------------
    def penalty(self) -> tf.Tensor:
        """``-sum log prior`` of the parameters with priors at their current values
        (float64; 0 without priors; usable inside a graph)."""
        if not self.priors:
            return tf.constant(0.0, tf.float64)
        return -tf.add_n([p.log_prior() for p in self.priors])

    def _penalty_and_gradient(self):
        with tf.GradientTape() as tape:
            penalty = self.penalty()
        return penalty, tape.gradient(penalty, self.variables, unconnected_gradients="zero")

    def _with_penalty(self, loss, grads):
        if not self.priors:
            return loss, grads
        penalty, extra = self._penalty_and_gradient()
        return loss + penalty, [g + tf.cast(e, tf.float64) for g, e in zip(grads, extra)]

    # ----- the covariance and the loss by autodiff ---------------------------------------
    def covariance(self, Xs) -> tf.Tensor:
        """``K`` at the current parameters (differentiable, not compiled)."""
        return joint(self.kernel, Xs, self.sets, self.jitter, self.dtype)

    def values(self) -> tuple:
        """The constrained values of ``parameters`` (float64 tensors)."""
        return tuple(p.value(tf.float64) for p in self.parameters)

    def _covariance_at(self, Xs, values) -> tf.Tensor:
        """``K`` with ``parameters`` at ``values``."""
        with substituted(self.parameters, values):
            return joint(self.kernel, Xs, self.sets, self.jitter, self.dtype)

    def _chain(self, values_tape, values, dvalues) -> list:
        """Gradients in the values taken on to the variables."""
        return values_tape.gradient(
            values, self.variables, output_gradients=dvalues, unconnected_gradients="zero"
        )

    def nll(self, Xs, y) -> tf.Tensor:
        """The loss as a differentiable tensor, through TensorFlow's Cholesky (the
        reference the fast gradients are tested against; the Laplace Hessian)."""
        K = self.covariance(Xs)
        y = y[:, None]
        chol = tf.linalg.cholesky(K)
        a = tf.linalg.cholesky_solve(chol, y)
        nll = gaussian_nll(
            tf.reduce_sum(y * a),
            tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol))),
            tf.cast(tf.shape(y)[0], self.dtype),
        )
        return nll + tf.cast(self.penalty(), self.dtype) if self.priors else nll

    # ----- compiled paths -----------------------------------------------------------------
    def backend(self, n: int) -> str:
        """``"lapack"`` for ``n >= LAPACK_FROM`` values on a machine without a GPU,
        else ``"tensorflow"``."""
        return "lapack" if n >= LAPACK_FROM and not has_gpu() else "tensorflow"

    def gram(self, Xs) -> np.ndarray:
        """``K`` at the current parameters as the fit computes it (compiled)."""
        n = sum(int(X.shape[0]) for X in Xs)
        if self.backend(n) == "lapack":
            return self._gram(Xs, self.values()).numpy()
        return self._gram_in_graph(Xs).numpy()

    def loss(self, Xs, y) -> float:
        """The loss at the current parameters (compiled Gram, LAPACK's Cholesky);
        NaN where ``K`` is not positive definite."""
        K = self.gram(Xs).astype(np.float64)
        y = np.asarray(y, dtype=np.float64)
        try:
            chol = scipy.linalg.cholesky(K, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return math.nan
        alpha = scipy.linalg.cho_solve((chol, True), y, check_finite=False)
        nll = gaussian_nll(float(y @ alpha), float(np.sum(np.log(np.diag(chol)))), len(y))
        return nll + float(self.penalty().numpy()) if self.priors else nll

    def loss_and_gradient(self, Xs, y, backend: str | None = None) -> tuple:
        """``(loss, [gradient per variable])`` at the current parameters, float64.

        Args:
            Xs: the inputs of each data set (see the class).
            y: the standardised targets, all data sets stacked.
            backend: ``"tensorflow"``, ``"lapack"`` or None (``backend`` decides).

        A ``K`` that is not positive definite gives a NaN loss and NaN gradients.
        """
        backend = backend or self.backend(int(y.shape[0]))
        if backend == "lapack":
            return self._lapack_loss_and_gradient(Xs, y.numpy())
        if backend == "tensorflow":
            return self._tf_step(Xs, y)
        raise ValueError(f"backend: expected 'tensorflow', 'lapack' or None, got {backend!r}")

    def _vjp(self, Xs, values, inverse, alpha):
        """``dloss/dvalues`` from ``K^-1`` (its upper triangle is used) and ``alpha``.

        ``dloss = tr(W dK)`` with ``W = (K^-1 - alpha alpha') / 2``, on the whole matrix
        or block by block (``pigp.covariance.whole_gradient`` decides). Block by block,
        block ``(i, j)``, ``i < j``, of the upper triangle stands for itself and its
        mirror (cotangent ``2 W_ij``), and only the diagonal blocks are symmetrised, so
        no N x N matrix is formed twice.
        """
        sizes = [int(X.shape[0]) for X in Xs]
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(values)
            with substituted(self.parameters, values):
                if whole_gradient(self.kernel, Xs, self.dtype):
                    blocks = {(0, 0): joint(self.kernel, Xs, self.sets, self.jitter, self.dtype)}
                    sizes = [sum(sizes)]
                else:
                    blocks = joint_blocks(self.kernel, Xs, self.sets, self.jitter, self.dtype)
        starts = np.cumsum([0] + sizes)
        cotangents = []
        for i, j in blocks:
            rows, columns = slice(starts[i], starts[i + 1]), slice(starts[j], starts[j + 1])
            outer = alpha[rows, None] * alpha[None, columns]
            if i == j:
                upper = tf.linalg.band_part(inverse[rows, columns], 0, -1)
                full = upper + tf.transpose(upper) - tf.linalg.diag(tf.linalg.diag_part(upper))
                cotangents.append(0.5 * (full - outer))
            else:
                cotangents.append(inverse[rows, columns] - outer)
        return tape.gradient(
            list(blocks.values()),
            values,
            output_gradients=cotangents,
            unconnected_gradients="zero",
        )

    def tf_loss_and_gradient(self, Xs, y):
        """Loss and gradient with TensorFlow's Cholesky; usable inside a graph."""
        with tf.GradientTape() as values_tape:
            values = self.values()
        K = self._gram(Xs, values)
        chol = tf.linalg.cholesky(K)
        alpha = tf.linalg.cholesky_solve(chol, y[:, None])[:, 0]
        loss = gaussian_nll(
            tf.reduce_sum(y * alpha),
            tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol))),
            tf.cast(tf.shape(y)[0], self.dtype),
        )
        inverse = tf.linalg.cholesky_solve(chol, tf.eye(tf.shape(K)[0], dtype=self.dtype))
        grads = self._chain(values_tape, values, self._gram_vjp(Xs, values, inverse, alpha))
        return self._with_penalty(
            tf.cast(loss, tf.float64), [tf.cast(g, tf.float64) for g in grads]
        )

    def _lapack_loss_and_gradient(self, Xs, y: np.ndarray):
        with tf.GradientTape() as values_tape:
            values = self.values()
        K = self._gram(Xs, values).numpy()
        # K is symmetric, so its C-ordered memory is also K in Fortran order.
        potrf, potrs, potri = scipy.linalg.lapack.get_lapack_funcs(
            ("potrf", "potrs", "potri"), (K,)
        )
        chol, info = potrf(K.T, lower=1, overwrite_a=1, clean=0)
        if info != 0:
            nan = tf.constant(np.nan, tf.float64)
            return nan, [tf.fill(tf.shape(v), nan) for v in self.variables]
        alpha, _ = potrs(chol, y, lower=1)
        loss = gaussian_nll(float(y @ alpha), float(np.sum(np.log(np.diag(chol)))), len(y))
        inverse, _ = potri(chol, lower=1, overwrite_c=1)
        # Fortran lower triangle = upper triangle of the C-ordered transpose.
        grads = self._chain(values_tape, values, self._gram_vjp(Xs, values, inverse.T, alpha))
        return self._with_penalty(
            tf.constant(loss, tf.float64), [tf.cast(g, tf.float64) for g in grads]
        )

    # ----- programs of many steps -----------------------------------------------------------
    def program(self, key, build):
        """A compiled program kept with this objective: ``build()`` the first time a
        ``key`` is asked for (e.g. an optimiser's compiled loop), the same after."""
        if key not in self._programs:
            self._programs[key] = build()
        return self._programs[key]
