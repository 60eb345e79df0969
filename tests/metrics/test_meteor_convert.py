"""The conversion of METEOR's paraphrase table and word lists: every fast path (compiled,
Arrow, plain bytes) writes the same files as the general line-by-line path, which reads the
table as the jar does; what a fast path cannot take (not plain, a malformed gzip file) goes to
the general path and ends there as it always did.
"""
from __future__ import annotations

import gzip
import random
import zlib

import numpy as np
import pytest

from capeval.metrics._meteor_native import convert as C
from capeval.metrics._meteor_native import convert_arrow, convert_jar
from capeval.metrics._meteor_native import plain_table as P
from capeval.metrics._meteor_native.java import tokens


def _paratable():
    mod = C._compiled()
    if mod is None:
        pytest.skip("the compiled converter (_paratable.c) is not built here")
    return mod


def _write(path, text: bytes, members: int = 1) -> None:
    cut = [len(text) * k // members for k in range(members + 1)]
    path.write_bytes(b"".join(gzip.compress(text[a:b]) for a, b in zip(cut, cut[1:])))


def _files(d) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(d.iterdir())}


def _fast_paths():
    paths = {"plain": C._convert_paraphrase_plain}
    if convert_arrow.available():
        paths["arrow"] = lambda t, o: convert_arrow.convert_paraphrase(t, o, C._NotPlain)
    if C._compiled() is not None:
        paths["compiled"] = lambda t, o: C._convert_paraphrase_compiled(t, o, C._compiled())
    return paths


def _convert_all(tmp_path, text: bytes, members: int = 1):
    """The general path's files, and each fast path's (or the exception it raised)."""
    table = tmp_path / "t.gz"
    _write(table, text, members)
    want = tmp_path / "want"
    want.mkdir()
    C._convert_paraphrase_text(table, want)
    got = {}
    for name, fn in _fast_paths().items():
        out = tmp_path / name
        out.mkdir()
        try:
            fn(table, out)
            got[name] = _files(out)
        except C._NotPlain:
            got[name] = C._NotPlain
    return _files(want), got


def _random_table(rng: random.Random, n: int, words: list[str]) -> bytes:
    lines = []
    ref = "a"
    for _ in range(n):
        if rng.random() < 0.3:  # grouped by reference phrase, as coco's table is
            ref = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        par = " ".join(rng.choice(words) for _ in range(rng.randint(0, 5)))
        lines += [f"{rng.random():.3g}", ref, par]
    return ("\n".join(lines) + "\n").encode("utf-8")


@pytest.mark.parametrize("seed", range(6))
def test_fast_paths_write_the_general_paths_files_on_random_tables(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    words = ["a", "dog", "the", "runs", "café", "naïve", "☕", "\U0001F600", "x" * 9, "long" * 5, "0.5", "\x0b"]
    text = _random_table(rng, rng.choice([1, 50, 3000]), words)
    # small blocks: lines, entries, repeated references and UTF-8 sequences cut at block ends
    monkeypatch.setattr(C, "_BLOCK", rng.choice([7, 64, 1 << 24]))
    monkeypatch.setattr(convert_arrow, "_BLOCK", 100)
    monkeypatch.setattr(P, "_READ", rng.choice([5, 1 << 21]))
    want, got = _convert_all(tmp_path, text, members=rng.choice([1, 3]))
    for name, files in got.items():
        assert files == want, name


@pytest.mark.parametrize("tail", ["a b\nc", "a b\n\n0.2\n\nc\n", "\n\n", "x y\nx y\n0.2\nx y\nz\n"])
def test_edge_tables(tmp_path, tail):
    """No final newline, empty phrases, a phrase both reference and paraphrase."""
    want, got = _convert_all(tmp_path, ("0.5\na dog\nthe dog\n0.1\n" + tail).encode())
    for name, files in got.items():
        assert files == want, name


@pytest.mark.parametrize("phrase", ["a\tb", "a  b", " a", "a ", "a\fb", "a b\r", "a \udcff b", "\xed\xa0\x80"])
def test_not_plain_tables_go_to_the_general_path(tmp_path, phrase):
    text = f"0.5\na dog\n{phrase}\n".encode("utf-8", "surrogateescape")
    if phrase == "\xed\xa0\x80":
        text = b"0.5\na dog\n\xed\xa0\x80\n"  # an encoded surrogate: invalid UTF-8 for Python too
    want, got = _convert_all(tmp_path, text)
    for name, files in got.items():
        assert files is C._NotPlain, name
    out = tmp_path / "dispatched"
    out.mkdir()
    C._convert_paraphrase(tmp_path / "t.gz", out)
    assert _files(out) == want


def test_incomplete_last_entry_is_refused_alike(tmp_path):
    table = tmp_path / "t.gz"
    _write(table, b"0.5\na\nb\n0.1\nc\n")
    for name, fn in {"text": C._convert_paraphrase_text, **_fast_paths()}.items():
        out = tmp_path / name
        out.mkdir()
        with pytest.raises(C.ResourceNotFound, match="incomplete"):
            fn(table, out)


def _gzip_cases() -> dict[str, bytes]:
    body = b"0.5\na b\nc d\n" * 20000
    g = gzip.compress(body)
    return {
        "members": gzip.compress(body[:90000]) + gzip.compress(body[90000:]),
        "zero padding": g + b"\0" * 100,
        "padding then member": g + b"\0\0" + gzip.compress(b"0.1\ne\nf\n"),
        "garbage after": g + b"xyz",
        "truncated": g[:-20],
        "bad crc": g[:-8] + bytes([g[-8] ^ 1]) + g[-7:],
        "bad length": g[:-1] + bytes([g[-1] ^ 1]),
        "empty file": b"",
        "not gzip": b"0.5\na\nb\n",
    }


@pytest.mark.parametrize("inflater", ["zlib", "isal"])
@pytest.mark.parametrize("case", sorted(_gzip_cases()))
def test_gzip_files_convert_or_fail_as_the_gzip_module_reads_them(tmp_path, monkeypatch, inflater, case):
    if inflater == "isal":
        pytest.importorskip("isal")
    else:
        monkeypatch.setattr(P, "_zlib", lambda: (zlib, zlib.error))
    table = tmp_path / "t.gz"
    table.write_bytes(_gzip_cases()[case])
    try:
        with gzip.open(table, "rb") as f:
            expected = f.read()
    except Exception as e:  # noqa: BLE001 - the module's own verdict is the reference
        expected = type(e)
    try:
        inflated = b"".join(P._inflate(table))
    except P._Malformed:
        inflated = P._Malformed
    assert inflated == (expected if isinstance(expected, bytes) else P._Malformed)
    want, got = tmp_path / "want", tmp_path / "got"
    want.mkdir()
    got.mkdir()
    outcome = []
    for fn, out in ((C._convert_paraphrase_text, want), (C._convert_paraphrase, got)):
        try:
            fn(table, out)
            outcome.append(_files(out))
        except Exception as e:  # noqa: BLE001
            outcome.append(type(e))
    assert outcome[0] == outcome[1]


def test_valid_utf8_is_pythons_strict_decoder():
    valid_utf8 = _paratable().valid_utf8

    def python(b: bytes) -> bool:
        try:
            b.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    samples = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(0xC0, 0x100) for b in range(256)]
    samples += [bytes([a, b, c]) for a in range(0xE0, 0xF0) for b in range(0x70, 0xD0)
                for c in (0x00, 0x80, 0xBF, 0xC0)]
    rng = random.Random(3)
    samples += [bytes([rng.choice([0xF0, 0xF4, 0xF5, 0xF8]), *(rng.randrange(256) for _ in range(3))])
                for _ in range(20000)]
    samples += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    samples += ["ascii then é, ☕ and \U0001F600".encode() * 3, b"a" * 15 + b"\xff", b"a" * 16 + "é".encode()]
    for s in samples:
        assert valid_utf8(s) == python(s), s
        assert valid_utf8(b"12345678" + s) == python(s), s  # after the 8-byte fast path


@pytest.mark.parametrize("seed", range(5))
def test_compiled_index_equals_numpy(seed):
    index = _paratable().index
    rng = np.random.default_rng(seed)
    n_phrases = int(rng.integers(0, 300))
    lengths = rng.integers(0, 5, n_phrases) * (rng.random(n_phrases) > 0.1)
    offsets = np.zeros(n_phrases + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens_ = rng.integers(0, int(rng.integers(1, 40)), int(offsets[-1])).astype(np.int32)
    entry_ref = rng.integers(0, max(n_phrases, 1), int(rng.integers(0, 500)) if n_phrases else 0).astype(np.int32)
    want = C._index_numpy(offsets, tokens_, entry_ref)
    got = [np.frombuffer(b, dtype=t) for b, t in zip(index(offsets, tokens_, entry_ref), C._INDEX_TYPES)]
    for name, w, g in zip(C._INDEX_FILES, want, got):
        assert w.dtype == g.dtype and np.array_equal(w, g), name


def test_compiled_index_refuses_inconsistent_arrays():
    index = _paratable().index
    with pytest.raises(ValueError, match="inconsistent"):
        index(np.array([0, 3], dtype=np.int64), np.array([1], dtype=np.int32), np.zeros(0, dtype=np.int32))
    with pytest.raises(ValueError, match="inconsistent"):
        index(np.array([0, 1], dtype=np.int64), np.array([1], dtype=np.int32), np.array([1], dtype=np.int32))


def test_builder_result_is_taken_once():
    b = _paratable().Builder()
    assert b.feed(b"0.5\na\nb\n")
    assert b.result()[0] == 3
    with pytest.raises(ValueError, match="taken"):
        b.result()
    with pytest.raises(ValueError, match="taken"):
        b.feed(b"0.1\nc\nd\n")
    b = _paratable().Builder()
    assert not b.feed(b"0.5\na\tb\nc\n")
    assert not b.feed(b"0.5\na\nb\n")  # stays refused
    with pytest.raises(ValueError, match="not plain"):
        b.result()


def test_pure_python_switch_turns_the_compiled_converter_off(monkeypatch):
    monkeypatch.setenv("CAPEVAL_PURE_PYTHON", "1")
    assert C._compiled() is None


@pytest.mark.parametrize("seed", range(4))
def test_synset_ids_split_as_the_tokenizer(seed):
    rng = random.Random(seed)
    for _ in range(2000):
        # "\u0663": a digit int() reads but the ASCII fast path must not take
        lines = ["".join(rng.choice("0123 \t\u0663") for _ in range(rng.randint(0, 6)))
                 for _ in range(rng.randint(0, 4))]
        if seed % 2:
            lines = [" ".join(line.split()) for line in lines]  # coco's shape: the fast path
        assert convert_jar.synset_ids(lines) == ([int(t) for line in lines for t in tokens(line)],
                                        [len(tokens(line)) for line in lines])


@pytest.mark.slow
@pytest.mark.oracle
def test_compiled_conversion_of_cocos_table_equals_arrows(tmp_path, monkeypatch):
    """On the real table (5.3 million entries): the compiled path's files are the Arrow
    path's, byte for byte."""
    pytest.importorskip("pycocoevalcap", reason="the paraphrase table comes with pycocoevalcap")
    if not convert_arrow.available():
        pytest.skip("pyarrow is not installed")
    paratable = _paratable()
    from capeval.metrics._meteor_native.resources import locate

    _, para = locate()
    got, want = tmp_path / "compiled", tmp_path / "arrow"
    got.mkdir()
    want.mkdir()
    C._index_paraphrases(got, C._convert_paraphrase_compiled(para, got, paratable))
    monkeypatch.setattr(C, "_compiled", lambda: None)  # numpy's indexes on this side
    convert_arrow.convert_paraphrase(para, want, C._NotPlain)
    C._index_paraphrases(want)
    assert _files(got) == _files(want)
