"""Text form of kernel expressions: printing with minimal parentheses, and its parser.

Grammar (``+`` binds looser than ``*``, both left-associative; names are ``spec.NAMES``)::

    expr   := term ('+' term)*
    term   := factor ('*' factor)*
    factor := '(' expr ')' | 'CP' '(' expr ',' expr [';' params] ')' | ATOM ['(' params ')']
    params := NAME '=' NUMBER, separated by ',' except for one ';' after the first
              ``spec.SPLIT[op]`` names (atoms); CP's params follow the ';' after its children

Structure only: ``LIN + PER * SE``, ``(LIN + PER) * SE``, ``CP(LIN, GE)``. With parameters:
``PER(l=0.31, period=0.083; amp=1.2)``, ``CP(LIN(intercept=0.5; bias=0.2, amp=1.1), GE(...);
location=0.5, scale=0.01)``. A right operand of the same operator is parenthesised,
``LIN + (PER + SE)``, so that ``parse(to_text(e))`` rebuilds exactly the same tree; printed with
``precision=None`` the numbers are ``repr(float)`` and the parameters come back bit for bit.
Atoms written without parameters get the default prior's mean (``SE`` == ``SE()``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from autogp.kernels import spec
from autogp.kernels.base import Kernel, kernel_class
from autogp.kernels.printing import structure, to_text

# --- parsing ---------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]\s()+*,;=]+\])?)"
    r"|(?P<punct>[()+*,;=]))"
)


@dataclass(frozen=True)
class _Token:
    kind: str  # "number", "name", "punct" or "end"
    text: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens, position = [], 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return [*tokens, _Token("end", "", position)]
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(
                f"cannot parse kernel text at position {position}: unexpected character "
                f"{text[position]!r}\n  {text}\n  {' ' * position}^"
            )
        kind = match.lastgroup
        assert kind is not None
        tokens.append(_Token(kind, match.group(kind), match.start(kind)))
        position = match.end()


class _Parser:
    """Recursive descent over the grammar in the module docstring."""

    def __init__(self, text: str, covariates: tuple[str, ...] = ()) -> None:
        self.text = text
        self.covariates = covariates
        self.tokens = _tokenize(text)
        self.index = 0

    # -- token plumbing ---------------------------------------------------------------------
    @property
    def current(self) -> _Token:
        return self.tokens[self.index]

    def error(self, expected: str, token: _Token | None = None) -> ValueError:
        token = token or self.current
        found = "end of text" if token.kind == "end" else repr(token.text)
        return ValueError(
            f"cannot parse kernel text at position {token.position}: expected {expected}, "
            f"found {found}\n  {self.text}\n  {' ' * token.position}^"
        )

    def accept(self, punct: str) -> bool:
        if self.current.kind == "punct" and self.current.text == punct:
            self.index += 1
            return True
        return False

    def expect(self, punct: str) -> None:
        if not self.accept(punct):
            raise self.error(repr(punct))

    # -- grammar ----------------------------------------------------------------------------
    def parse(self) -> Kernel:
        expr = self.expr()
        if self.current.kind != "end":
            raise self.error("'+', '*' or end of text")
        return expr

    def expr(self) -> Kernel:
        expr = self.term()
        while self.accept("+"):
            expr = kernel_class(spec.PLUS)(expr, self.term())
        return expr

    def term(self) -> Kernel:
        expr = self.factor()
        while self.accept("*"):
            expr = kernel_class(spec.TIMES)(expr, self.factor())
        return expr

    def factor(self) -> Kernel:
        if self.accept("("):
            expr = self.expr()
            self.expect(")")
            return expr
        token = self.current
        op = self.opcode(token.text) if token.kind == "name" else None
        if op is None or op in (spec.PLUS, spec.TIMES):
            names = ", ".join(spec.NAMES[a] for a in (*spec.ATOMS, spec.CP)
                              if a not in spec.COVARIATE_ATOMS)
            names += ", LIN[covariate], SE[covariate]"
            raise self.error(f"'(' or a kernel name ({names})")
        self.index += 1
        if op == spec.CP:
            self.expect("(")
            children = (self.expr(),)
            self.expect(",")
            children += (self.expr(),)
            params = self.params(op, 0) if self.accept(";") else None
            self.expect(")")
        else:
            children = ()
            params = None
            if self.accept("("):
                params = self.params(op, spec.SPLIT[op])
                self.expect(")")
        cls = kernel_class(op)
        try:
            return cls(*children) if params is None else cls(*children, *params)
        except ValueError as err:
            raise ValueError(
                f"invalid parameters for {token.text} at position {token.position}: {err}"
            ) from None

    def opcode(self, name: str) -> int | None:
        """The opcode of an atom name; ``LIN[temp]`` names covariate ``temp`` by its position
        in ``covariates`` (``LIN[2]`` by its number)."""
        base, bracket, label = name.partition("[")
        label = label[:-1]
        if bracket and label in self.covariates:
            name = f"{base}[{self.covariates.index(label) + 1}]"
        return spec.OPCODE_OF_NAME.get(name)

    def params(self, op: int, split: int) -> tuple[float, ...]:
        values = []
        for k, name in enumerate(spec.PARAM_NAMES[op]):
            if k > 0:
                self.expect(";" if k == split else ",")
            token = self.current
            if token.kind != "name" or token.text != name:
                raise self.error(f"parameter name {name!r} of {spec.NAMES[op]}")
            self.index += 1
            self.expect("=")
            token = self.current
            if token.kind != "number":
                raise self.error(f"a number for {name}")
            values.append(float(token.text))
            self.index += 1
        return tuple(values)


def parse(text: str, covariates: Sequence[str] = ()) -> Kernel:
    """Read a kernel expression from its text form (with or without parameters).

    ``covariates``: the covariates' names, so that ``LIN[temp]`` reads as the linear atom of
    covariate ``temp`` (``LIN[1]`` names the first covariate without them). Raises
    ``ValueError`` naming the position and the offending token on malformed text.
    """
    return _Parser(text, tuple(str(c) for c in covariates)).parse()


__all__ = ["parse", "structure", "to_text"]
