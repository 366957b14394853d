"""Secrets out of everything people can read: the one redactor every writer uses.

Two nets, both replacing with ``***``:

1. **Known secrets** (the API key, ``GITHUB_TOKEN``, every value masked with ``::add-mask::``,
   the variables named in ``mask-env``), in every form the text can carry them: as they are,
   each line of a multi-line value, JSON-escaped (with and without ``\\uXXXX``), URL-encoded,
   as a workflow command's message escapes it, base64-encoded at each of the three byte
   alignments (the way the Actions runner's own masker does: only the characters that depend
   on the secret alone, so a secret inside a longer encoded blob is found too), in hex (either
   case) and reversed.
2. **Secret-shaped text** the run does not know (:data:`PATTERNS`): GitHub, AWS, OpenAI and
   Anthropic, Slack and Google keys, private key blocks, JWTs. A safety net, not a guarantee:
   a secret of another shape, or one the agent transformed otherwise, passes.

Speed: texts up to :data:`_SHORT` characters (a tool call's target, an assistant segment) are
matched by one compiled expression, with recent answers cached (agents name the same paths
again and again); long texts (a flushed log buffer, a transcript chunk) by substring search for
the known secrets, and by the patterns' expression only when one of their hints is there
(:func:`has_hint`, which searches a long text's UTF-8 bytes: see :data:`_HINTS_UTF8`).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MIN_SECRET_LEN = 4  # shorter "secrets" would redact ordinary text; the runner ignores them too
MIN_ENCODED_LEN = 8  # a shorter base64 piece would match ordinary words
MASK = "***"
_SHORT = 512
_CACHE_SIZE = 8192

PATTERNS: tuple[tuple[str, str, str], ...] = (
    # (name, literals one of which every match contains (the fast pre-check), expression)
    ("GitHub token", "ghp_|gho_|ghu_|ghs_|ghr_", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"),
    ("GitHub fine-grained token", "github_pat_", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"),
    ("AWS access key id", "AKIA|ASIA", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    ("OpenAI or Anthropic key", "sk-", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
    ("Slack token", "xox", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    ("Google API key", "AIz", r"\bAIza[0-9A-Za-z_-]{35}"),
    (
        "private key block",
        "KEY-----",
        # Any white space in the header lines (a tab or a no-break space where PEM has a
        # space still shows a human the key that follows).
        r"-----BEGIN[A-Z0-9\s]{0,64}PRIVATE\s{1,8}KEY-----"
        r"(?:.{0,16384}?-----END[A-Z0-9\s]{0,64}PRIVATE\s{1,8}KEY-----"
        r"|[A-Za-z0-9+/=\s\\n\u2502]{0,16384})",  # \u2502: the log's agent-line mark
    ),
    ("JSON web token", "eyJ", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
)
"""Secret shapes scrubbed whether or not the run knows them; one test per row."""

_PATTERN_RX = re.compile("|".join(f"(?:{rx})" for _, _, rx in PATTERNS), re.DOTALL)
_PATTERN_HINTS = tuple(dict.fromkeys(h for _, hints, _ in PATTERNS for h in hints.split("|")))
# Whether a short text holds a hint, asked of the text reversed: the hints' last characters
# (_ - x z J A) are rarer than their first ones (e s g), so the expression tries far fewer
# places (twice as fast as either a forward search or one substring search per hint).
# Grouped by first character ("_(?:phg|ohg|...)|A(?:IKA|ISA)|..."): the expression engine
# does not factor them itself, and would try every branch at each "_" or "-".
_BY_LAST: dict[str, list[str]] = {}
for _hint in _PATTERN_HINTS:
    _BY_LAST.setdefault(_hint[-1], []).append(re.escape(_hint[-2::-1]))
_HINTS_REVERSED = re.compile(
    "|".join(
        re.escape(first) + (f"(?:{'|'.join(rest)})" if len(rest) > 1 else rest[0])
        for first, rest in _BY_LAST.items()
    )
)
# A long text is searched on its UTF-8 bytes (a hint is ASCII, so it is in the text exactly
# when it is in the bytes), forward, with one expression per first character of the hints
# ("g(?:hp_|ho_|...|ithub_pat_)", "A(?:KIA|SIA|Iz)", ...): an expression that starts with one
# literal byte is found by a fast scan, where one that starts with a set of characters (any
# alternation) is tried at every position. Before each scan, a byte every hint of its group
# holds, the rarest in ordinary text (J for eyJ, V for the private key block), is looked for
# with memchr, a hundred times faster than the scan: most texts skip most scans.
_RARITY = b"JQZVXKYWqjzxUkvGBHPMLFDNCRTOEISAybfwpgm_-lucdhrsnioate"
"""Bytes from the rarest in prose and code to the most common (the anchors' order of choice)."""


def _anchor(hints: list[str]) -> bytes:
    """The byte every one of ``hints`` holds that comes first in :data:`_RARITY`."""
    shared = set.intersection(*(set(hint.encode("ascii")) for hint in hints))
    return bytes([min(shared, key=lambda byte: (_RARITY + bytes([byte])).index(byte))])


def _scan(first: str, hints: list[str]) -> re.Pattern[bytes]:
    """``first`` then the rest of one of ``hints`` (all starting with it), on bytes."""
    rest = "|".join(re.escape(hint[1:]) for hint in hints)
    return re.compile(f"{re.escape(first)}(?:{rest})".encode("ascii"))


_BY_FIRST: dict[str, list[str]] = {}
for _hint in _PATTERN_HINTS:
    _BY_FIRST.setdefault(_hint[0], []).append(_hint)
_HINTS_UTF8 = tuple((_anchor(hints), _scan(first, hints)) for first, hints in _BY_FIRST.items())
_HINT_SHORT = 4096  # up to this many characters, the one reversed expression is faster
_HINT_WINDOW = 1024 * 1024  # a long text is encoded a piece at a time, never copied whole
_HINT_OVERLAP = max(map(len, _PATTERN_HINTS)) - 1


def has_hint(text: str) -> bool:
    """Whether ``text`` holds one of the :data:`PATTERNS`' hints (a match may still not be
    there; without one it cannot be)."""
    if len(text) <= _HINT_SHORT:
        return _HINTS_REVERSED.search(text[::-1]) is not None
    step = _HINT_WINDOW - _HINT_OVERLAP
    return any(
        has_hint_utf8(text[start : start + _HINT_WINDOW].encode("utf-8", "surrogatepass"))
        for start in range(0, len(text), step)
    )


def has_hint_utf8(data: bytes) -> bool:
    """:func:`has_hint` for a text's UTF-8 bytes (``surrogatepass``: any ``str`` encodes)."""
    for anchor, expression in _HINTS_UTF8:
        if anchor in data and expression.search(data) is not None:
            return True
    return False


def base64_pieces(secret: bytes) -> list[str]:
    """The parts of ``secret``'s base64 forms that do not depend on the bytes around it, at
    the three alignments (standard and URL-safe alphabets)."""
    pieces = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret).decode()
        start = -(-8 * shift // 6)  # the first character made of secret bits only
        end = 8 * (shift + len(secret)) // 6  # past the last such character
        piece = encoded[start:end]
        if len(piece) >= MIN_ENCODED_LEN:
            pieces += [piece, piece.replace("+", "-").replace("/", "_")]
    return pieces


def _bytes_of(text: str) -> bytes:
    """The bytes ``text`` stands for: a value from the environment that is not UTF-8 holds its
    stray bytes as surrogates (U+DC80-U+DCFF), which go back to those bytes; any other lone
    surrogate is encoded as it is."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def forms(value: str) -> list[str]:
    """Every form of ``value`` (and of each of its lines) that :class:`Redactor` replaces."""
    found: list[str] = []
    for raw in {value, *value.splitlines()}:
        stripped = raw.strip()
        if len(stripped) < MIN_SECRET_LEN:
            continue
        raw_bytes = _bytes_of(stripped)
        found += [
            stripped,
            # Stray bytes read back as text with each one replaced by U+FFFD, as the stream
            # parser reads a line that is not UTF-8.
            raw_bytes.decode("utf-8", "replace"),
            json.dumps(stripped, ensure_ascii=False)[1:-1],
            json.dumps(stripped)[1:-1],
            stripped.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"),
            quote(raw_bytes, safe=""),
            quote_plus(raw_bytes, safe=""),
            *base64_pieces(raw_bytes),
            # Forms an agent that holds the value might write it in (keyscan.py looks for
            # these and their pieces, and fails the run; here they are only kept out of sight).
            raw_bytes.hex(),
            raw_bytes.hex().upper(),
            stripped[::-1],
        ]
    return [piece for piece in dict.fromkeys(found) if len(piece) >= MIN_SECRET_LEN]


class Redactor:
    """Replaces known secrets (in all their :func:`forms`) and :data:`PATTERNS` with ``***``."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: list[str] = []
        self._values_utf8: list[bytes] = []  # the same, encoded (see finds_utf8)
        self.version = 0
        """Changes whenever a secret is added: what was redacted before may need it again."""
        self._known: re.Pattern[str] | None = None
        self._cache: dict[str, str] = {}  # short texts seen before (agents repeat paths)
        for value in values:
            self.add(value)

    def add(self, value: str) -> list[str]:
        """Register a secret; returns the plain pieces (the value and its lines) to mask in the
        runner's log (the runner encodes those itself)."""
        new = [piece for piece in forms(value) if piece not in self._values]
        self._values += new
        # Longest first, so a secret that contains another is replaced whole.
        self._values.sort(key=len, reverse=True)
        self._values_utf8 = [value.encode("utf-8", "surrogatepass") for value in self._values]
        self._known = re.compile("|".join(map(re.escape, self._values))) if self._values else None
        self._cache.clear()
        self.version += 1
        plain = {line.strip() for line in (value, *value.splitlines())}
        return [piece for piece in new if piece in plain]

    def __bool__(self) -> bool:
        return bool(self._values)

    def finds_utf8(self, data: bytes) -> bool:
        """Whether :meth:`__call__` could change the text whose UTF-8 bytes (``surrogatepass``)
        are ``data``: it holds a known secret's form or the hint of a pattern (which may still
        not match). On the bytes, which the caller has already made: a secret is in a text
        exactly when its UTF-8 form is in the text's (UTF-8 is self-synchronising)."""
        return any(value in data for value in self._values_utf8) or has_hint_utf8(data)

    def __call__(self, text: str) -> str:
        if len(text) <= _SHORT:  # one compiled search each (and a cache): no Python loop
            done = self._cache.get(text)
            if done is None:
                done = text
                if self._known is not None and self._known.search(done):
                    done = self._known.sub(MASK, done)
                if has_hint(done):
                    done = _PATTERN_RX.sub(MASK, done)
                if len(self._cache) >= _CACHE_SIZE:
                    self._cache.clear()
                self._cache[text] = done
            return done
        for value in self._values:  # substring search beats a regex over megabytes
            if value in text:
                text = text.replace(value, MASK)
        return _PATTERN_RX.sub(MASK, text) if has_hint(text) else text

    def net(self, rendered: str) -> str:
        """The last safety net over a whole rendered text (Markdown we built, every piece of
        it already redacted as text): each character of a known secret or a pattern's match
        that :data:`_NET_HIDES` names becomes ``*``, one for one. Nothing moves, no line end
        or Markdown delimiter changes, so no fence, code span or escape of ours can be undone
        (the full redaction, ``***`` over a whole match, would eat a fence between a
        ``BEGIN`` in one text and an ``END`` in another)."""
        return _net(rendered, self._values)


NET_MASK = "*"
"""What :meth:`Redactor.net` puts in place of each character it hides."""
_NET_HIDES = re.compile(r"[^\W_]|[-_+/=.]")
"""The characters :meth:`Redactor.net` hides: letters, digits and the punctuation secrets are
made of, none of which opens or closes anything in Markdown (no backtick, tilde, backslash,
bracket, parenthesis, angle bracket, ampersand, pipe, ``!``, ``:`` or white space)."""


def _net_spans(text: str, values: Iterable[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for value in values:
        start = text.find(value)
        while start >= 0:
            spans.append((start, start + len(value)))
            start = text.find(value, start + 1)
    if has_hint(text):
        spans += [match.span() for match in _PATTERN_RX.finditer(text)]
    return spans


def _net(text: str, values: Iterable[str]) -> str:
    spans = _net_spans(text, values)
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for index in range(start, end):
            if _NET_HIDES.match(chars[index]):
                chars[index] = NET_MASK
    return "".join(chars)


def scrub(text: str) -> str:
    """Only the :data:`PATTERNS` (no known secrets): for text no runner is around to redact."""
    return _PATTERN_RX.sub(MASK, text) if has_hint(text) else text
