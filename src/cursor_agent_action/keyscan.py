"""The API key in every form an agent could write it, looked for wherever the run hands text on.

Where the real key is in the agent's environment (``api-key-exposure: in-box``, the Landlock
tier, an uncontained run), an agent can write it where redaction of its literal value does not
look. Before anything leaves the ``run`` step (the box's patch, before it is applied; the patch
handed on; the transcript; the answer outputs), :class:`KeyScan` looks for the key

- as it is, and reversed, also in fullwidth or other compatibility letters (NFKC);
- in hex, in either case, and as decimal or octal byte codes or bits;
- in base64 (standard and URL-safe), base32 (either case), base85 and ascii85, at each byte
  alignment (only the characters made of the key's own bits, as the Actions runner's masker
  does, so the key inside a longer encoded blob is found too);

each also when split over lines (line breaks, indentation, quotes, JSON escapes and a patch's
``+`` markers between its parts), and any piece of it :data:`PIECE_BYTES` bytes long or more in
any of these forms (a key split across two files leaves a piece in each). Binary files in a
patch are read as git wrote them (base85, deflated), so a key inside an image is found as well.

A hit fails the run and nothing is handed on; the message names the file or the output, never
the key. What this cannot see: a key transformed otherwise (compressed, encrypted, permuted,
spelled out in words, cut into pieces shorter than :data:`PIECE_BYTES`). That is why, by
default, the key is not in the box at all (docs/security.md).
"""

from __future__ import annotations

import base64
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

PIECE_BYTES = 12
"""The shortest piece of the key looked for (in bytes of the key: 12 characters of it as it
is, 24 hex digits, 16 base64 characters); a random 12-character run of a key does not appear in
ordinary text by chance (62^7 and more after a known prefix)."""
MIN_KEY_LEN = 16
"""A shorter value is no key of Cursor's (``crsr_`` and 64 characters): not looked for."""
_SEED = 6  # the pieces are found through their first 6-character runs (see _Family.search)
_PREFIX = re.compile(r"[A-Za-z]{2,8}_")  # a kind's prefix (crsr_): no secret in it

_JSON_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[nrtbf\"\\/])")
_ADDED_LINE = re.compile(rb"^\+(?!\+\+ )", re.M)
_SECTION = re.compile(rb"^diff --git a/(.*?) b/(.*)$", re.M)
_BINARY_HUNK = re.compile(rb"^(?:literal|delta) \d+\n((?:[A-Za-z][^\n]*\n)+)", re.M)


@dataclass(frozen=True)
class Hit:
    """Where a form of the key was found (``where``: a file, or an output's name) and which
    form; never the key or the text around it."""

    where: str
    form: str

    def __str__(self) -> str:
        return f"{self.where} ({self.form})"


class _Family:
    """Forms that share an alphabet: the text is squeezed to that alphabet (so line breaks,
    quotes and indentation between the parts fall away), then searched for any run of
    ``piece`` characters of one of the forms."""

    def __init__(self, forms: dict[str, str], alphabet: str, piece: int, *,
                 fold: bool = False) -> None:
        self.fold = fold
        self.piece = piece
        self.keep = re.compile(f"[^{re.escape(alphabet)}]+" if alphabet else "(?s:.)+")
        self.forms = {name: form.lower() if fold else form
                      for name, form in forms.items() if len(form) >= piece}
        # Every _SEED-character run of every form, with where it starts in which form.
        self.seeds: dict[str, list[tuple[str, int]]] = {}
        for name, form in self.forms.items():
            for start in range(len(form) - _SEED + 1):
                self.seeds.setdefault(form[start:start + _SEED], []).append((name, start))

    def search(self, text: str) -> str | None:
        """The name of a form ``text`` holds a ``piece``-long run of, or None.

        A run of ``piece`` characters holds a ``_SEED``-long seed that starts at a multiple of
        ``piece - _SEED + 1`` in the text, so only those positions are looked up; a seed found
        is extended both ways to see how long the shared run is."""
        if not self.forms:
            return None
        squeezed = self.keep.sub("", text.lower() if self.fold else text)
        stride = self.piece - _SEED + 1
        for at in range(0, len(squeezed) - _SEED + 1, stride):
            for name, start in self.seeds.get(squeezed[at:at + _SEED], ()):
                form = self.forms[name]
                before = 0
                while (before < start and before < at
                       and squeezed[at - before - 1] == form[start - before - 1]):
                    before += 1
                after = _SEED
                while (start + after < len(form) and at + after < len(squeezed)
                       and squeezed[at + after] == form[start + after]):
                    after += 1
                if before + after >= self.piece:
                    return name
        return None


def _aligned(secret: bytes, group: int, chars: int, encode: Callable[[bytes], bytes],
             name: str) -> dict[str, str]:
    """The characters of an encoding of ``secret`` (``group`` bytes to ``chars`` characters)
    that depend on its bytes alone, at each of the ``group`` byte alignments."""
    found = {}
    for shift in range(group):
        encoded = encode(b"\0" * shift + secret + b"\0" * group).decode("ascii")
        start = -(-chars * shift // group)
        end = chars * (shift + len(secret)) // group
        found[f"{name}, offset {shift}"] = encoded[start:end]
    return found


class KeyScan:
    """The forms of one or more keys, and the searches of texts, files and patches for them."""

    def __init__(self, keys: Iterable[str]) -> None:
        plain: dict[str, str] = {}
        hexes: dict[str, str] = {}
        encoded: dict[str, str] = {}
        base32: dict[str, str] = {}
        base85: dict[str, str] = {}
        digits: dict[str, str] = {}
        bits: dict[str, str] = {}
        for number, value in enumerate(k.strip() for k in keys):
            if len(value) < MIN_KEY_LEN:
                continue
            tag = f" #{number + 1}" if number else ""
            # The part after a kind's prefix: a piece must hold that many of the key's own
            # characters (every form of the whole key holds this part's form).
            prefix = _PREFIX.match(value)
            key = value[prefix.end():] if prefix else value
            raw = key.encode("utf-8", "surrogateescape")
            plain[f"as it is{tag}"] = key
            plain[f"reversed{tag}"] = key[::-1]
            hexes[f"hex{tag}"] = raw.hex()
            for forms, group, chars, encode, name in (
                    (encoded, 3, 4, base64.b64encode, "base64"),
                    (encoded, 3, 4, base64.urlsafe_b64encode, "URL-safe base64"),
                    (base32, 5, 8, base64.b32encode, "base32"),
                    (base85, 4, 5, base64.b85encode, "base85"),
                    (base85, 4, 5, base64.a85encode, "ascii85")):
                forms.update(_aligned(raw, group, chars, encode, name + tag))
            digits[f"decimal byte codes{tag}"] = "".join(str(byte) for byte in raw)
            digits[f"octal byte codes{tag}"] = "".join(f"{byte:03o}" for byte in raw)
            bits[f"binary{tag}"] = "".join(f"{byte:08b}" for byte in raw)
        alphabet = "".join(sorted({char for form in plain.values() for char in form}))
        self.families = (
            _Family(plain, alphabet, PIECE_BYTES),
            _Family(hexes, "0123456789abcdefABCDEF", 2 * PIECE_BYTES, fold=True),
            _Family(encoded, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_",
                    -(-4 * PIECE_BYTES // 3)),
            _Family(base32, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz234567",
                    -(-8 * PIECE_BYTES // 5), fold=True),
            _Family(base85, "".join(chr(code) for code in range(33, 127)),
                    -(-5 * PIECE_BYTES // 4)),
            _Family(digits, "0123456789", 3 * PIECE_BYTES),
            _Family(bits, "01", 8 * PIECE_BYTES),
        )

    def __bool__(self) -> bool:
        return any(family.forms for family in self.families)

    def find(self, text: str) -> str | None:
        """The form of the key ``text`` holds (as it is, or with JSON escapes undone), or None."""
        if not self:
            return None
        views = [text]
        if "\\" in text:
            views.append(_JSON_ESCAPE.sub("", text))
        if not text.isascii():  # fullwidth letters, ligatures: as NFKC folds them
            views.append(unicodedata.normalize("NFKC", text))
        for view in views:
            for family in self.families:
                if (form := family.search(view)) is not None:
                    return form
        return None

    def text_hits(self, texts: dict[str, str]) -> list[Hit]:
        """Each named text (an output, the final message) that holds a form of the key."""
        return [Hit(where, form) for where, text in texts.items()
                if (form := self.find(text)) is not None]

    def patch_hits(self, patch: bytes) -> list[Hit]:
        """Each file of a ``git diff --binary`` patch whose added lines, or new binary
        content, hold a form of the key."""
        if not self:
            return []
        return [Hit(path, form) for path, added in _sections(patch)
                if (form := self.find(added)) is not None]


def _sections(patch: bytes) -> Iterator[tuple[str, str]]:
    """Each file of the patch: its path and what it adds (the added lines without their ``+``,
    and the bytes of its binary hunks, inflated; as Latin-1, one character a byte)."""
    starts = list(_SECTION.finditer(patch))
    if not starts:  # no header (never from our git): the whole patch as one text
        yield "the patch", patch.decode("latin-1")
        return
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(patch)
        body = patch[match.end():end]
        added = b"\n".join(line[1:] for line in body.split(b"\n") if _ADDED_LINE.match(line))
        binary = b"".join(_inflate(hunk.group(1)) for hunk in _BINARY_HUNK.finditer(body))
        path = match.group(2).decode("utf-8", "replace")
        yield path, (match.group(0) + b"\n" + added + b"\n" + binary).decode("latin-1")


def _inflate(lines: bytes) -> bytes:
    """A git binary hunk's data: each line a length character (``A``-``Z``: 1-26 bytes,
    ``a``-``z``: 27-52) and base85 (git's alphabet is RFC 1924's), all of it deflated. What
    does not decode is kept as it is (it is searched all the same)."""
    data = bytearray()
    for line in lines.split(b"\n"):
        if not line:
            continue
        size = line[0] - (ord("A") - 1) if line[:1].isupper() else line[0] - (ord("a") - 27)
        try:
            data += base64.b85decode(line[1:])[:size]
        except ValueError:
            return lines
    try:
        return zlib.decompress(bytes(data))
    except zlib.error:
        return bytes(data)
