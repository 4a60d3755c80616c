"""Titsias's collapsed bound as an objective, and the compiled inducing-point blocks.

``CollapsedObjective`` is the loss of ``SparsePIGP``'s collapsed method (and the one
its Laplace and NUTS read): ``-(Titsias's bound) - log prior`` with the interface of
``pigp.engines.dense.objective.Objective`` that the minimisers and the sampler use.
``inducing_blocks_program`` compiles ``(Kzz, [Kzx_i], [kxx_i])`` for a structure, and
``chunk_statistics_program`` the sufficient statistics of the optimal ``q`` from a
chunk of one data set.
"""

from __future__ import annotations

from ..._tensorflow import tf
from ..._warnings import warn
from ...operators.linear import Identity
from ...parameters import substituted
from ...structure import Variables, program
from .inducing import (
    _stacked,
    collapsed_bound,
    expected_log_likelihood,
    inducing_blocks,
    marginals,
    projection,
)

__all__ = [
    "CollapsedObjective",
    "inducing_blocks_program",
    "chunk_statistics_program",
    "unexplained",
    "warn_if_loose",
]

#: ``unexplained`` above which ``parameter_intervals`` and ``parameter_uncertainty``
#: warn: the inducing points leave a twentieth of the noise variance unexplained at an
#: average value. In ``benchmarks/calibration_kinds.py``'s sparse heat problem (1,200
#: values) it was 0.26-0.37 at M = 64-512, where alpha came out 1-6 of its Laplace
#: stds below the truth (the dense model's within 1.3).
UNEXPLAINED_WARNS = 0.05


class CollapsedObjective:
    """``-(Titsias's bound) - log prior``: the loss of ``method="collapsed"``, with the
    interface ``pigp.fitting.training``'s minimisers use (``variables``, ``unconstrained``,
    ``loss``, ``loss_and_gradient``, ``tf_loss_and_gradient``, ``backend``,
    ``program``). Its programs are pure functions of the points, the targets and
    ``unconstrained`` (the covariance parameters' variables, then any other trained
    ones, then the inducing points), shared by structure.

    Args:
        structure: the ``pigp.structure.Structure`` of the data sets.
        inducing: the inducing points' variable (M, d).
        variables: the variables trained (parameters' and perhaps ``inducing``).
        priors: the trained parameters with a prior.
    """

    def __init__(self, structure, inducing, variables, priors=()):
        self.structure, self.sets, self.dtype = structure, structure.sets, structure.dtype
        self.inducing = inducing
        self.variables = list(variables)
        self.priors = tuple(p for p in priors if p.prior is not None)
        self._variables = Variables(structure, self.variables, self.priors, last=(inducing,))
        self.unconstrained = self._variables.unconstrained
        self.key = (structure.key, "collapsed", *self._variables.key)

    def program(self, what, build):
        return program((self.key, what), build)

    def trained_of(self, unconstrained) -> list:
        return self._variables.trained_of(unconstrained)

    def negative_bound(self, Xs, y, unconstrained) -> tf.Tensor:
        parameters = self.structure.parameters
        with substituted(parameters, unconstrained=unconstrained):
            values = tuple(p.value() for p in parameters)
            Z = tf.cast(unconstrained[-1], self.dtype)
            blocks = inducing_blocks_program(self.structure)(Z, Xs, values)
            bound = collapsed_bound(blocks, Xs, self.sets, tf.cast(y, self.dtype), self.dtype)
        loss = -tf.cast(bound, tf.float64)
        if self.priors:
            loss -= self._variables.log_prior(unconstrained)
        return loss

    def nll(self, Xs, y, unconstrained) -> tf.Tensor:
        """The loss (``negative_bound``): the name ``pigp.inference.laplace`` reads."""
        return self.negative_bound(Xs, y, unconstrained)

    def tf_loss_and_gradient(self, Xs, y, unconstrained):
        trained = self.trained_of(unconstrained)
        with tf.GradientTape() as tape:
            tape.watch(trained)
            loss = self.negative_bound(Xs, y, unconstrained)
        grads = tape.gradient(loss, trained, unconnected_gradients="zero")
        return loss, [tf.cast(g, tf.float64) for g in grads]

    def loss_and_gradient(self, Xs, y, backend=None):
        step = self.program("step", lambda: tf.function(self.tf_loss_and_gradient, autograph=False))
        return step(Xs, y, self.unconstrained)

    def loss(self, Xs, y) -> float:
        return float(self.loss_and_gradient(Xs, tf.constant(y, self.dtype))[0].numpy())

    #: ``pigp.inference.laplace``'s Hessian by central differences of the gradient:
    #: the nested tapes took the peak of 3,000 values at M = 256 from 1.41 to 4.66 GB.
    hessian_by_differences = True

    def backend(self, n: int) -> str:
        return "tensorflow"


def inducing_blocks_program(structure, terms=None, jit: bool = True):
    """The compiled ``(Z, Xs, values) -> (Kzz, [Kzx_i], [kxx_i])``
    (``inducing.inducing_blocks``) of ``structure``'s kernel and its data sets'
    operators (or ``terms``: one operator's terms per entry of ``Xs``; their
    parameters among ``structure.parameters``, or after them in ``values``),
    shared by structure. ``values``: the constrained values of
    ``structure.parameters`` (and of ``terms``'s own), so that gradients reach the
    caller's variables through them."""
    terms = tuple(s.terms for s in structure.sets) if terms is None else tuple(terms)
    extra = structure.extra([t for ts in terms for t in ts])
    key = (
        structure.key,
        "inducing blocks",
        tuple(structure.terms(t, extra) for t in terms),
        jit,
    )

    def build():
        parameters = [*structure.parameters, *extra]
        identity = Identity.resolve(len(structure.sets[0].terms[0][1]))

        def blocks(Z, Xs, values):
            with substituted(parameters, values):
                return inducing_blocks(structure.kernel, Z, Xs, identity, terms, structure.jitter)

        return tf.function(blocks, jit_compile=jit, autograph=False)

    compiled = program(key, build)
    if not extra:
        return compiled
    return lambda Z, Xs, values: compiled(Z, Xs, (*values, *(p.value() for p in extra)))


def chunk_statistics_program(structure, index: int):
    """A compiled ``(X, y, mask, values, Z, m, Ls) -> (P, r, ell)`` for chunks of data
    set ``index``: its values' ``P = sum a a' / noise``, ``r = sum a y / noise`` and
    the sum of their expected log likelihoods under ``q = N(m, Ls Ls')`` (``mask``
    0 for padding); shared by structure."""
    s = structure.sets[index]
    blocks = inducing_blocks_program(structure, (s.terms,))

    def build():
        noise_place = structure.place(s.noise)

        def statistics(X, y, mask, values, Z, m, Ls):
            Kzz, (Kzx,), (kxx,) = blocks(Z, (X,), values)
            A = projection(tf.linalg.cholesky(Kzz), Kzx)
            noise = tf.cast(values[noise_place], structure.dtype)
            mean, var = marginals(A, kxx, m, Ls)
            ell = tf.reduce_sum(mask * expected_log_likelihood(y, mean, var, noise))
            scale = mask / noise
            P = tf.matmul(A * scale, A, transpose_b=True)
            return P, tf.linalg.matvec(A, scale * y), ell

        return tf.function(statistics, autograph=False)

    return program((structure.key, "statistics", index), build)


def unexplained(model) -> float:
    """The mean over the model's data of ``(k(x, x) - q(x, x)) / noise`` at its
    parameters, ``q = Kxz Kzz^-1 Kzx`` the inducing points' part of the prior: twice
    the collapsed bound's trace term per value. Titsias's bound trades that term
    against the fit, so where it is not small the bound's optimum leans towards larger
    noise and smoother kernels than the likelihood's, and coefficients move with them."""
    structure = model.structure()
    Xs, _ = model.data.tensors(model.dtype)
    values = tuple(p.value() for p in structure.parameters)
    Z = tf.cast(model.inducing, model.dtype)
    blocks = inducing_blocks_program(structure)(Z, Xs, values)
    _, A, kxx, noise = _stacked(*blocks, Xs, structure.sets, model.dtype)
    return float(tf.reduce_mean((kxx - tf.reduce_sum(tf.square(A), axis=0)) / noise))


def warn_if_loose(model, caller: str) -> None:
    """Warn where ``unexplained(model)`` exceeds ``UNEXPLAINED_WARNS``."""
    share = unexplained(model)
    if share > UNEXPLAINED_WARNS:
        warn(
            f"{caller}: the {model.num_inducing} inducing points leave {share:.2g} of the "
            "noise variance unexplained at an average data point, so the parameters "
            "learned from the collapsed bound can be off by more than these intervals' "
            "widths (alpha 1-6 stds low at 0.26-0.37 in docs/calibration.md); raise "
            "num_inducing until it is below 0.05, or fit pigp.PIGP where the data fit"
        )
