"""The run folder that makes a streamed run resumable, and belongs to one run.

``run.json`` holds the run's fingerprint (run-folder format, version, metrics, tokenizer,
options, chunk size, output format, the resources the families read). A folder of another
run-folder format is refused with a message, never mixed in.

Ownership. The folder is created 0700; an existing one must be a directory (not a symlink)
owned by the current user and writable by no one else, or the run is refused by name. An
exclusive lock (``fcntl.flock`` on ``run.lock``) is held for the whole run: a second run
naming the same folder is refused while the first lives, and the lock goes with its process.

Files. Each scored chunk is one file ``chunk-NNNNNNN.bin``: a header, an HMAC-SHA256 of the
kind, the index and the payload keyed with the run's secret (``run.key``, 32 random bytes,
0600, made with the folder), and the payload, in :mod:`capeval.stream.codec`'s format (JSON
and ``.npy`` arrays: nothing is unpickled, an object is rebuilt only when its class is allowed
for the file's kind). A file is written under a temporary name and renamed, so a reader never
sees it half-written; on reading, a wrong HMAC (a file a crash left short, one another run
wrote, one edited by hand) or a key that does not match the current rows, settings and df means
"not done" and the chunk is scored again. A killed run therefore resumes from its complete
chunks, and the output, assembled only at the end, is the same bytes. The df pass's prepared
chunks (``prep-NNNNNNN.bin``), the spilled rows of a one-shot iterator (``input-*``), the other
families' pre-pass states (``prepass-0000000.bin``) and their checkpoint
(``prepassck-0000000.bin``) have the same format. CIDEr's df of the input is saved under its
content digest (``df-<sha256>-keys.npy``, ``df-<sha256>-counts.npy``) and named by ``df.json``:
a file workers have memory-mapped is never rewritten in place.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
from pathlib import Path

from ..errors import InputError
from . import codec
from .folder import check_owner, lock, write_private

_MAGIC = b"CAPEVAL-RUN/3\n"
_MANIFEST = "run.json"
_KEY = "run.key"
#: Run-folder format, written into run.json. 3: no pickles, HMAC keyed by the run's secret, df
#: files named by digest; 2: pickled chunks; 1 (no field): BLAKE2b df keys.
RUN_FORMAT = 3
#: A run folder's file is read whole; this only refuses a device or something absurd.
_MAX_FILE = 1 << 40
_DF_NAME = re.compile(r"df-[0-9a-f]{64}-(keys|counts)\.npy")

#: Classes a file of each kind may hold (:func:`allow`); Aggregates are allowed in chunks.
_ALLOWED: dict[str, set[type]] = {}


def allow(kind: str, *classes: type) -> None:
    """Let files of ``kind`` hold objects of ``classes`` (a family's pre-pass state type, the
    chunk result): nothing else is rebuilt from a run folder."""
    _ALLOWED.setdefault(kind, set()).update(classes)


def allowed_names(kind: str) -> tuple[str, ...]:
    """``module:qualname`` of the classes :func:`allow` let ``kind`` hold (for a worker process)."""
    return tuple(sorted(codec.class_name(c) for c in _ALLOWED.get(kind, ())))


def allowed(kind: str, extra: frozenset[type] = frozenset()) -> codec.Allowed:
    """The classes files of ``kind`` may hold: those :func:`allow` let in, ``extra``, and a
    chunk's Aggregates or a pre-pass's document frequencies."""
    bases: tuple[type, ...] = ()
    if kind == "chunk":
        from ..metrics.statistics import Aggregate

        bases = (Aggregate,)
    elif kind in ("prepass", "prepassck"):
        from ..metrics.cider import DocumentFrequency

        bases = (DocumentFrequency,)
    return codec.Allowed(frozenset(_ALLOWED.get(kind, ())) | extra, bases)


def _atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # e.g. a full disk: leave no partial file behind
        raise


def _check_format(folder: Path, manifest: str) -> None:
    try:  # (resource mtimes in nanoseconds exceed the JSON door's 2**53 integers)
        found = json.loads(manifest).get("format", 1)
    except (ValueError, AttributeError, RecursionError):
        found = None
    if found != RUN_FORMAT:
        what = f"run-folder format {str(found)[:40]}" if found is not None else "an unreadable run.json"
        raise InputError(
            f"{folder / _MANIFEST}: this run folder has {what}, and this capeval reads and writes format {RUN_FORMAT} "
            "(its files differ), so it can be neither resumed nor reused. Delete the folder, or "
            "choose another run_dir (CLI: another --output) to start a new run.")


class RunStore:
    def __init__(self, folder: Path, fingerprint: dict, temporary: bool = False):
        self.folder = Path(folder)
        self.temporary = temporary
        check_owner(self.folder)
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        check_owner(self.folder)  # again: what exists now is what the run uses
        self._lock_fd = lock(self.folder)
        try:
            self._open(fingerprint)
        except BaseException:
            self.close()
            raise

    def _open(self, fingerprint: dict) -> None:
        manifest = self.folder / _MANIFEST
        old = self._read_text(manifest)
        if old is not None:
            _check_format(self.folder, old)
        self.fingerprint = json.dumps({**fingerprint, "format": RUN_FORMAT}, sort_keys=True, default=repr)
        secret = self._read_text(self.folder / _KEY)
        fresh = old != self.fingerprint or secret is None or not re.fullmatch(r"[0-9a-f]{64}", secret)
        if fresh:
            if old is not None or secret is not None:  # another run's files: not ours to reuse
                self._clear()
            secret = secrets.token_hex(32)
            write_private(self.folder / _KEY, secret.encode())
            _atomic_write(manifest, self.fingerprint.encode())
        assert secret is not None
        self.secret = bytes.fromhex(secret)

    def _read_text(self, p: Path) -> str | None:
        from ..guards import read_regular

        if not os.path.lexists(p):
            return None
        try:
            return read_regular(p, "run-folder file", 1 << 20).decode("utf-8")
        except (InputError, UnicodeDecodeError):
            return ""

    def close(self) -> None:
        """Release the folder's lock (the process's end releases it too)."""
        fd, self._lock_fd = getattr(self, "_lock_fd", None), None
        if fd is not None:
            os.close(fd)

    def _clear(self) -> None:
        for p in self.folder.iterdir():
            if p.name.startswith(("chunk-", "df_", "df-", "df.json", "dfck", "input-", "prep-", ".chunk-", ".input-",
                                  ".prep-", ".df", "prepass", ".prepass", _KEY)):
                p.unlink()

    def chunk_key(self, chunk_digest: str, df_id: str) -> str:
        return hashlib.sha256(f"{self.fingerprint}|{chunk_digest}|{df_id}".encode()).hexdigest()

    def _chunk_path(self, index: int, kind: str = "chunk") -> Path:
        return self.folder / f"{kind}-{index:07d}.bin"

    def save(self, index: int, key: str, obj, kind: str = "chunk") -> None:
        """Save ``obj`` (raises :class:`~capeval.stream.codec.Unstorable` for a value the
        format cannot hold or a class not allowed for ``kind``)."""
        payload = codec.encode((key, obj), allowed(kind))
        # No fsync: a file a crash left short or garbled fails its HMAC and is redone.
        path = self._chunk_path(index, kind)
        _atomic_write(path, _MAGIC + _mac(self.secret, path.name, payload) + b"\n" + payload, durable=False)

    def load(self, index: int, key: str, kind: str = "chunk"):
        """The saved object, or None when absent, damaged or saved for other rows/settings."""
        return load_saved(self._chunk_path(index, kind), key, kind, self.secret)

    def prepass_path(self, source_id: str) -> tuple[str, str]:
        """Where the merged pre-pass states of this input are saved, and their key: what a
        worker process needs to read them once (:func:`load_saved`)."""
        return str(self._chunk_path(0, "prepass")), self._prepass_key(source_id)

    def has(self, index: int, key: str) -> bool:
        return self.load(index, key) is not None

    # -- df of the whole input --------------------------------------------------------------
    def _read_json(self, name: str) -> dict | None:
        """A small JSON record of the folder, or None when absent or damaged (redone)."""
        from ..guards import loads_json

        text = self._read_text(self.folder / name)
        if not text:
            return None
        try:
            info = loads_json(text, str(self.folder / name))
        except InputError:
            return None
        return info if isinstance(info, dict) else None

    def load_df(self, source_id: str | None):
        from .dfstore import HashedDocumentFrequency

        info = self._read_json("df.json")
        if source_id is None or info is None or info.get("source") != source_id:
            return None
        names = info.get("files")
        if not (isinstance(names, list) and len(names) == 2 and all(isinstance(n, str) and _DF_NAME.fullmatch(n)
                                                                     for n in names)):
            return None
        try:
            dfo = HashedDocumentFrequency.load_arrays(self.folder / names[0], self.folder / names[1],
                                                      int(info["n_units"]))
            return dfo if dfo.digest() == info["digest"] else None
        except Exception:  # noqa: BLE001 - a damaged df (empty, truncated, garbled) is counted again
            return None

    def save_df(self, dfo, source_id: str | None) -> str:
        """Record the df whose arrays are in the folder under their digest (DfAccumulator.result
        wrote them; workers memory-map them), so a resumed run can reuse it; returns the df
        digest. Other df files in the folder (an earlier input's) are removed."""
        digest = dfo.digest()
        names = [Path(f).name for f in dfo.files]
        for p in self.folder.glob("df-*.npy"):
            if p.name not in names:
                p.unlink()
        _atomic_write(self.folder / "df.json",
                      json.dumps({"source": source_id, "n_units": dfo.n_units, "digest": digest,
                                  "files": names}).encode())
        return digest

    def save_df_checkpoint(self, acc, chunks_done: int, source_id: str | None) -> None:
        """The df pass so far (after ``chunks_done`` chunks), for a killed run to resume from."""
        if source_id is None:
            return
        (self.folder / "dfck.json").unlink(missing_ok=True)  # invalid while the arrays change
        acc.save_checkpoint(self.folder, _atomic_write)
        info = {"source": source_id, "chunks": chunks_done, "n_units": acc.n_units,
                "digest": acc.checkpoint_digest()}
        _atomic_write(self.folder / "dfck.json", json.dumps(info).encode())

    def load_df_checkpoint(self, source_id: str | None):
        """``(accumulator, chunks_done)`` of a checkpoint of this source, or None."""
        from .dfstore import DfAccumulator

        info = self._read_json("dfck.json")
        if source_id is None or info is None or info.get("source") != source_id:
            return None
        try:
            acc = DfAccumulator.from_checkpoint(self.folder, int(info["n_units"]))
            if acc.checkpoint_digest() != info["digest"]:
                return None
            return acc, int(info["chunks"])
        except Exception:  # noqa: BLE001 - a damaged checkpoint: the pass starts over
            return None

    def drop_df_checkpoint(self) -> None:
        """Drop the first pass's checkpoints (df and pre-pass states): it is done."""
        for p in [*self.folder.glob("dfck*"), *self.folder.glob("prepassck-*")]:
            p.unlink()

    # -- the other families' pre-pass states of the whole input (Metric.prepass) ---------------
    def _prepass_key(self, source_id: str) -> str:
        return hashlib.sha256(f"{self.fingerprint}|prepass|{source_id}".encode()).hexdigest()

    def save_prepass(self, states: dict, n_rows: int, source_id: str | None) -> bool:
        """The merged pre-pass states of the whole input (family -> state) and its row count,
        for a resumed run and the worker processes to read (``prepass-0000000.bin``). False
        when they were not saved: no file input, or a state this format cannot hold (a
        plug-in's object holding objects of other classes), which workers then get by value."""
        if source_id is None:
            return False
        try:
            self.save(0, self._prepass_key(source_id), (states, n_rows), kind="prepass")
        except codec.Unstorable:
            self._chunk_path(0, "prepass").unlink(missing_ok=True)
            return False
        return True

    def load_prepass(self, source_id: str | None) -> tuple[dict, int] | None:
        """``(states, rows)`` saved for this input, or None."""
        return None if source_id is None else self.load(0, self._prepass_key(source_id), kind="prepass")

    def save_prepass_checkpoint(self, states: dict, chunks_done: int, rows_done: int, source_id: str | None) -> None:
        """The pre-pass states merged over the first ``chunks_done`` chunks, for a killed first
        pass to resume from (beside the df's checkpoint, :meth:`save_df_checkpoint`)."""
        if source_id is not None:
            try:
                self.save(0, self._prepass_key(source_id), (states, chunks_done, rows_done), kind="prepassck")
            except codec.Unstorable:
                pass  # a killed pass starts over

    def load_prepass_checkpoint(self, source_id: str | None) -> tuple[dict, int, int] | None:
        """``(states, chunks done, rows done)`` of a checkpoint of this input, or None."""
        return None if source_id is None else self.load(0, self._prepass_key(source_id), kind="prepassck")

    @staticmethod
    def prepass_digest(states: dict) -> str:
        """Identity of pre-pass states in chunk keys: a chunk scored with other states is not
        reused (the format's bytes of equal states built the same way are equal)."""
        try:
            blob = codec.encode(sorted(states.items()), codec.Allowed(bases=(object,)))
        except codec.Unstorable:
            import pickle  # only hashed, never loaded

            blob = pickle.dumps(sorted(states.items()), protocol=pickle.HIGHEST_PROTOCOL)
        return hashlib.sha256(blob).hexdigest()

    def remove(self) -> None:
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _mac(secret: bytes, name: str, payload: bytes) -> bytes:
    """Binds the payload to this run (its secret) and to the file's name (kind and index)."""
    return hmac.new(secret, name.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def load_saved(p: Path | str, key: str, kind: str, secret: bytes, extra: frozenset[type] = frozenset()):
    """The object saved at ``p`` under ``key`` (:meth:`RunStore.save`) by the run whose secret
    is ``secret``, or None when absent, damaged, written by another run or saved for other
    rows/settings. Read through the file door; the HMAC is checked before anything is parsed."""
    from ..guards import open_regular

    p = Path(p)
    if not os.path.lexists(p):
        return None
    head = len(_MAGIC) + 65
    try:
        with open_regular(p, "run-folder file", _MAX_FILE) as f:
            top = f.read(head)  # a file of another kind is dropped before the rest is read
            if not top.startswith(_MAGIC) or len(top) < head or top[-1:] != b"\n":
                return None
            payload = f.read()
    except (InputError, OSError):
        return None
    mac = top[len(_MAGIC):head - 1]
    if not hmac.compare_digest(mac, _mac(secret, p.name, payload)):
        return None
    try:
        saved = codec.decode(payload, allowed(kind, extra))
    except codec.Unstorable:
        return None
    if not (isinstance(saved, tuple) and len(saved) == 2):
        return None
    saved_key, obj = saved
    return obj if saved_key == key else None
