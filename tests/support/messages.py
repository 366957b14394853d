"""Every error and warning the helper can print, read from its source, for the generated list
at the end of docs/troubleshooting.md (``python -m tests.test_docs_facts --write``).

Found by the shape of the code, not by a list kept by hand:

- ``X(message, ...)`` where ``X`` is :class:`cursor_agent_action.errors.ActionError` or a
  subclass of it (any module's), the message first: raised there, or returned to be raised;
- ``runner.warning(message, ...)`` and ``runner.error(message, ...)``;
- ``verdict.fail(Cause.X, message)`` (a run that fails after the agent ran);
- what a function named ``*_warning`` returns (a warning built in one place, printed in another);
- and the action's shell steps (:func:`shell_messages`).

A message is shown from its start up to its first sentence's end (at most 160 characters), a
value the code formats in as ``…``. A message made elsewhere and passed in by name (a variable)
is not listed: it is listed where it is made.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "cursor_agent_action"
HOLE = "…"
WIDTH = 160


@dataclass(frozen=True, order=True)
class Message:
    module: str  # e.g. agent/contain/isolation.py
    kind: str  # "error" or "warning"
    text: str


def _text(node: ast.AST) -> str | None:
    """The message a node makes, a formatted value as HOLE; None when it is not a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(part.value) if isinstance(part, ast.Constant) else HOLE
                       for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is not None or right is not None:
            return (left or HOLE) + (right or HOLE)
    return None


def shown(text: str) -> str:
    """The start of a message: its first sentence, at most :data:`WIDTH` characters, one line."""
    flat = " ".join(text.split())
    for end in (". ", ".\n", "? "):
        if end in flat[:WIDTH]:
            flat = flat[: flat.index(end) + 1]
            break
    return flat if len(flat) <= WIDTH else flat[: WIDTH - 1] + HOLE


def _error_classes(trees: dict[str, ast.Module]) -> set[str]:
    names = {"ActionError"}
    changed = True
    while changed:  # subclasses of subclasses, in any module
        changed = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in names and any(
                        (isinstance(base, ast.Name) and base.id in names)
                        or (isinstance(base, ast.Attribute) and base.attr in names)
                        for base in node.bases):
                    names.add(node.name)
                    changed = True
    return names


def _is_cause(node: ast.expr) -> bool:
    """``Cause.SOMETHING``: the first argument of ``Verdict.fail``."""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "Cause")


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")


def messages() -> list[Message]:
    """Every message (see the module docstring), sorted, without repeats."""
    trees = {str(path.relative_to(PACKAGE)): ast.parse(path.read_text(encoding="utf-8"))
             for path in sorted(PACKAGE.rglob("*.py"))}
    every_error = _error_classes(trees)
    found: set[Message] = set()
    for module, tree in trees.items():
        # A module's own class of the same name (box/root.py's SetupError) is no ActionError.
        errors = every_error - {node.name for node in ast.walk(tree)
                                if isinstance(node, ast.ClassDef) and not any(
                                    isinstance(base, ast.Name) and base.id in every_error
                                    for base in node.bases)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                name = _called(node)
                if name in errors:  # raised here, or made by a helper that returns it
                    text, kind = _text(node.args[0]), "error"
                elif name in ("warning", "error") and isinstance(node.func, ast.Attribute):
                    text = _text(node.args[0])
                    kind = name
                elif name == "fail" and len(node.args) > 1 and _is_cause(node.args[0]):
                    text, kind = _text(node.args[1]), "error"
                else:
                    continue
                if text:
                    found.add(Message(module, kind, shown(text)))
            elif isinstance(node, ast.FunctionDef) and node.name.endswith("_warning"):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Return) and inner.value is not None:
                        text = _text(inner.value)
                        if text:
                            found.add(Message(module, "warning", shown(text)))
    return sorted(found)


ROOT = PACKAGE.parents[1]
_SHELL = re.compile(
    r'\bfail "((?:[^"\\]|\\.)+)"'  # setup-helper.sh: fail "text"
    r'|::(error|warning) title=[^:]*::([^"\n]+)'  # a workflow command with its text
    r'|^\s*message="([^"]+)"',  # action.yml: message="text", printed as ::error::$message
    re.M,
)


def _commands_out(text: str) -> str:
    """``text`` with each ``$( ... )`` (parentheses and quotes inside) as HOLE."""
    out, i = [], 0
    while (start := text.find("$(", i)) >= 0:
        depth, j = 0, start + 1
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        out += [text[i:start], HOLE]
        i = j + 1
    return "".join([*out, text[i:]])


def shell_messages() -> list[Message]:
    """What the action's shell steps print: setup-helper.sh's ``fail "..."`` and the
    ``::error``/``::warning`` lines of the action files (a shell variable shown as ``…``)."""
    found: set[Message] = set()
    for path in [ROOT / "action.yml", *sorted(ROOT.glob("*/action.yml")),
                 ROOT / "scripts" / "setup-helper.sh"]:
        for match in _SHELL.finditer(_commands_out(path.read_text(encoding="utf-8"))):
            text = match[1] or match[3] or match[4]
            kind = match[2] or "error"
            text = text.split("\\n")[0]  # a printf format's line end, and what follows it
            text = re.sub(r"\$\{?\w+\}?|%s", HOLE, text).replace('\\"', '"')
            if text.strip(HOLE + " "):
                found.add(Message(str(path.relative_to(ROOT)), kind, shown(text)))
    return sorted(found)


def render() -> str:
    """The generated list of docs/troubleshooting.md."""
    rows = ["| Message (its start) | Kind | Printed by |", "|---|---|---|"]
    for message in [*messages(), *shell_messages()]:
        text = message.text.replace("|", "\\|").replace("`", "'")
        rows.append(f"| `{text}` | {message.kind} | `{message.module}` |")
    return "\n".join(rows) + "\n"
