"""The jar's word lists converted for the native METEOR: the function words, non-breaking
prefixes and WordNet synonym files, read as the jar reads them (lines split by
``BufferedReader.readLine``, words by ``StringTokenizer``) and written as ``small.json``,
``syn_words.txt``, ``syn_offsets.npy`` and ``syn_ids.npy``. :mod:`.convert` runs it beside
the paraphrase table's conversion.
"""
from __future__ import annotations

import json
import re
import zipfile
from itertools import chain
from pathlib import Path

import numpy as np

from ...errors import ResourceNotFound
from .java import tokens
from .normalize import parse_nonbreaking_prefixes

_LINE_BREAK = re.compile("\r\n|\r|\n")

#: The four lists: function words, non-breaking prefixes, synonym exceptions, synsets.
JarLines = tuple[list[str], list[str], list[str], list[str]]


def java_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` over ``text``."""
    lines = _LINE_BREAK.split(text) if "\r" in text else text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _read_text(z: zipfile.ZipFile, name: str) -> str:
    try:
        data = z.read(name)
    except KeyError:
        raise ResourceNotFound(f"the METEOR jar has no {name}; is it coco's meteor-1.5.jar?") from None
    return data.decode("utf-8", "replace")


def read_jar(jar: Path) -> JarLines:
    """The function words, non-breaking prefixes, synonym exceptions and synsets, as lines."""
    try:
        z = zipfile.ZipFile(jar)
    except (zipfile.BadZipFile, OSError) as e:
        raise ResourceNotFound(f"{jar}: not a readable METEOR 1.5 jar ({e}); the native backend reads "
                               "its word lists from the jar") from e
    with z:
        function_words = java_lines(_read_text(z, "function/english.words"))
        nbp_lines = java_lines(_read_text(z, "nonbreaking/english.prefixes"))
        exc_lines = java_lines(_read_text(z, "synonym/english.exceptions"))
        syn_lines = java_lines(_read_text(z, "synonym/english.synsets"))
    return function_words, nbp_lines, exc_lines, syn_lines


def synset_ids(id_lines: list[str]) -> tuple[list[int], list[int]]:
    """Every line's synset ids, concatenated, and how many each line has (``tokens`` then
    ``int``, replaced lines included: an unparsable one fails as before)."""
    text = "\n".join(id_lines)
    digits = text.replace(" ", "").replace("\n", "")
    if not (id_lines and digits.isascii() and (digits.isdigit() or not digits) and "  " not in text
            and " \n" not in text and "\n " not in text and not text.startswith(" ") and not text.endswith(" ")):
        id_tokens = [tokens(line) for line in id_lines]
        return list(map(int, chain.from_iterable(id_tokens))), [len(t) for t in id_tokens]
    # coco's: digits and single spaces, so a line's ids are its spaces + 1 (none if empty)
    raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    newlines = np.flatnonzero(raw == 10)
    spaces = np.flatnonzero(raw == 32)
    starts = np.concatenate([[0], newlines + 1])
    stops = np.concatenate([newlines, [len(raw)]])
    counts = np.searchsorted(spaces, stops) - np.searchsorted(spaces, starts) + (stops > starts)
    return list(map(int, text.split())), counts.tolist()


def write_jar(lines: JarLines, out: Path) -> None:
    function_words, nbp_lines, exc_lines, syn_lines = lines
    exceptions: dict[str, list[str]] = {}
    for base, forms in zip(exc_lines[0::2], exc_lines[1::2]):
        for form in tokens(forms):
            exceptions.setdefault(form, []).append(base)
    ints, counts = synset_ids(syn_lines[1::2])
    id_lines = syn_lines[1::2]
    line_of = dict(zip(syn_lines[0::2], range(len(id_lines))))  # a repeated word replaces, as Hashtable.put
    words = list(line_of)
    if len(words) < len(id_lines):
        ends = np.cumsum(counts).tolist()
        ints = [i for k in line_of.values() for i in ints[ends[k] - counts[k] : ends[k]]]
        counts = [counts[k] for k in line_of.values()]
    offsets = np.zeros(len(words) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(counts)
    np.save(out / "syn_offsets.npy", offsets)
    np.save(out / "syn_ids.npy", np.asarray(ints, dtype=np.int32))
    (out / "syn_words.txt").write_text("\n".join(words), encoding="utf-8")
    (out / "small.json").write_text(json.dumps({
        "function_words": function_words,
        "nonbreaking": parse_nonbreaking_prefixes(nbp_lines),
        "exceptions": exceptions,
    }), encoding="utf-8")
