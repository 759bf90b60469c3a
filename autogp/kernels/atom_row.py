"""What a row of the atom table says: the schema of ``autogp.kernels.atom_table``.

An atom is described once, by an :class:`AtomRow`: its opcode and names, its parameters
(:class:`Param`: transform, default prior, units), its covariance formula and the analytic
vector-Jacobian product the evaluator's custom VJP needs, whether it is stationary, its role in a
plain-English reading and its default production weight. Everything else (``spec``'s arrays, the
kernel classes, the evaluator, the text form, ``explain``, the grammar's and the config's
defaults) is derived from the rows.

Also here: the small matrix helpers the formulas share.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Literal, Protocol

import jax
import jax.numpy as jnp

#: Most parameters any node has; the width of every packed parameter array.
MAX_PARAMS = 3

Transform = Literal["log", "gamma", "identity"]

#: How an atom reads in a plain-English description of an expression (``autogp.forecast.explain``)
#: and which component of a decomposition its terms belong to:
#:
#: * ``"polynomial"``: a trend factor; each one in a product raises the polynomial degree (LIN);
#: * ``"constant"``: a constant offset; in a product only a scale, not read (CONST);
#: * ``"level"``: a trend of its own that multiplies as a separate factor (BM);
#: * ``"seasonal"``: a periodic pattern, with a ``period`` parameter (PER);
#: * ``"smooth"``: smooth or rough variation, with a length scale ``l`` (SE, GE, Matern, RQ);
#: * ``"noise"``: white noise (WN);
#: * ``"covariate"``: an effect of a covariate (an input other than time: ``LIN[temp]``).
Role = Literal["polynomial", "constant", "level", "seasonal", "smooth", "noise", "covariate"]
ROLES: tuple[str, ...] = ("polynomial", "constant", "level", "seasonal", "smooth", "noise",
                          "covariate")


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter of a node.

    Attributes:
      name: its name in the text form, the kernel classes and the config's ``[priors.<name>]``.
      transform: how the unconstrained packed value u maps to the natural value theta:
        ``"log"`` theta = exp(u) (positive values), ``"gamma"`` theta = 2 sigmoid(u) (in (0, 2)),
        ``"identity"`` theta = u (points on the time axis).
      prior: default ``(mean, std)`` of the normal prior on u, in normalised units (time in
        [0, 1], values standardised). One config key per name: every node that has a parameter
        of this name must give it the same transform, prior and doc.
      units: ``(a, b)``: in data units theta becomes theta * time_scale**a * value_scale**b.
      time_location: a point on the time axis, which in data units also shifts by the offset.
      doc: what the config's ``[priors.<name>]`` says about it.
    """

    name: str
    transform: Transform
    prior: tuple[float, float]
    units: tuple[int, int]
    time_location: bool = False
    doc: str = ""

    def with_units(self, time_power: int, value_power: int) -> Param:
        """The same parameter where one node scales it differently (LIN's amp: time^-2)."""
        return dataclasses.replace(self, units=(time_power, value_power))


class Words(Protocol):
    """What an atom's reading may use to put numbers into words (in data units)."""

    def length(self, duration: float) -> str:
        """A span of time on the series' axis, e.g. ``"3.2 months"``."""
        ...

    def period(self, period: float) -> str:
        """A periodic pattern of that period, e.g. ``"yearly seasonality (period 12 months)"``."""
        ...


Value = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
Vjp = Callable[[jax.Array, jax.Array, jax.Array, jax.Array], jax.Array]
Reading = Callable[[Mapping[str, float], Words], str]


@dataclasses.dataclass(frozen=True)
class AtomRow:
    """Everything about one atom (a base kernel, a leaf of every expression).

    Attributes:
      opcode: its number in packed arrays. Opcodes are append-only: saved fits store them and
        seeded draws index by them, so a new atom takes the next free number.
      name: its name in the text form and in the config's ``[grammar.weights]``, e.g. ``"SE"``.
      class_name: the name of its ``Kernel`` class, e.g. ``"Matern52"``.
      title: a few words for docs and config comments, e.g. ``"Matern 5/2"``.
      formula: its covariance in words; the kernel class's docstring.
      params: its parameters, in storage order.
      split: how many of them the text form writes before the ';': ``PER(l=.., period=..; amp=..)``.
      value: ``value(theta, t1, t2) -> K [N1, N2]`` with ``theta`` the natural parameters, a
        length-``MAX_PARAMS`` vector (entries past ``len(params)`` are ignored).
      vjp: ``vjp(theta, t1, t2, cot) -> [MAX_PARAMS]``: sum(cot * dK/dtheta_k) per natural
        parameter, written by hand so that the backward pass stores nothing per matrix entry.
      stationary: k depends on t - t' only, so on a regular grid the evaluator computes it from
        the N lags (a Toeplitz matrix).
      role: its part in a plain-English reading and a decomposition (see :data:`Role`).
      reading: ``reading(params, words)``: the atom on its own in plain English, from its
        natural parameters in data units.
      weight: its default production weight in the structure prior (0: off unless configured).
      input: the input column it reads: 0 for time, k >= 1 for the k-th covariate (whose
        formulas then take r = |z - z'| on that covariate, see ``autogp.kernels.covariates``).
    """

    opcode: int
    name: str
    class_name: str
    title: str
    formula: str
    params: tuple[Param, ...]
    split: int
    value: Value
    vjp: Vjp
    stationary: bool
    role: Role
    reading: Reading
    weight: float = 0.0
    input: int = 0

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


# --- helpers shared by the formulas ---------------------------------------------------------
def distance(t1: jax.Array, t2: jax.Array) -> jax.Array:
    """``|t1[i] - t2[j]|`` ``[N1, N2]``."""
    return jnp.abs(t1[:, None] - t2[None, :])


def sums(*terms: jax.Array) -> jax.Array:
    """``[sum(term) for term in terms]`` as matrix-vector products.

    XLA's CPU reductions run an unvectorised scalar loop and re-evaluate their fused producers
    once per reduction; row sums through ``dot`` (BLAS) share one evaluation and run ~2x faster.
    """
    ones_cols = jnp.ones((terms[0].shape[1],), terms[0].dtype)
    ones_rows = jnp.ones((terms[0].shape[0],), terms[0].dtype)
    return jnp.stack([term @ ones_cols for term in terms]) @ ones_rows


def gradient(*values: jax.Array) -> jax.Array:
    """Gradient vector of length ``MAX_PARAMS`` from the given leading entries."""
    out = list(values) + [jnp.zeros((), values[0].dtype)] * (MAX_PARAMS - len(values))
    return jnp.stack(out)
