"""The bank of known messages (data/doctor/signatures.toml): exact texts MPI libraries, PMIx, UCX, libfabric
and container runtimes print, each with what it means, the fix and its public source, matched against a run's
stored message and output."""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass

from ..campaign.reasons import first_reason
from ..data import data_path

BANK = ("doctor", "signatures.toml")
_FIELDS = ("id", "verdict", "pattern", "meaning", "fix", "source")


class SignatureError(ValueError):
    """The bank is malformed: the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Signature:
    id: str
    verdict: str
    pattern: re.Pattern
    meaning: str
    fix: str
    source: str
    # another message that, anywhere in the same text, says the cause is not this one (NCCL's shared-memory
    # segment that failed in a CUDA call, not for want of space)
    unless: re.Pattern | None = None
    # a message that, anywhere in the same text, makes a warning fatal (PMIx's psec framework without munge is
    # a warning until `pmix_psec_base_open failed` follows it)
    problem_with: re.Pattern | None = None

    def withdrawn(self, text: str) -> bool:
        """True when the text holds the message that rules this cause out."""
        return bool(self.unless and self.unless.search(text))

    def verdict_in(self, text: str) -> str:
        """The verdict in this text: its own, or problem where the text holds the message that makes it one."""
        return "problem" if self.problem_with and self.problem_with.search(text) else self.verdict


@dataclass(frozen=True)
class Hit:
    signature: Signature
    line: str  # the first matching line, as campaign.reasons cleans a reason
    verdict: str  # the signature's verdict in the text it was found in (Signature.verdict_in)


def load_bank(path=None) -> list[Signature]:
    """The signatures of ``path`` (default: the shipped bank), checked entry by entry."""
    path = path or data_path(*BANK)
    try:
        entries = tomllib.loads(path.read_text()).get("signature", [])
    except tomllib.TOMLDecodeError as error:
        raise SignatureError(f"{path}: not valid TOML: {error}") from None
    bank, seen = [], set()
    for number, entry in enumerate(entries, 1):
        where = f"{path}: [[signature]] #{number}"
        for name in _FIELDS:
            if not isinstance(entry.get(name), str) or not entry[name].strip():
                raise SignatureError(f"{where}: field {name!r} missing or empty (expected text)")
        if entry["verdict"] not in ("warning", "problem"):
            raise SignatureError(f"{where} ({entry['id']}): verdict {entry['verdict']!r}, expected warning or problem")
        if entry["id"] in seen:
            raise SignatureError(f"{where}: id {entry['id']!r} used twice")
        seen.add(entry["id"])
        for name in ("unless", "problem_with"):
            if name in entry and (not isinstance(entry[name], str) or not entry[name].strip()):
                raise SignatureError(f"{where} ({entry['id']}): field {name!r} empty (expected a regular expression)")
        pattern, unless, problem_with = (_compiled(entry, name, where) for name in ("pattern", "unless", "problem_with"))
        bank.append(Signature(entry["id"], entry["verdict"], pattern, entry["meaning"], entry["fix"], entry["source"],
                              unless, problem_with))
    return bank


def _compiled(entry: dict, name: str, where: str) -> re.Pattern | None:
    if name not in entry:
        return None
    try:
        return re.compile(entry[name])
    except re.error as error:
        raise SignatureError(f"{where} ({entry['id']}): {name} is not a regular expression: {error}") from None


@functools.lru_cache(maxsize=1)
def shipped_bank() -> tuple[Signature, ...]:
    return tuple(load_bank())


def match(text: str | None, bank=None) -> list[Hit]:
    """Each signature that occurs in ``text``, once, with its first matching line (messages folded over two
    lines by help texts are tried on the text with line breaks as spaces too), cleaned as a failed case's
    reason is: without launcher tags and source locations, cut to the reason's length."""
    if not text:
        return []
    lines = text.splitlines()
    flat = " ".join(line.strip() for line in lines)
    hits = []
    for signature in bank if bank is not None else shipped_bank():
        if signature.withdrawn(text):
            continue
        line = next((line for line in lines if signature.pattern.search(line)), None)
        if line is None and (folded := signature.pattern.search(flat)):
            line = folded.group(0)
        if line is not None:
            hits.append(Hit(signature, first_reason(line) or line.strip(), signature.verdict_in(text)))
    return hits
