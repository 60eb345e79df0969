"""File helpers shared by the loaders: root resolution, text normalisation, reference files."""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from ..paths import data_root
from ..errors import InputError, ResourceNotFound
from ..validation import LINE_BREAKS

#: the Tanti image lists that align the Karpathy-test reference files
#: (docs/DATA_FORMATS.md, Karpathy-test references)
TANTI_RESULTS = "machine_captions/tanti2018_where-image2/results"
KARPATHY_REFS = {
    "coco": ("references_karpathy_test/coco_precomp/testall_caps.txt", "imgs_mscoco.txt"),
    "flickr30k": ("references_karpathy_test/f30k_precomp/test_caps.txt", "imgs_flickr30k.txt"),
}
FLICKR8K_TOKENS = "flickr8k/Flickr8k_text/Flickr8k.token.txt"

_NON_ALNUM = re.compile(r"[^0-9a-z]")
_LINE_BREAK = re.compile("[" + "".join(LINE_BREAKS) + "]")


def download_hint(name: str = "NAME") -> str:
    """The download command, its optional mirror in brackets as usage lines write options."""
    return f"`capeval data download {name} --to DIR [--base-url URL]`"


def missing_root_reason() -> str:
    """Why :func:`capeval.paths.data_root` found nothing: a ``CAPEVAL_DATA`` that points
    nowhere is named, since the default location is then not even looked at."""
    env = os.environ.get("CAPEVAL_DATA")
    if env:
        p = Path(env).expanduser()
        return f"CAPEVAL_DATA={env} points to {'a file' if p.exists() else 'nothing'}, not a directory"
    return "CAPEVAL_DATA is not set and there is no ../shared/data"


def resolve_root(root, spec=None) -> Path:
    """The data root; raises :class:`ResourceNotFound` naming the benchmark and what to do."""
    if root is None:
        root = data_root()
        if root is None:
            what = f"benchmark {spec.name!r}" if spec is not None else "benchmark data"
            raise ResourceNotFound(
                f"{what}: data root not found ({missing_root_reason()}). Set CAPEVAL_DATA to the data "
                f"directory, or fetch the data with {download_hint()} (each file from its pinned public "
                "origin, or from a mirror with --base-url)."
            )
    root = Path(root).expanduser()
    if not root.is_dir():
        raise ResourceNotFound(f"data root {root} is not a directory")
    return root


def need(root: Path, rel: str, benchmark: str) -> Path:
    p = root / rel
    if not p.exists():
        raise ResourceNotFound(
            f"{benchmark}: missing {rel} under {root}. Run `capeval data verify` to see what is "
            f"absent, or {download_hint(benchmark)}."
        )
    return p


def read_text(path: Path) -> str:
    """A data file's text, its line ends untouched (``Path.read_text`` would turn a lone ``\\r``
    inside a caption into a line end, splitting the line). UTF-8; a byte-order mark opening the
    file (as Windows tools write one) is not part of its first field. Bytes that are not UTF-8
    are an error naming the file."""
    from ..guards import MAX_JSON_BYTES, read_regular

    data = read_regular(path, "data file", MAX_JSON_BYTES)  # a regular file of bounded size
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 ({e}); `capeval data verify` compares it with the packaged "
                         "checksums.") from None


def read_json(path: Path, benchmark: str):
    """A data file's JSON; a truncated or otherwise broken file is an error naming it."""
    from ..guards import loads_json

    text = read_text(path)
    try:
        return loads_json(text, "")  # the JSON door: depth and integer limits
    except InputError as e:
        raise InputError(f"{benchmark}: {path} is not valid JSON ({str(e).removeprefix(': ')}); it may be truncated "
                         "or edited. `capeval data verify` compares it with the packaged checksums.") from None


_WS_RUN = re.compile(r"\s+")


def _one_space(run: re.Match) -> str:
    brk = _LINE_BREAK.search(run.group())
    return brk.group() if brk else " "


def ws(text: str) -> str:
    """Whitespace normalisation of the CLIPScore loaders: ``" ".join(s.split())``.

    ``split()`` also splits at line breaks (\\n, U+2028, …). Inside a text, a whitespace run
    holding one is kept as that one character instead, so that the table counts it (and strict
    mode refuses it); once the table reads it as a space the text equals ``" ".join(s.split())``.
    At either end it is trailing whitespace, stripped like any other."""
    if _LINE_BREAK.search(text):
        return _WS_RUN.sub(_one_space, text.strip())
    return " ".join(text.split())


def id_text(value, what: str, where: str) -> str:
    """An id that JSON may give as a number or a string, as its text: ``42`` and ``"42"`` are
    one id (so a duplicate across the two forms is still found). Booleans, fractions, null and
    blank strings are no ids and are refused, naming the item."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputError(f"{where}: {what} {value!r} is not an id")
    return str(value)


def json_int(value, what: str, where: str) -> int:
    """An integer field: a JSON integer or its decimal text. ``1.5``, ``true`` and ``"1.0"`` are
    refused (``int()`` would silently turn ``1.5`` into 1)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise InputError(f"{where}: {what} {value!r} is not an integer")


def json_number(value, what: str, where: str) -> float:
    """A rating: a JSON number or its decimal text; ``true``, null and NaN are refused (the
    numbers door, :func:`capeval.guards.parse_number`, as for scores files)."""
    from ..guards import parse_number

    return parse_number(value, where, what)


def mat_text(value) -> str:
    """A MATLAB string as loaded by ``scipy.io.loadmat``: an empty one comes back as an empty
    array, whose ``str()`` would be the text ``"[]"``."""
    if getattr(value, "size", 1) == 0:
        return ""
    return str(value)


def mat_cells(value) -> list:
    """A MATLAB cell array of strings as a list (a one-string cell may come back as the string)."""
    import numpy as np

    if isinstance(value, np.ndarray) and value.dtype == object:
        return list(value.ravel())
    return [value]


def loose_key(text: str) -> str:
    """Lower-case and delete every non-alphanumeric: the loose match (docs/DATA_FORMATS.md, COMPOSITE)."""
    return _NON_ALNUM.sub("", text.lower())


def read_lines(path: Path) -> list[str]:
    """Lines split on ``\\n`` only: ``splitlines`` also splits on U+2028, VT, FF, …, which
    would shift every later line of a line-aligned file. A final newline is optional."""
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


@lru_cache(maxsize=4)
def _flickr8k_tokens(path: str) -> dict[str, list[str]]:
    caps: dict[str, dict[int, str]] = {}
    for i, line in enumerate(read_lines(Path(path))):
        try:
            key, cap = line.split("\t", 1)
            name, num = key.rsplit("#", 1)
            caps.setdefault(name, {})[int(num)] = cap
        except ValueError:
            raise InputError(f"{path}: line {i + 1} is not '<image>#<n>\\t<caption>': {line[:60]!r}") from None
    out = {}
    for name, d in caps.items():
        if sorted(d) != list(range(len(d))):
            raise InputError(f"{path}: image {name} has caption numbers {sorted(d)}, expected 0..{len(d) - 1}")
        out[name] = [d[k] for k in range(len(d))]
    return out


def flickr8k_captions(root: Path, benchmark: str) -> dict[str, list[str]]:
    """Image file name (``…jpg``) → its captions #0..#4 as in the token file (not normalised)."""
    return _flickr8k_tokens(str(need(root, FLICKR8K_TOKENS, benchmark)))


def image_list(root: Path, dataset: str, benchmark: str) -> list[str]:
    fname = {"flickr8k": "imgs_flickr8k.txt", "flickr30k": "imgs_flickr30k.txt", "coco": "imgs_mscoco.txt"}[dataset]
    return read_lines(need(root, f"{TANTI_RESULTS}/{fname}", benchmark))


def karpathy_references(root: Path, dataset: str, benchmark: str) -> dict[str, list[str]]:
    """Image file name → 5 references, joined by line position through Tanti's image list
    (the reference files carry no ids, so the line count is asserted first)."""
    ref_rel, _ = KARPATHY_REFS[dataset]
    images = image_list(root, dataset, benchmark)
    lines = read_lines(need(root, ref_rel, benchmark))
    if len(lines) != 5 * len(images):
        raise InputError(
            f"{benchmark}: {ref_rel} has {len(lines)} lines for {len(images)} images; expected "
            f"{5 * len(images)} (5 per image). A dropped line would misalign every later image."
        )
    return {img: lines[5 * i: 5 * i + 5] for i, img in enumerate(images)}


def references_for(root: Path, dataset: str, benchmark: str) -> dict[str, list[str]]:
    if dataset == "flickr8k":
        return flickr8k_captions(root, benchmark)
    return karpathy_references(root, dataset, benchmark)


def check_options(benchmark: str, name: str, value, allowed) -> None:
    if value not in allowed:
        raise InputError(f"{benchmark}: option {name}={value!r} not one of {', '.join(map(repr, allowed))}")


def reject_unknown(benchmark: str, options: dict) -> None:
    if options:
        raise InputError(f"{benchmark}: unknown option(s) {', '.join(sorted(options))}")


TIES = ("random", "keep", "drop")


def majority_labels(margin, ties: str, seed: int):
    """Labels from vote margins (votes for a minus votes for b): 0 = a preferred, 1 = b.

    Ties follow ``ties``: ``"random"`` draws with ``numpy.random.default_rng(seed)`` — one
    uniform per tied pair, in row order — ``"keep"`` gives 0.5, ``"drop"`` gives NaN for
    the caller to remove. Returns (labels, indices of tied pairs).
    """
    import numpy as np

    margin = np.asarray(margin, dtype=float)
    labels = np.where(margin > 0, 0.0, 1.0)
    tied = np.flatnonzero(margin == 0)
    if tied.size:
        if ties == "random":
            labels[tied] = (np.random.default_rng(seed).random(tied.size) >= 0.5).astype(float)
        elif ties == "keep":
            labels[tied] = 0.5
        else:
            labels[tied] = np.nan
    return labels, tied


def load_mat(path: Path) -> dict:
    """``scipy.io.loadmat`` (structs as objects), cached per file version: parsing the
    19,200 ABSTRACT-50S triplets takes ~1 s and option variants re-read the same file.
    Callers must treat the result as read-only."""
    st = path.stat()
    try:
        return _load_mat(str(path), st.st_mtime_ns, st.st_size)
    except Exception as e:  # noqa: BLE001 - scipy raises OSError, ValueError, zlib/struct errors on bad files
        raise InputError(f"{path}: not a readable MATLAB file ({type(e).__name__}: {e}); truncated or damaged? "
                         "`capeval data verify` checks it against the packaged checksums") from None


@lru_cache(maxsize=4)
def _load_mat(path: str, _mtime: int, _size: int) -> dict:
    from scipy.io import loadmat

    return loadmat(path, squeeze_me=True, struct_as_record=False)
