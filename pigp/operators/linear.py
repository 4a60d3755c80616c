"""Linear differential operators.

An operator is a sum of terms ``coefficient * d^|a| / dx^a``, with ``a`` a
multi-index over the input columns. Columns are named (``"x"``, ``"t"``) or
indexed (``0``, ``1``); names are matched to columns through ``dims``, declared
once on the operator or on the model. Coefficients are numbers, learnable
``pigp.Parameter`` objects, known functions of the inputs (a coefficient that
varies from point to point), and products of them. In a model of several latent
fields each term names the field it acts on: ``field("psi")`` is the identity on
the field ``psi``, ``D("y") @ field("psi")`` its derivative, and a sum may mix
fields (``D("x") @ u + D("y") @ v``).

    from pigp.operators import D
    L = (D("t") - 0.5 * D("x", 2)).with_dims("x", "t")   # heat, alpha = 0.5
    a = lambda X: 1.0 + tf.square(X[:, 0])                # a(x) = 1 + x^2
    darcy = -(a * D(0, 2)) - (lambda X: 2.0 * X[:, 0]) * D(0)   # -(a u')'
    psi = field("psi")
    u, v = D("y") @ psi, -(D("x") @ psi)                  # divergence-free velocity
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .._tensorflow import tf
from ..parameters import Coefficient, CoefficientSum, Parameter

# The public names are listed in the package's ``__init__``.


class Operator:
    """A linear differential operator ``sum_i c_i d^{a_i}``.

    Build operators with ``D``, ``Identity`` and arithmetic: ``+``, ``-``,
    ``*`` by a coefficient (a number, a Parameter, or a function of the inputs
    mapping points of shape (n, d) to values (n,), written with TensorFlow ops),
    and composition ``L1 @ L2`` (or ``L1 * L2``).

    Args:
        terms: ``(coefficient, orders)`` or ``(coefficient, orders, field)``,
            ``orders`` a dict from a column name or index to a derivative order,
            ``field`` the name of the latent field the term acts on (None: the
            model's one field).
        dims: names of the input columns in order, e.g. ``("x", "t")``, or None.

    Attributes:
        terms: ``((Coefficient, orders, field), ...)``, ``orders`` a sorted tuple of
            ``(column, order)`` pairs.
    """

    def __init__(self, terms=(), dims=None):
        self.terms = tuple(_term(*term) for term in terms)
        self.dims = None if dims is None else _check_dims(dims)

    # ----- construction ---------------------------------------------------------------
    def with_dims(self, *dims) -> Operator:
        """This operator with its column names declared, e.g. ``.with_dims("x", "t")``."""
        if len(dims) == 1 and not isinstance(dims[0], str):
            dims = tuple(dims[0])
        return Operator(self.terms, dims)

    def _merged_dims(self, other: Operator):
        if self.dims is not None and other.dims is not None and self.dims != other.dims:
            raise ValueError(
                f"operator dims: cannot combine operators on {self.dims} and {other.dims}"
            )
        return self.dims if self.dims is not None else other.dims

    def __add__(self, other):
        other = _as_operator(other)
        if other is NotImplemented:
            return NotImplemented
        return Operator(self.terms + other.terms, self._merged_dims(other))

    __radd__ = __add__

    def __neg__(self):
        return Operator(((-c, dict(o), f) for c, o, f in self.terms), self.dims)

    def __sub__(self, other):
        other = _as_operator(other)
        if other is NotImplemented:
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, Operator):
            return self @ other
        try:
            sum_ = CoefficientSum.of(other)
        except ValueError:
            return NotImplemented
        terms = ((scale * c, dict(o), f) for scale in sum_.terms for c, o, f in self.terms)
        return Operator(terms, self.dims)

    __rmul__ = __mul__

    def __matmul__(self, other: Operator) -> Operator:
        """Composition ``(L1 @ L2) u = L1 (L2 u)``; exact where ``L2``'s coefficients are
        constant (a coefficient that varies would be differentiated too: refused).
        At most one side names fields: ``D("x") @ field("u")`` is ``u_x``."""
        if not isinstance(other, Operator):
            return NotImplemented
        if self.fields and other.fields:
            raise ValueError(
                f"operator @ operator: both sides act on fields ({self.fields} and "
                f"{other.fields}); a field's operator is applied to a field, e.g. "
                "D('x') @ field('u')"
            )
        if self.order > 0 and any(c.varies for c, *_ in other.terms):
            raise ValueError(
                "operator @ operator: the right operator has a coefficient that varies "
                "with the inputs, which the left one's derivatives would differentiate; "
                "write the product rule out, e.g. a * D('x', 2) + a_x * D('x') for "
                "D('x') @ (a * D('x'))"
            )
        terms = []
        for c1, o1, f1 in self.terms:
            for c2, o2, f2 in other.terms:
                orders = Counter(dict(o1))
                orders.update(dict(o2))
                terms.append((c1 * c2, dict(orders), f1 if f1 is not None else f2))
        return Operator(terms, self._merged_dims(other))

    # ----- inspection -----------------------------------------------------------------
    @property
    def order(self) -> int:
        """The highest total derivative order of any term (0 for the identity)."""
        return max((sum(n for _, n in o) for _, o, _ in self.terms), default=0)

    @property
    def fields(self) -> tuple:
        """The distinct fields the terms name, in order of appearance (empty for an
        operator of the one field)."""
        return tuple(dict.fromkeys(f for *_, f in self.terms if f is not None))

    @property
    def parameters(self) -> list:
        """The distinct ``Parameter`` objects among the coefficients."""
        seen = []
        for c, *_ in self.terms:
            for p in c.parameters:
                if not any(p is q for q in seen):
                    seen.append(p)
        return seen

    def get_config(self) -> dict:
        """``{"terms": [[Coefficient, [[column, order], ...]] (and the field, where a
        term names one), ...], "dims": ...}``."""
        return {
            "terms": [
                [c, [list(pair) for pair in orders]] + ([] if f is None else [f])
                for c, orders, f in self.terms
            ],
            "dims": None if self.dims is None else list(self.dims),
        }

    @classmethod
    def from_config(cls, config: dict) -> Operator:
        return cls(
            [(c, {key: n for key, n in orders}, *f) for c, orders, *f in config["terms"]],
            config["dims"],
        )

    def resolve(self, input_dim: int, dims=None, fields=None) -> list:
        """Terms as ``[(Coefficient, multi_index)]`` with one order per input column, or
        ``[(Coefficient, multi_index, field)]`` in a model of several fields.

        Args:
            input_dim: the number of columns of X.
            dims: column names to use when the operator has none of its own.
            fields: the model's field names (``pigp.kernels.Fields.names``), or None
                for a model of one field.

        Raises:
            ValueError: a named column is not among ``dims``, an index is out of
                range, or ``dims`` has the wrong length; a term names a field the
                model does not have, or none where the model has several.
        """
        dims = self.dims if self.dims is not None else (None if dims is None else _check_dims(dims))
        if dims is not None and len(dims) != input_dim:
            raise ValueError(
                f"X: the operator's dims {dims} name {len(dims)} columns, but X has {input_dim}"
            )
        resolved = []
        for coefficient, orders, f in self.terms:
            index = [0] * input_dim
            for key, n in orders:
                index[_column(key, dims, input_dim)] += n
            if fields is None:
                if f is not None:
                    raise ValueError(
                        f"operator: a term acts on the field {f!r}, but the model has one "
                        "field; give it a kernel per field, e.g. PIGP({'u': kernel_u, "
                        "'v': kernel_v}, ...)"
                    )
                resolved.append((coefficient, tuple(index)))
                continue
            if f is None and len(fields) == 1:
                f = fields[0]
            if f not in fields:
                raise ValueError(
                    f"operator: the model's fields are {tuple(fields)}, but "
                    + (
                        f"a term acts on {f!r}"
                        if f is not None
                        else f"the term {coefficient!r}*{_derivative(orders)} names no "
                        "field; apply it to one, e.g. D('x') @ field('u')"
                    )
                )
            resolved.append((coefficient, tuple(index), f))
        return resolved

    def __repr__(self) -> str:
        if not self.terms:
            return "Operator(0)"
        parts = []
        for c, orders, f in self.terms:
            d = _derivative(orders) + ("" if f is None else f"[{f}]")
            parts.append(f"{c!r}*{d}")
        dims = f", dims={self.dims}" if self.dims else ""
        return f"Operator({' + '.join(parts)}{dims})"


def D(dim, order: int = 1) -> Operator:
    """The partial derivative ``d^order / d dim^order``, or a mixed one from a dict.

    Args:
        dim: a column name (``"x"``) or index (``0``), or a dict of them to orders,
            e.g. ``{"x": 1, "t": 1}`` for ``d^2 / dx dt``.
        order: the derivative order when ``dim`` is a single column.
    """
    orders = dict(dim) if isinstance(dim, dict) else {dim: order}
    for key, n in orders.items():
        if not isinstance(key, (str, int, np.integer)) or isinstance(key, bool):
            raise ValueError(f"dim: expected a column name or index, got {key!r}")
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"order: expected a non-negative integer, got {n!r} for {key!r}")
    return Operator([(1.0, orders)])


def heat(diffusivity=1.0, dims=("x", "t")) -> Operator:
    """The heat operator ``L u = u_t - diffusivity * u_xx`` on columns ``(x, t)``.

    Args:
        diffusivity: a positive number (fixed), a ``Parameter`` (learned), or a
            function of the points (shape (n, 2) to (n,)) for a diffusivity that
            varies with x and t (the operator is then ``u_t - a(x, t) u_xx``, not
            ``u_t - (a u_x)_x``).
        dims: the column names; the defaults mean ``X[:, 0] = x``, ``X[:, 1] = t``.
    """
    if isinstance(diffusivity, Parameter) and diffusivity.label is None:
        diffusivity.label = "diffusivity"
    elif not isinstance(diffusivity, (Parameter, Coefficient, CoefficientSum)) and not callable(
        diffusivity
    ):
        diffusivity = float(diffusivity)
    return (D("t") - CoefficientSum.of(diffusivity) * D("x", 2)).with_dims(*dims)


def laplacian(*dims) -> Operator:
    """``sum_c d^2/dc^2`` over the named columns, e.g. ``laplacian("x", "y")``."""
    if not dims:
        raise ValueError("dims: expected at least one column name")
    return sum((D(c, 2) for c in dims[1:]), D(dims[0], 2))


def field(name: str) -> Operator:
    """The identity on the latent field ``name`` of a model of several fields:
    ``field("p")`` observes the pressure, ``D("y") @ field("psi")`` a derivative of
    the stream function. The model's kernel is then a dict ``{name: kernel}``
    (``pigp.kernels.Fields``)."""
    if not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"name: expected a field name that is an identifier, got {name!r}")
    return Operator([(1.0, {}, name)])


def _term(coefficient, orders, field=None) -> tuple:
    if field is not None and not (isinstance(field, str) and field.isidentifier()):
        raise ValueError(f"field: expected a field name that is an identifier, got {field!r}")
    return (Coefficient.of(coefficient), _freeze(orders), field)


def _derivative(orders) -> str:
    return "".join(f"d{k}" + (f"^{n}" if n > 1 else "") for k, n in orders) or "I"


def _freeze(orders) -> tuple:
    orders = dict(orders)
    items = [(k, int(n)) for k, n in orders.items() if n]
    return tuple(sorted(items, key=lambda kv: (isinstance(kv[0], str), str(kv[0]))))


def _check_dims(dims) -> tuple:
    dims = tuple(dims)
    if not all(isinstance(d, str) for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"dims: expected distinct column names, got {dims!r}")
    return dims


def _column(key, dims, input_dim: int) -> int:
    if isinstance(key, str):
        if dims is None:
            raise ValueError(
                f"dims: the operator uses the column name {key!r}; declare the "
                "column names with operator.with_dims(...) or PIGP(..., dims=...)"
            )
        if key not in dims:
            raise ValueError(f"dims: the operator uses column {key!r}, not among {dims}")
        return dims.index(key)
    if not 0 <= key < input_dim:
        raise ValueError(
            f"X: the operator differentiates column {key}, but X has {input_dim} columns"
        )
    return int(key)


def _as_operator(value):
    if isinstance(value, Operator):
        return value
    try:
        return Operator([(Coefficient.of(value), {})])
    except ValueError:
        return NotImplemented


#: The identity operator: ``Identity u = u`` (observations of u itself).
Identity = Operator([(1.0, {})])


def _is_identity(operator: Operator) -> bool:
    """Whether ``operator`` is ``Identity`` (one term: coefficient 1, no derivative)."""
    if len(operator.terms) != 1:
        return False
    coefficient, orders, _ = operator.terms[0]
    plain = not (coefficient.varies or coefficient.parameters)
    return plain and not orders and coefficient.constant == 1.0


def apply(operator: Operator, function, X, dims=None, dtype=tf.float64) -> np.ndarray:
    """``(L u)(X)`` for a TensorFlow function ``u`` of X's rows, by nested tapes.

    Args:
        operator: the operator L.
        function: maps a tensor of shape (n, d) to shape (n,), written with
            TensorFlow ops (e.g. ``lambda X: tf.exp(-X[:, 1]) * tf.sin(np.pi * X[:, 0])``).
        X: array of shape (n, d).
    """
    from ..kernels.derivatives import partials

    X = tf.convert_to_tensor(X, dtype)
    fields = operator.fields or None
    if fields is not None and not isinstance(function, dict):
        raise ValueError(
            f"function: the operator acts on the fields {fields}; expected a dict from "
            "each field name to its function"
        )
    functions = function if fields is not None else {None: function}
    terms = operator.resolve(X.shape[1], dims, fields)
    columns = tf.unstack(X, axis=1)
    total = tf.zeros(tf.shape(X)[:1], dtype)
    for coefficient, index, *f in terms:
        u = functions[f[0] if f else None]
        values = partials(lambda cols, u=u: u(tf.stack(cols, axis=1)), columns, [index])
        total += coefficient.value(dtype, X) * values[index]
    return total.numpy()


class UndeclaredName(ValueError, KeyError):
    """A residual read a feature or a parameter its equation does not declare."""

    def __str__(self) -> str:
        return str(self.args[0])


class Declared(dict):
    """The dict a residual reads (``v`` or ``p``): a missing name raises
    ``UndeclaredName`` saying what is declared and where to declare it."""

    def __init__(self, values, what: str):
        super().__init__(values)
        self.what = what

    def __missing__(self, key):
        raise UndeclaredName(
            f"residual: it reads {'v' if self.what == 'feature' else 'p'}[{key!r}], but "
            f"{key!r} is not a declared {self.what} (declared: {sorted(self)}); add it to "
            f"nonlinear(..., {self.what}s={{{key!r}: ...}})"
        )


class Nonlinear:
    """A nonlinear equation ``N[u] = F(L_1 u, ..., L_m u) = f``, pointwise in the values of
    linear features ``L_a u`` (``u``, ``u_x``, ``u_xx``, ``laplacian``...); or a system
    of k such equations (the residual returns k tensors), and features of several
    fields (``D("x") @ field("p")``) in a model with a kernel per field.

    Build it with ``nonlinear``. ``PIGP.fit`` solves and learns with it by Gauss-Newton
    (``pigp.operators.linearisation``): each iteration conditions the GP on the equation
    linearised at the current solution, ``sum_a dF/dv_a(v_k(x)) L_a u(x) = f(x) - F(v_k(x)) + sum_a
    dF/dv_a(v_k(x)) v_a,k(x)``, a linear operator whose coefficients vary from point to
    point. The partial derivatives ``dF/dv_a`` are taken by a tape, never written.

    Attributes:
        residual: ``F``: ``residual(v, p)`` maps ``v``, a dict from feature name to a
            tensor of values at n points (shape (n,)), and ``p``, a dict from
            parameter name to its value (a tensor), to the values of ``F`` at the
            n points, shape (n,), written with TensorFlow ops.
        features: ``{name: Operator}``.
        parameters_by_name: ``{name: Parameter}`` (learned where trainable).
        dims: the column names, or None.
    """

    def __init__(self, residual, features: dict, parameters: dict | None = None, dims=None):
        if not callable(residual):
            raise ValueError(f"residual: expected a function of (v, p), got {residual!r}")
        if not isinstance(features, dict) or not features:
            raise ValueError(
                f"features: expected a dict from names to operators, e.g. "
                f"{{'u': Identity, 'x': D('x')}}, got {features!r}"
            )
        for name, operator in features.items():
            if not isinstance(name, str) or not isinstance(operator, Operator):
                raise ValueError(
                    f"features: expected names (str) mapped to pigp Operators, got "
                    f"{name!r}: {operator!r}"
                )
            if any(c.varies or c.parameters for c, *_ in operator.terms):
                raise ValueError(
                    f"features[{name!r}]: expected an operator with constant coefficients "
                    "(put coefficients that vary or are learned into the residual)"
                )
            if name == "u" and not operator.fields and not _is_identity(operator):
                raise ValueError(
                    f"features['u']: 'u' names the field itself (predict(X, output='u') "
                    f"gives u), but this feature is {operator!r}; give it another name"
                )
        parameters = dict(parameters or {})
        for name, p in list(parameters.items()):
            if (
                isinstance(name, str)
                and isinstance(p, (int, float, np.integer, np.floating))
                and not isinstance(p, bool)
                and np.isfinite(p)
            ):  # a known number: a constant
                p = parameters[name] = Parameter(
                    float(p), positive=False, trainable=False, name=name
                )
            if not isinstance(name, str) or not isinstance(p, Parameter):
                raise ValueError(
                    f"parameters: expected names (str) mapped to pigp.Parameter objects or "
                    f"finite numbers, got {name!r}: {p!r}"
                )
            if p.shape != ():
                raise ValueError(f"parameters[{name!r}]: expected a scalar Parameter")
            if p.label is None:
                p.label = name
        self.residual = residual
        self.features = dict(features)
        self.parameters_by_name = parameters
        dims_found = [op.dims for op in self.features.values() if op.dims is not None]
        if dims is None and dims_found:
            dims = dims_found[0]
        if any(d != tuple(dims) for d in dims_found):
            raise ValueError(f"features: the operators declare different dims {dims_found}")
        self.dims = None if dims is None else _check_dims(dims)
        named = [bool(op.fields) for op in self.features.values()]
        if any(named) and not all(named):
            plain = [k for k, op in self.features.items() if not op.fields]
            raise ValueError(
                f"features: {plain} act on no named field while the others do; in an "
                "equation over several fields each feature names its field, e.g. "
                "D('x') @ field('p')"
            )
        self._size = None

    @property
    def fields(self) -> tuple:
        """The fields the features act on, in order of appearance (empty for an equation
        in the model's one field)."""
        found = [f for op in self.features.values() for f in op.fields]
        return tuple(dict.fromkeys(found))

    @property
    def size(self) -> int:
        """How many equations the residual poses: 1 where it returns one tensor, k
        where it returns k (a system, each equation at every collocation point)."""
        if self._size is None:
            v = {k: tf.ones((1,), tf.float64) for k in self.features}
            try:
                self._size = len(self.outputs(v))
            except UndeclaredName as error:
                raise ValueError(str(error)) from None
            except Exception as error:  # the user's function: say which call failed
                raise ValueError(
                    f"residual: calling it on features of shape (1,) failed: {error}"
                ) from error
        return self._size

    def with_dims(self, *dims) -> Nonlinear:
        """This equation with its column names declared, e.g. ``.with_dims("x", "t")``."""
        if len(dims) == 1 and not isinstance(dims[0], str):
            dims = tuple(dims[0])
        features = {k: Operator(op.terms, None) for k, op in self.features.items()}
        return Nonlinear(self.residual, features, self.parameters_by_name, dims)

    @property
    def parameters(self) -> list:
        """The equation's ``Parameter`` objects."""
        return list(self.parameters_by_name.values())

    @property
    def order(self) -> int:
        """The highest derivative order of any feature."""
        return max(op.order for op in self.features.values())

    def feature(self, name: str) -> Operator:
        """The operator of a feature, with the equation's dims."""
        return Operator(self.features[name].terms, self.dims)

    def evaluate(self, values: dict, dtype=tf.float64) -> tf.Tensor:
        """``F`` at feature values ``{name: array (n,)}`` with the parameters' current
        values."""
        v = {k: tf.convert_to_tensor(values[k], dtype) for k in self.features}
        return self.call(v, dtype)

    def call(self, v: dict, dtype=tf.float64) -> tf.Tensor:
        """``residual(v, p)`` with ``v`` the features' tensors and ``p`` the parameters'
        current (or substituted) values: shape (k n,) for a system of k equations at n
        points, equation after equation."""
        outputs = self.outputs(v, dtype)
        return outputs[0] if len(outputs) == 1 else tf.concat(outputs, axis=0)

    def outputs(self, v: dict, dtype=tf.float64) -> list:
        """The residual's equations, ``[(n,)]`` (one entry for a single equation), with
        ``v`` and the parameters' values passed as ``Declared`` dicts."""
        p = {k: q.value(dtype) for k, q in self.parameters_by_name.items()}
        v, p = Declared(v, "feature"), Declared(p, "parameter")
        out = self.residual(v, p)
        if isinstance(out, (list, tuple)):
            if not out:
                raise ValueError("residual: returned an empty sequence of equations")
            return [tf.convert_to_tensor(o, dtype) for o in out]
        return [tf.convert_to_tensor(out, dtype)]

    def get_config(self) -> dict:
        """``{"residual": function, "features": {...}, "parameters": {...}, "dims": ...}``;
        the residual is saved by its import path (pass it to ``pigp.load`` through
        ``custom_objects`` where it cannot be imported)."""
        return {
            "residual": self.residual,
            "features": dict(self.features),
            "parameters": dict(self.parameters_by_name),
            "dims": None if self.dims is None else list(self.dims),
        }

    @classmethod
    def from_config(cls, config: dict) -> Nonlinear:
        return cls(config["residual"], config["features"], config["parameters"], config["dims"])

    def __repr__(self) -> str:
        name = getattr(self.residual, "__name__", "residual")
        dims = f", dims={self.dims}" if self.dims else ""
        return f"Nonlinear({name}, features={list(self.features)}{dims})"


def nonlinear(residual, features: dict, parameters: dict | None = None) -> Nonlinear:
    """A nonlinear equation ``F(L_1 u, ..., L_m u) = f``, pointwise in linear features of u.

    Args:
        residual: ``F(v, p)``: ``v`` maps each feature name to the tensor of its
            values at n points (shape (n,)), ``p`` each parameter name to its value;
            returns shape (n,), or a tuple of k such tensors for a system of k
            equations (``fit`` then takes ``y_f`` of shape (n, k), and
            ``predict(X, output="f")`` gives (n, k)). TensorFlow ops, pointwise (point
            i's value depends on point i's features only).
        features: ``{name: Operator}``, e.g. ``{"u": Identity, "t": D("t"), "x":
            D("x"), "xx": D("x", 2)}``; operators with constant coefficients. In a model
            of several fields each names its field (``D("x") @ field("p")``); a
            feature named like a field must be that field.
        parameters: ``{name: pigp.Parameter or number}`` read by the residual as
            ``p[name]``; a number is a known constant (a ``Parameter`` not trained);
            they appear as ``"operator.NAME"`` in ``parameter_values()``.

    Example (Burgers, viscosity learned)::

        nu = pigp.Parameter(0.1, positive=True)
        burgers = nonlinear(
            lambda v, p: v["t"] + v["u"] * v["x"] - p["nu"] * v["xx"],
            features={"u": Identity, "t": D("t"), "x": D("x"), "xx": D("x", 2)},
            parameters={"nu": nu},
        ).with_dims("x", "t")

    Several fields and equations (steady Navier-Stokes, ``pigp.experiments.navier_stokes``
    has all of it)::

        u, v, p = field("u"), field("v"), field("p")
        equations = nonlinear(
            lambda f, q: (
                f["u"] * f["u_x"] + f["v"] * f["u_y"] + f["p_x"] - q["nu"] * f["lap_u"],
                ...,  # the y momentum equation
                f["u_x"] + f["v_y"],  # continuity
            ),
            features={"u": u, "u_x": D("x") @ u, ..., "p_x": D("x") @ p},
            parameters={"nu": 0.05},
        )
        model = pigp.PIGP({"u": kernel, "v": kernel, "p": kernel}, equations)
        model.fit(X_f=X, y_f=np.zeros((len(X), 3)), observations=[...])
    """
    return Nonlinear(residual, features, parameters)
