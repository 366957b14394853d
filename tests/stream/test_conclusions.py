"""The conclusions are a closed set (``record.Conclusion``, checked by mypy where it is set),
and the docs' table lists exactly that set."""

from __future__ import annotations

import re
from pathlib import Path

from cursor_agent_action.stream.record import CONCLUSIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "how-it-works.md"


def test_the_docs_list_every_conclusion_and_no_other() -> None:
    table = DOC.read_text(encoding="utf-8").split("## Conclusions", 1)[1].split("\n\n", 2)[1]
    rows = table.splitlines()[2:]  # under the header and its rule
    listed = re.findall(r"^\| `([a-z]+)` \|", "\n".join(rows), re.MULTILINE)
    assert len(listed) == len(rows)
    assert sorted(listed) == sorted(CONCLUSIONS)
    assert len(CONCLUSIONS) == 5
