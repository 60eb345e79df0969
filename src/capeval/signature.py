"""sacrebleu-style signatures: ``name|key:value|...|version:X``.

A signature records everything that changes a number: variant, tokenizer, number of
references, constants, df source, model and revision, seed. Version always comes last.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ._version import __version__


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return repr(value)
    return str(value)


@dataclass(frozen=True)
class Signature:
    """Plain-data signature; ``str(sig)`` gives the sacrebleu-style line."""

    name: str
    fields: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    version: str = __version__

    @classmethod
    def make(cls, name: str, **fields: object) -> "Signature":
        items = tuple((k, _fmt(v)) for k, v in fields.items() if v is not None)
        return cls(name=name, fields=items)

    def as_dict(self) -> dict[str, str]:
        out = {"name": self.name}
        out.update(dict(self.fields))
        out["version"] = self.version
        return out

    def __str__(self) -> str:
        parts = [self.name] + [f"{k}:{v}" for k, v in self.fields] + [f"version:{self.version}"]
        return "|".join(parts)


def signature_line(name: str, **fields: object) -> str:
    """The sacrebleu-style line of :meth:`Signature.make` (fields that are None left out)."""
    return str(Signature.make(name, **fields))


def with_fields(signature: str, **fields: str) -> str:
    """``signature`` (a signature line) with the values of these existing fields replaced: the
    ``tok`` and ``nrefs`` of scores merged from parts (chunks, ranks), which each part stamped
    from its own rows."""
    parts = signature.split("|")
    for k, p in enumerate(parts):
        key = p.split(":", 1)[0]
        if k and key in fields:
            parts[k] = f"{key}:{fields[key]}"
    return "|".join(parts)


def with_last_fields(signature: str, fields: dict[str, object], keys: tuple[str, ...]) -> str:
    """``signature`` with the fields ``keys`` set to ``fields``' values, placed just before the
    version (a key missing from ``fields`` is removed): the whole-input fields of scores merged
    from parts (``Aggregate.fields``), which each part stamped from its own rows or not at all."""
    parts = [p for p in signature.split("|") if p.split(":", 1)[0] not in keys]
    head, version = parts[:-1], parts[-1]
    extra = [f"{k}:{_fmt(fields[k])}" for k in keys if k in fields]
    return "|".join([*head, *extra, version])


def nrefs_field(references) -> str:
    """``nrefs`` as sacrebleu writes it: the count, or ``var`` when it varies."""
    counts = {len(r) for r in references}
    if len(counts) == 1:
        return str(counts.pop())
    return "var"
