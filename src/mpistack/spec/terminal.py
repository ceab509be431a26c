"""Text from outside (a benchmark's output, a tag, a file name) made safe to print on a terminal: every
control character but the new line and the tab is shown as an escape (`\x1b`), so that no escape sequence
reaches the terminal raw (one can move the cursor, rewrite what was printed, set the window title or, on some
terminals, answer with input of its own), and neither do the Unicode controls that reorder or hide text.
See ECMA-48, 'Control Functions for Coded Character Sets',
https://ecma-international.org/publications-and-standards/standards/ecma-48/."""

from __future__ import annotations

import re
import textwrap
from typing import Any

# C0 but tab and new line, DEL, C1; the bidirectional overrides and isolates; line and paragraph separators
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _shown(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every character a terminal would act on written out as an escape (`\\x1b`, `\\u202e`)."""
    return _UNPRINTABLE.sub(_shown, text)


def printable_values(value: Any) -> Any:
    """A row (or list, or value) for a terminal or CSV: every string in it `printable`, the rest as it is."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(key) if isinstance(key, str) else key: printable_values(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(printable_values(item) for item in value)
    return value


def hanging(text: str, width: int, indent: str = "    ") -> str:
    """Prose folded within `width` columns, its continued lines indented so that each item stands out; words
    longer than a line (URLs, paths, commands) are never split."""
    return textwrap.fill(text, width=max(width, 40), subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)
