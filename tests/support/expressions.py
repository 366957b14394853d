"""GitHub Actions expressions (``if:`` conditions), evaluated as GitHub evaluates them, for
tests that check a workflow's conditions without running it.

https://docs.github.com/en/actions/reference/workflows-and-actions/expressions: literals
(``'text'`` with ``''`` for a quote, numbers, ``true``, ``false``, ``null``), property access
(``a.b``, ``a['b']``; a missing property is ``null``), ``!``, ``<``, ``<=``, ``>``, ``>=``,
``==``, ``!=`` (loose: values of different types compare as numbers, strings case-folded),
``&&`` and ``||`` (they return an operand, as in JavaScript), and the functions ``always``,
``success``, ``failure``, ``cancelled``, ``contains``, ``startsWith``, ``endsWith``,
``fromJSON``, ``toJSON``, ``format``. A condition with no status function means
``success() && (condition)``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"""\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|"""
                    r"""(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\].,*])|"""
                    r"""(?P<id>[A-Za-z_][A-Za-z0-9_-]*))""")
_STATUS = re.compile(r"\b(always|success|failure|cancelled)\s*\(")


class ExpressionError(ValueError):
    """Text that is not an expression this evaluator reads."""


@dataclass(frozen=True)
class Status:
    """What the status functions answer where the expression is evaluated."""

    success: bool = True  # every job in `needs` (or every earlier step) succeeded
    failure: bool = False
    cancelled: bool = False


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    index = 0
    text = text.strip()
    while index < len(text):
        match = _TOKEN.match(text, index)
        if not match or match.end() == index:
            raise ExpressionError(f"cannot read {text[index:index + 20]!r} in {text!r}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        index = match.end()
    return out


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip()) if value.strip() else 0.0
        except ValueError:
            return math.nan
    return math.nan


def truthy(value: Any) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def _equal(left: Any, right: Any) -> bool:
    if type(left) is type(right) or (isinstance(left, (int, float)) and
                                     isinstance(right, (int, float))
                                     and not isinstance(left, bool)
                                     and not isinstance(right, bool)):
        if isinstance(left, str):
            return bool(left.casefold() == right.casefold())
        return bool(left == right)
    if isinstance(left, (dict, list)) or isinstance(right, (dict, list)):
        return False
    return _number(left) == _number(right)


def _compare(op: str, left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        a: Any = left.casefold()
        b: Any = right.casefold()
    else:
        a, b = _number(left), _number(right)
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


class _Parser:
    def __init__(self, text: str, context: Mapping[str, Any], status: Status) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.context = context
        self.status = status
        self.text = text

    def peek(self) -> str:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else ""

    def take(self, expected: str = "") -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ExpressionError(f"unexpected end of {self.text!r}")
        token = self.tokens[self.pos]
        if expected and token[1] != expected:
            raise ExpressionError(f"expected {expected!r}, got {token[1]!r} in {self.text!r}")
        self.pos += 1
        return token

    def parse(self) -> Any:
        value = self.or_()
        if self.pos != len(self.tokens):
            raise ExpressionError(f"unexpected {self.peek()!r} in {self.text!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.equality()
        while self.peek() == "&&":
            self.take()
            right = self.equality()
            value = right if truthy(value) else value
        return value

    def equality(self) -> Any:
        value = self.comparison()
        while self.peek() in ("==", "!="):
            op = self.take()[1]
            right = self.comparison()
            value = _equal(value, right) == (op == "==")
        return value

    def comparison(self) -> Any:
        value = self.unary()
        while self.peek() in ("<", "<=", ">", ">="):
            op = self.take()[1]
            value = _compare(op, value, self.unary())
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.postfix()

    def postfix(self) -> Any:
        value = self.primary()
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                kind, name = self.take()
                if kind != "id" and name != "*":
                    raise ExpressionError(f"bad property {name!r} in {self.text!r}")
                key: Any = name
            else:
                key = self.or_()
                self.take("]")
            if isinstance(value, dict) and isinstance(key, str):
                value = value.get(key)
            elif (isinstance(value, list) and isinstance(key, float) and key.is_integer()
                  and 0 <= key < len(value)):
                value = value[int(key)]
            else:
                value = None
        return value

    def primary(self) -> Any:
        kind, token = self.take()
        if kind == "str":
            return token[1:-1].replace("''", "'")
        if kind == "num":
            return float(token)
        if token == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind != "id":
            raise ExpressionError(f"unexpected {token!r} in {self.text!r}")
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.or_())
                if self.peek() == ",":
                    self.take()
            self.take(")")
            return self.call(token, args)
        lowered = token.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        if lowered == "null":
            return None
        return self.context.get(token)

    def call(self, name: str, args: list[Any]) -> Any:
        status = {"always": True, "success": self.status.success,
                  "failure": self.status.failure, "cancelled": self.status.cancelled}
        if name.lower() in status:
            return status[name.lower()]
        functions: dict[str, Callable[..., Any]] = {
            "contains": lambda hay, needle: (
                any(_equal(item, needle) for item in hay) if isinstance(hay, list)
                else _text(needle).casefold() in _text(hay).casefold()),
            "startswith": lambda a, b: _text(a).casefold().startswith(_text(b).casefold()),
            "endswith": lambda a, b: _text(a).casefold().endswith(_text(b).casefold()),
            "fromjson": lambda text: json.loads(_text(text)),
            "tojson": lambda value: json.dumps(value, indent=2),
            "format": lambda text, *rest: re.sub(
                r"\{(\d+)\}", lambda m: _text(rest[int(m.group(1))]), _text(text)),
        }
        function = functions.get(name.lower())
        if function is None:
            raise ExpressionError(f"unknown function {name!r} in {self.text!r}")
        return function(*args)


def evaluate(text: str, context: Mapping[str, Any], status: Status = Status()) -> Any:
    """The value of one expression (without ``${{ }}``)."""
    return _Parser(text, context, status).parse()


def condition(text: str | bool | None, context: Mapping[str, Any],
              status: Status = Status()) -> bool:
    """Whether an ``if:`` lets its job or step run (``None``: no ``if:``, so ``success()``)."""
    if text is None:
        return status.success
    if isinstance(text, bool):
        return text
    body = text.strip()
    if body.startswith("${{") and body.endswith("}}"):
        body = body[3:-2]
    if not _STATUS.search(body):
        return status.success and truthy(evaluate(body, context, status))
    return truthy(evaluate(body, context, status))
