"""The training objective: the negative log marginal likelihood and its gradient.

``loss = 0.5 y' K^-1 y + sum(log diag(chol)) + 0.5 N log(2 pi)``, with ``K`` the
joint covariance of the data sets (``pigp.kernels.covariance.joint``) and ``chol``
its lower Cholesky factor. Its gradient in any parameter theta is
``0.5 tr((K^-1 - alpha alpha') dK/dtheta)`` with ``alpha = K^-1 y``: one
vector-Jacobian product of the (compiled) Gram assembly with the cotangent
``W = 0.5 (K^-1 - alpha alpha')``. ``K^-1`` comes from one of two back ends,
and nothing differentiates through a factorisation:

- ``"tensorflow"``: TensorFlow's Cholesky; small problems and accelerators;
  also the only one that runs inside a compiled loop of many steps;
- ``"lapack"``: LAPACK's potrf/potrs/potri through SciPy; CPU from
  ``pigp.kernels.covariance.LARGE_FROM`` = 500 values (where ``K`` is also assembled
  block by block).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.linalg

from ..._tensorflow import tf
from ...kernels.covariance import from_blocks, joint, joint_blocks, large, whole_gradient
from ...linalg import gaussian_nll, small_cholesky
from ...parameters import substituted
from ...structure import Structure, Variables, program

__all__ = ["Objective", "gaussian_nll"]


#: Training programs on at most this many values are one XLA program each, the
#: Cholesky factorisation included (``Objective.fuses``): each call of an XLA program
#: from a graph has a fixed cost, which the Gram matrix's and its VJP's programs around
#: TensorFlow's Cholesky pay at every step, while the fused program's column-by-column
#: factorisation grows as n^3 (``python benchmarks/everyday.py --fusion 20 40 48 52 56
#: 64 96 128``: an Adam step 4.0x faster fused at 20 values, 1.7x at 40, 1.3x at 52,
#: 1.03x at 56, 0.90x at 64, 0.12x at 128; a first fit compiles up to 0.9 s longer).
FUSED_UP_TO = 52


@functools.cache
def has_gpu() -> bool:
    """Whether TensorFlow sees a GPU (fixed once TensorFlow has started)."""
    return bool(tf.config.list_logical_devices("GPU"))


def _cotangents(blocks: dict, sizes: list, inverse, alpha) -> list:
    """The loss's cotangent ``W = (K^-1 - alpha alpha') / 2`` in each of ``blocks``
    (``Objective._taped_blocks``), from the upper triangle of ``inverse``: an
    off-diagonal block ``(i, j)`` stands for itself and its mirror (``2 W_ij``), a
    diagonal one is symmetrised."""
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
    return cotangents


def _moving(s):
    linearisation = getattr(getattr(s, "operator", None), "linearisation", None)
    return linearisation if linearisation is not None and linearisation.moves_target else None


class Objective:
    """The negative log marginal likelihood of data sets of a fixed structure.

    The data themselves are arguments of every method (``Xs``: one tensor of
    points per set; ``y``: the standardised targets, concatenated), so one
    objective serves any data of the same structure. Its compiled programs are
    those of its ``key`` (``pigp.structure.program``): pure functions of the
    points, the targets and the variables, shared by every objective of the
    same structure, trained variables and priors.

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
        self.structure = Structure(kernel, self.sets, jitter, dtype)
        self.parameters = self.structure.parameters
        self._variables = Variables(self.structure, self.variables, self.priors)
        #: Every variable the programs read (``pigp.structure.Variables``).
        self.unconstrained = self._variables.unconstrained
        #: What the training programs depend on: the structure, which variables are
        #: trained, the extra ones' shapes and the priors (by identity).
        #: Which sets the loss conditions on (``Observations(condition=True)``).
        self.conditions = tuple(bool(getattr(s, "condition", False)) for s in self.sets)
        self.key = (self.structure.key, *self._variables.key)
        if any(self.conditions):
            self.key = (*self.key, ("condition", self.conditions))
        #: Per set, the linearisation whose right-hand side moves with a trained
        #: coefficient (``pigp.operators.linearisation.Linearisation.target_shift``), else None.
        self.moving = tuple(_moving(s) for s in self.sets)
        self.moves = any(m is not None for m in self.moving)
        if self.moves:
            self.key = (*self.key, ("moving", tuple(m is not None for m in self.moving)))
        self.signature = self.signature_of(self.variables, self.sets, self.priors)

    @staticmethod
    def signature_of(variables, sets, priors=()) -> tuple:
        """Two objectives with equal signatures are the same objective (the same
        variables, data sets and priors, by identity)."""
        return (
            tuple(id(v) for v in variables),
            tuple((s.name, id(s)) for s in sets),
            tuple((id(p), id(p.prior)) for p in priors if p.prior is not None),
        )

    def program(self, what, build):
        """The compiled program ``what`` of this objective's ``key`` (e.g. an
        optimiser's compiled loop): ``build()`` the first time any objective of the
        same key asks for it, the same program after. ``build`` must make a pure
        function of its arguments; variables enter as ``unconstrained``."""
        return program((self.key, what), build)

    @property
    def _gram(self):
        """``(Xs, values) -> K``, compiled (XLA), shared by structure."""
        return program(
            (self.structure.key, "gram"),
            lambda: tf.function(self._covariance_at, jit_compile=True, autograph=False),
        )

    @property
    def _gram_vjp(self):
        """``(Xs, values, K^-1, alpha) -> dloss/dvalues``, compiled (XLA), shared by
        structure."""
        return program(
            (self.structure.key, "vjp"),
            lambda: tf.function(self._vjp, jit_compile=True, autograph=False),
        )

    def values_of(self, unconstrained) -> tuple:
        """The constrained values of ``parameters`` from ``unconstrained`` (one tensor
        or variable per entry of ``self.unconstrained``; float64)."""
        return tuple(p.forward(u) for p, u in zip(self.parameters, unconstrained))

    def trained_of(self, unconstrained) -> list:
        """The entries of ``unconstrained`` that are this objective's ``variables``."""
        return self._variables.trained_of(unconstrained)

    # ----- priors -----------------------------------------------------------------------
    def penalty(self, unconstrained=None) -> tf.Tensor:
        """``-sum log prior`` of the parameters with priors at their current values, or
        at ``unconstrained`` (float64; 0 without priors; usable inside a graph)."""
        if not self.priors:
            return tf.constant(0.0, tf.float64)
        if unconstrained is None:
            return -tf.add_n([p.log_prior() for p in self.priors])
        return -self._variables.log_prior(unconstrained)

    def _with_penalty(self, loss, grads, unconstrained):
        if not self.priors:
            return loss, grads
        trained = self.trained_of(unconstrained)
        with tf.GradientTape() as tape:
            tape.watch(trained)
            penalty = self.penalty(unconstrained)
        extra = tape.gradient(penalty, trained, unconnected_gradients="zero")
        return loss + penalty, [g + tf.cast(e, tf.float64) for g, e in zip(grads, extra)]

    # ----- the covariance and the loss by autodiff ---------------------------------------
    def covariance(self, Xs) -> tf.Tensor:
        """``K`` at the current parameters (differentiable, not compiled)."""
        return joint(self.kernel, Xs, self.sets, self.jitter, self.dtype)

    def values(self) -> tuple:
        """The constrained values of ``parameters`` (float64 tensors)."""
        return tuple(p.value(tf.float64) for p in self.parameters)

    def _shift(self, Xs) -> tf.Tensor:
        """How far the targets move from those given at the parameters' current (or
        substituted) values: a linearised equation's right-hand side where it depends
        on a trained coefficient, zero elsewhere (``pigp.operators.linearisation``)."""
        return tf.concat(
            [
                tf.zeros(tf.shape(X)[:1], self.dtype) if m is None else m.target_shift(self.dtype)
                for m, X in zip(self.moving, Xs)
            ],
            0,
        )

    def _shift_and_vjp(self, Xs, values, alpha=None):
        """``(shift, tape)`` at ``values``, or with ``alpha`` (``dloss/dy``) the shift's
        contribution to ``dloss/dvalues``."""
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(values)
            with substituted(self.parameters, values):
                shift = self._shift(Xs)
        if alpha is None:
            return shift, tape
        return tape.gradient(
            shift,
            values,
            output_gradients=tf.cast(alpha, shift.dtype),
            unconnected_gradients="zero",
        )

    def _covariance_at(self, Xs, values) -> tf.Tensor:
        """``K`` with ``parameters`` at ``values``."""
        with substituted(self.parameters, values):
            return joint(self.kernel, Xs, self.sets, self.jitter, self.dtype)

    # ----- conditioning sets ----------------------------------------------------------------
    # With sets C conditioned on and the others N, the loss is -log p(y_N | y_C), taken
    # from ONE Cholesky factor L of K with the rows of C first (P K P' = L L'):
    # z = L^-1 P y, and -log p(y_N | y_C) = 0.5 |z_N|^2 + sum(log diag L_NN)
    # + 0.5 n_N log(2 pi), with no difference of two marginal likelihoods (which
    # loses every digit where y_C' K_CC^-1 y_C is large against the result, as for a
    # linearised equation the prior explains badly). Its gradient's cotangent is
    # 0.5 (B'B - u v' - v u' - v v') with B = (L^-1)_N (the rows of N), u = P' (L^-1)_C' z_C
    # (``K_CC^-1 y_C`` in the rows of C) and v = P' B' z_N: ``K^-1 - K_CC^-1`` placed
    # is exactly B'B, so nothing large cancels either.
    def _condition_order(self, Xs) -> tuple | None:
        """``(permutation putting the conditioned rows first, their number)`` or None."""
        if not any(self.conditions):
            return None
        starts = np.cumsum([0] + [int(X.shape[0]) for X in Xs])
        ranges = [np.arange(starts[i], starts[i + 1]) for i in range(len(Xs))]
        first = [r for r, c in zip(ranges, self.conditions) if c]
        rest = [r for r, c in zip(ranges, self.conditions) if not c]
        return np.concatenate(first + rest), sum(len(r) for r in first)

    def _tf_conditional(self, K, y, order, gradient=False, cholesky=tf.linalg.cholesky):
        """``-log p(y_N | y_C)`` (TensorFlow) and, with ``gradient``, ``(inverse,
        alpha)`` in the original order such that the loss's cotangent is
        ``0.5 (inverse - alpha alpha')`` (see above)."""
        perm, n_c = order
        p = tf.constant(perm, tf.int32)
        chol = cholesky(tf.gather(tf.gather(K, p, axis=0), p, axis=1))
        z = tf.linalg.triangular_solve(chol, tf.gather(y, p)[:, None], lower=True)[:, 0]
        loss = gaussian_nll(
            tf.reduce_sum(tf.square(z[n_c:])),
            tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)[n_c:])),
            float(len(perm) - n_c),
        )
        if not gradient:
            return loss, None, None
        inv_chol = tf.linalg.triangular_solve(chol, tf.eye(len(perm), dtype=K.dtype), lower=True)
        B = inv_chol[n_c:]
        u = tf.linalg.matvec(inv_chol[:n_c], z[:n_c], transpose_a=True)
        v = tf.linalg.matvec(B, z[n_c:], transpose_a=True)
        inverse = tf.matmul(B, B, transpose_a=True) - (
            u[:, None] * v[None, :] + v[:, None] * u[None, :]
        )
        back = tf.constant(np.argsort(perm), tf.int32)
        inverse = tf.gather(tf.gather(inverse, back, axis=0), back, axis=1)
        return loss, inverse, tf.gather(v, back)

    @staticmethod
    def _np_conditional(K: np.ndarray, y: np.ndarray, order, gradient=False):
        """``_tf_conditional`` with LAPACK; ``(None, None, None)`` where ``K`` is not
        positive definite."""
        perm, n_c = order
        potrf, trtri = scipy.linalg.lapack.get_lapack_funcs(("potrf", "trtri"), (K,))
        chol, info = potrf(K[np.ix_(perm, perm)], lower=1, clean=1, overwrite_a=1)
        if info != 0:
            return None, None, None
        log_diag = float(np.sum(np.log(np.diag(chol)[n_c:])))
        inv_chol, info = trtri(chol, lower=1, overwrite_c=1)
        if info != 0:
            return None, None, None
        z = inv_chol @ y[perm]
        loss = gaussian_nll(float(z[n_c:] @ z[n_c:]), log_diag, len(perm) - n_c)
        if not gradient:
            return loss, None, None
        B = inv_chol[n_c:]
        u = inv_chol[:n_c].T @ z[:n_c]
        v = B.T @ z[n_c:]
        inverse = B.T @ B
        inverse -= np.outer(u, v)
        inverse -= np.outer(v, u)
        back = np.argsort(perm)
        return loss, inverse[np.ix_(back, back)], v[back]

    def _tf_gaussian(self, K, y, cholesky=tf.linalg.cholesky) -> tuple:
        """``(chol, K^-1 y, -log N(y | 0, K))`` for targets ``y`` of shape (n,)."""
        chol = cholesky(K)
        a = tf.linalg.cholesky_solve(chol, y[:, None])[:, 0]
        nll = gaussian_nll(
            tf.reduce_sum(y * a),
            tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol))),
            tf.cast(tf.shape(y)[0], self.dtype),
        )
        return chol, a, nll

    def nll(self, Xs, y, unconstrained=None) -> tf.Tensor:
        """The loss as a differentiable tensor, through TensorFlow's Cholesky (the
        reference the fast gradients are tested against; the Laplace Hessian), at
        the current values or at ``unconstrained``."""
        if unconstrained is None:
            K = self.covariance(Xs)
            if self.moves:
                y = y + tf.cast(self._shift(Xs), y.dtype)
        else:
            with substituted(self.parameters, unconstrained=unconstrained):
                K = self.covariance(Xs)
                if self.moves:
                    y = y + tf.cast(self._shift(Xs), y.dtype)
        order = self._condition_order(Xs)
        if order is None:
            nll = self._tf_gaussian(K, y)[2]
        else:
            nll = self._tf_conditional(K, y, order)[0]
        return nll + tf.cast(self.penalty(unconstrained), self.dtype) if self.priors else nll

    # ----- compiled paths -----------------------------------------------------------------
    def backend(self, n: int) -> str:
        """``"lapack"`` for ``n >= pigp.kernels.covariance.LARGE_FROM`` values on a machine
        without a GPU, else ``"tensorflow"``."""
        return "lapack" if large(n) and not has_gpu() else "tensorflow"

    def gram(self, Xs) -> np.ndarray:
        """``K`` at the current parameters as the fit computes it (compiled)."""
        n = sum(int(X.shape[0]) for X in Xs)
        if self.backend(n) == "lapack":
            return self._gram(Xs, self.values()).numpy()
        # Called from Python, a compiled program is compiled apart from the same
        # program called inside a graph (the training loop); on the TensorFlow path
        # K is therefore taken through a graph too, so that the loss a fit reports
        # and the loss its loop minimised are the same numbers.
        in_graph = self.program(
            "gram in graph",
            lambda: tf.function(
                lambda Xs, unconstrained: self._gram(Xs, self.values_of(unconstrained)),
                autograph=False,
            ),
        )
        return in_graph(Xs, self.unconstrained).numpy()

    def loss(self, Xs, y) -> float:
        """The loss at the current parameters (compiled Gram, LAPACK's Cholesky);
        NaN where ``K`` is not positive definite."""
        K = self.gram(Xs).astype(np.float64)
        y = np.asarray(y, dtype=np.float64)
        if self.moves:
            y = y + self._shift(Xs).numpy().astype(np.float64)
        order = self._condition_order(Xs)
        if order is not None:
            nll = self._np_conditional(K, y, order)[0]
            nll = math.nan if nll is None else nll
        else:
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
            step = self.program(
                "step", lambda: tf.function(self.tf_loss_and_gradient, autograph=False)
            )
            return step(Xs, y, self.unconstrained)
        raise ValueError(f"backend: expected 'tensorflow', 'lapack' or None, got {backend!r}")

    def _vjp(self, Xs, values, inverse, alpha):
        """``dloss/dvalues`` from ``K^-1`` (its upper triangle is used) and ``alpha``.

        ``dloss = tr(W dK)`` with ``W = (K^-1 - alpha alpha') / 2``, on the whole matrix
        or block by block (``pigp.kernels.covariance.whole_gradient`` decides). Block by block,
        block ``(i, j)``, ``i < j``, of the upper triangle stands for itself and its
        mirror (cotangent ``2 W_ij``), and only the diagonal blocks are symmetrised, so
        no N x N matrix is formed twice.
        """
        tape, blocks, sizes = self._taped_blocks(Xs, values)
        return tape.gradient(
            list(blocks.values()),
            values,
            output_gradients=_cotangents(blocks, sizes, inverse, alpha),
            unconnected_gradients="zero",
        )

    def _taped_blocks(self, Xs, values) -> tuple:
        """``(tape, blocks, sizes)``: ``K`` at ``values`` as one block or as the blocks of
        its upper triangle (``pigp.kernels.covariance.whole_gradient`` decides), recorded on
        ``tape``, and the sizes of the block rows."""
        sizes = [int(X.shape[0]) for X in Xs]
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(values)
            with substituted(self.parameters, values):
                if whole_gradient(self.kernel, Xs, self.dtype):
                    blocks = {(0, 0): joint(self.kernel, Xs, self.sets, self.jitter, self.dtype)}
                    sizes = [sum(sizes)]
                else:
                    blocks = joint_blocks(self.kernel, Xs, self.sets, self.jitter, self.dtype)
        return tape, blocks, sizes

    def _values_and_tape(self, unconstrained):
        """The values at ``unconstrained`` and the tape that recorded them from the
        trained variables."""
        with tf.GradientTape() as values_tape:
            values_tape.watch(self.trained_of(unconstrained))
            values = tuple(tf.cast(v, tf.float64) for v in self.values_of(unconstrained))
        return values, values_tape

    def _chain(self, values_tape, values, dvalues, unconstrained) -> list:
        """Gradients in the values taken on to the trained variables."""
        return values_tape.gradient(
            values,
            self.trained_of(unconstrained),
            output_gradients=dvalues,
            unconnected_gradients="zero",
        )

    def fuses(self, n: int) -> bool:
        """Whether a training program on ``n`` values is one XLA program, the
        Cholesky factorisation included (``tf_loss_and_gradient``'s ``fused``):
        ``n <= FUSED_UP_TO`` on a machine without a GPU."""
        return n <= FUSED_UP_TO and not has_gpu()

    def tf_loss_and_gradient(self, Xs, y, unconstrained, fused: bool = False):
        """Loss and gradient in the trained variables at ``unconstrained`` (see
        ``self.unconstrained``) with TensorFlow's Cholesky; usable inside a graph.
        ``fused``: for a caller compiled with XLA as a whole (``fuses``): ``K`` is
        computed once under the tape its VJP is taken on, and factorised by
        ``pigp.linalg.small_cholesky``, rather than the Gram matrix and its VJP
        called as programs of their own around TensorFlow's Cholesky."""
        values, values_tape = self._values_and_tape(unconstrained)
        if self.moves:
            shift, shift_tape = self._shift_and_vjp(Xs, values)
            y = y + tf.cast(shift, y.dtype)
        if fused:
            loss, dvalues, alpha = self._fused_loss_and_dvalues(Xs, y, values)
        else:
            K = self._gram(Xs, values)
            loss, inverse, alpha = self._tf_loss_inverse_alpha(K, y, Xs, tf.linalg.cholesky)
            dvalues = self._gram_vjp(Xs, values, inverse, alpha)
        if self.moves:
            moved = shift_tape.gradient(
                shift,
                values,
                output_gradients=tf.cast(alpha, shift.dtype),
                unconnected_gradients="zero",
            )
            dvalues = [d + tf.cast(e, d.dtype) for d, e in zip(dvalues, moved)]
        grads = self._chain(values_tape, values, dvalues, unconstrained)
        return self._with_penalty(
            tf.cast(loss, tf.float64), [tf.cast(g, tf.float64) for g in grads], unconstrained
        )

    def _tf_loss_inverse_alpha(self, K, y, Xs, cholesky) -> tuple:
        """``(loss, inverse, alpha)`` with the loss's cotangent ``0.5 (inverse -
        alpha alpha')`` in ``K``."""
        order = self._condition_order(Xs)
        if order is not None:
            return self._tf_conditional(K, y, order, True, cholesky)
        chol, alpha, loss = self._tf_gaussian(K, y, cholesky)
        inverse = tf.linalg.cholesky_solve(chol, tf.eye(tf.shape(K)[0], dtype=self.dtype))
        return loss, inverse, alpha

    def _fused_loss_and_dvalues(self, Xs, y, values) -> tuple:
        """``(loss, dloss/dvalues, dloss/dy)`` with ``K``'s blocks (as ``_vjp`` takes them)
        computed once, under the tape of the VJP."""
        tape, blocks, sizes = self._taped_blocks(Xs, values)
        K = from_blocks(blocks)
        loss, inverse, alpha = self._tf_loss_inverse_alpha(K, y, Xs, small_cholesky)
        dvalues = tape.gradient(
            list(blocks.values()),
            values,
            output_gradients=_cotangents(blocks, sizes, inverse, alpha),
            unconnected_gradients="zero",
        )
        return loss, dvalues, alpha

    def _values_and_chain(self):
        """Two compiled programs of this key for the LAPACK path: ``unconstrained ->
        values`` and ``(unconstrained, dvalues) -> gradients in the trained
        variables`` (eagerly, the tape through the parameters' transforms costs
        more per call than the factorisation of a few hundred values)."""

        def values(unconstrained):
            return tuple(tf.cast(v, tf.float64) for v in self.values_of(unconstrained))

        def chain(unconstrained, dvalues):
            values, values_tape = self._values_and_tape(unconstrained)
            return self._chain(values_tape, values, dvalues, unconstrained)

        return (
            self.program("values", lambda: tf.function(values, autograph=False)),
            self.program("chain", lambda: tf.function(chain, autograph=False)),
        )

    def _not_positive_definite(self) -> tuple:
        """The LAPACK path's answer where ``K`` is not positive definite: NaN loss and
        gradients."""
        nan = tf.constant(np.nan, tf.float64)
        return nan, [tf.fill(tf.shape(v), nan) for v in self.variables]

    def _lapack_loss_and_gradient(self, Xs, y: np.ndarray):
        values_program, chain_program = self._values_and_chain()
        values = values_program(self.unconstrained)
        if self.moves:
            shift = self.program(
                "shift",
                lambda: tf.function(lambda Xs, values: self._shift_and_vjp(Xs, values)[0]),
            )
            y = y + shift(Xs, values).numpy().astype(np.float64)
        K = self._gram(Xs, values).numpy()
        order = self._condition_order(Xs)
        if order is not None:
            loss, inverse, alpha = self._np_conditional(K, y, order, gradient=True)
            if loss is None:
                return self._not_positive_definite()
        else:
            # K is symmetric, so its C-ordered memory is also K in Fortran order.
            potrf, potrs, potri = scipy.linalg.lapack.get_lapack_funcs(
                ("potrf", "potrs", "potri"), (K,)
            )
            chol, info = potrf(K.T, lower=1, overwrite_a=1, clean=0)
            if info != 0:
                return self._not_positive_definite()
            alpha, _ = potrs(chol, y, lower=1)
            loss = gaussian_nll(float(y @ alpha), float(np.sum(np.log(np.diag(chol)))), len(y))
            inverse, _ = potri(chol, lower=1, overwrite_c=1)
            # Fortran lower triangle = upper triangle of the C-ordered transpose.
            inverse = inverse.T
        dvalues = self._gram_vjp(Xs, values, inverse, alpha)
        if self.moves:
            moved = self.program(
                "shift vjp", lambda: tf.function(self._shift_and_vjp, autograph=False)
            )(Xs, values, tf.constant(alpha))
            dvalues = [d + tf.cast(e, d.dtype) for d, e in zip(dvalues, moved)]
        grads = chain_program(self.unconstrained, tuple(dvalues))
        return self._with_penalty(
            tf.constant(loss, tf.float64),
            [tf.cast(g, tf.float64) for g in grads],
            self.unconstrained,
        )
