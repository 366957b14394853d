"""How the runner reads a ``GITHUB_OUTPUT`` file: what tests and tools use to read back the
outputs :mod:`cursor_agent_action.runner_io` wrote."""

from __future__ import annotations


def parse_output_file(text: str) -> dict[str, str]:
    """Parse a ``GITHUB_OUTPUT`` file the way the runner does (used by tests and tools).

    Supports ``name=value`` lines and ``name<<DELIM`` blocks. Like the runner, a line may end in
    ``\r\n``: the ``\r`` is not part of the line but is kept between lines of a value. Raises
    ``ValueError`` on a malformed file, as the runner would fail the step.
    """
    # (line, newline) pairs, as actions/runner's FileCommandManager reads them.
    pairs: list[tuple[str, str]] = []
    for raw in text.split("\n"):
        if raw.endswith("\r"):
            pairs.append((raw[:-1], "\r\n"))
        else:
            pairs.append((raw, "\n"))
    if text.endswith("\n"):
        pairs.pop()
    result: dict[str, str] = {}
    i = 0
    while i < len(pairs):
        line = pairs[i][0]
        i += 1
        if line == "":
            continue
        heredoc = line.find("<<")
        equals = line.find("=")
        if heredoc > 0 and (equals < 0 or heredoc < equals):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            body: list[tuple[str, str]] = []
            while True:
                if i >= len(pairs):
                    raise ValueError(f"delimiter {delimiter!r} for {name!r} not found")
                if pairs[i][0] == delimiter:
                    i += 1
                    break
                body.append(pairs[i])
                i += 1
            # Lines keep the newline that followed them, except the last one.
            result[name] = "".join(line + newline for line, newline in body)[
                : -len(body[-1][1]) if body else None
            ]
        elif equals > 0:
            result[line[:equals]] = line[equals + 1 :]
        else:
            raise ValueError(f"invalid output line {line!r}")
    return result
