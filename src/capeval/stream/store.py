"""The run folder that makes a streamed run resumable.

``run.json`` holds the run's fingerprint (run-folder format, version, metrics, tokenizer,
options, chunk size, output format). A folder of another run-folder format (before format 2,
the n-gram keys of its df were BLAKE2b digests) is refused with a message, never mixed in. Each scored chunk is one file ``chunk-NNNNNNN.bin``: a header, the SHA-256 of
the payload, and the payload (the chunk's key and result). A chunk file is written under a
temporary name and renamed, so a reader never sees it half-written; on reading, a wrong
checksum (a file a crash left short or garbled: chunk files are not fsynced) or a key that
does not match the current rows, settings and df means "not done" and the chunk is scored
again. A killed run therefore resumes from its complete chunks, and the output, assembled
only at the end, is the same bytes. The df pass's prepared chunks (``prep-NNNNNNN.bin``, same
format) are a cache: a missing or damaged one is read from the input again. The other
families' pre-pass states of the whole input (``prepass-0000000.bin``) and their checkpoint
(``prepassck-0000000.bin``) have the same format too, read through the pickle door.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from pathlib import Path

_MAGIC = b"CAPEVAL-CHUNK/1\n"
#: Kinds of file holding a family's pre-pass state: a plug-in's object, read through the
#: pickle door.
_DOORED = ("prepass", "prepassck")
_MANIFEST = "run.json"
#: Run-folder format, written into run.json. 2: df keys are key128 (``_speedups.c``), saved
#: column-major; 1 (no field): BLAKE2b keys, rows.
RUN_FORMAT = 2


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
    from ..errors import InputError

    try:
        found = json.loads(manifest).get("format", 1)
    except (ValueError, AttributeError):
        found = None
    if found != RUN_FORMAT:
        what = f"run-folder format {found}" if found is not None else "an unreadable run.json"
        raise InputError(
            f"{folder}: this run folder has {what}, and this capeval reads and writes format {RUN_FORMAT} "
            "(its n-gram keys differ), so it can be neither resumed nor reused. Delete the folder, or "
            "choose another run_dir (CLI: another --output) to start a new run.")


class RunStore:
    def __init__(self, folder: Path, fingerprint: dict, temporary: bool = False):
        self.folder = Path(folder)
        self.temporary = temporary
        manifest = self.folder / _MANIFEST
        old = manifest.read_text() if manifest.exists() else None
        if old is not None:
            _check_format(self.folder, old)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fingerprint = json.dumps({**fingerprint, "format": RUN_FORMAT}, sort_keys=True, default=repr)
        if old != self.fingerprint:
            if old is not None:  # another run's chunks: not ours to reuse
                self._clear()
            _atomic_write(manifest, self.fingerprint.encode())

    def _clear(self) -> None:
        for p in self.folder.iterdir():
            if p.name.startswith(("chunk-", "df_", "df.json", "dfck", "input-", "prep-", ".chunk-", ".input-",
                                  ".prep-", ".df", "prepass", ".prepass")):
                p.unlink()

    def chunk_key(self, chunk_digest: str, df_id: str) -> str:
        return hashlib.sha256(f"{self.fingerprint}|{chunk_digest}|{df_id}".encode()).hexdigest()

    def _chunk_path(self, index: int, kind: str = "chunk") -> Path:
        return self.folder / f"{kind}-{index:07d}.bin"

    def save(self, index: int, key: str, obj, kind: str = "chunk") -> None:
        payload = pickle.dumps((key, obj), protocol=pickle.HIGHEST_PROTOCOL)
        digest = hashlib.sha256(payload).hexdigest().encode()
        # No fsync: a file a crash left short or garbled fails its checksum and is redone.
        _atomic_write(self._chunk_path(index, kind), _MAGIC + digest + b"\n" + payload, durable=False)

    def load(self, index: int, key: str, kind: str = "chunk"):
        """The saved object, or None when absent, damaged or saved for other rows/settings."""
        return load_saved(self._chunk_path(index, kind), key, kind)

    def prepass_path(self, source_id: str) -> tuple[str, str]:
        """Where the merged pre-pass states of this input are saved, and their key: what a
        worker process needs to read them once (:func:`load_saved`)."""
        return str(self._chunk_path(0, "prepass")), self._prepass_key(source_id)

    def has(self, index: int, key: str) -> bool:
        return self.load(index, key) is not None

    # -- df of the whole input --------------------------------------------------------------
    def load_df(self, source_id: str | None):
        from .dfstore import HashedDocumentFrequency

        meta = self.folder / "df.json"
        if source_id is None or not meta.exists():
            return None
        info = json.loads(meta.read_text())
        if info.get("source") != source_id:
            return None
        try:
            dfo = HashedDocumentFrequency.load_arrays(self.folder, info["n_units"])
        except (OSError, ValueError):
            return None
        return dfo if dfo.digest() == info["digest"] else None

    def save_df(self, dfo, source_id: str | None) -> str:
        """Record the df whose arrays are in the folder (DfAccumulator.result wrote them; workers
        memory-map them), so a resumed run can reuse it; returns the df digest."""
        digest = dfo.digest()
        _atomic_write(self.folder / "df.json",
                      json.dumps({"source": source_id, "n_units": dfo.n_units, "digest": digest}).encode())
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

        meta = self.folder / "dfck.json"
        if source_id is None or not meta.exists():
            return None
        info = json.loads(meta.read_text())
        if info.get("source") != source_id:
            return None
        try:
            acc = DfAccumulator.from_checkpoint(self.folder, info["n_units"])
        except (OSError, ValueError):
            return None
        if acc.checkpoint_digest() != info["digest"]:
            return None
        return acc, int(info["chunks"])

    def drop_df_checkpoint(self) -> None:
        """Drop the first pass's checkpoints (df and pre-pass states): it is done."""
        for p in [*self.folder.glob("dfck*"), *self.folder.glob("prepassck-*")]:
            p.unlink()

    # -- the other families' pre-pass states of the whole input (Metric.prepass) ---------------
    def _prepass_key(self, source_id: str) -> str:
        return hashlib.sha256(f"{self.fingerprint}|prepass|{source_id}".encode()).hexdigest()

    def save_prepass(self, states: dict, n_rows: int, source_id: str | None) -> None:
        """The merged pre-pass states of the whole input (family -> state) and its row count,
        for a resumed run to reuse (checksummed pickle, ``prepass-0000000.bin``)."""
        if source_id is not None:
            self.save(0, self._prepass_key(source_id), (states, n_rows), kind="prepass")

    def load_prepass(self, source_id: str | None) -> tuple[dict, int] | None:
        """``(states, rows)`` saved for this input, or None."""
        return None if source_id is None else self.load(0, self._prepass_key(source_id), kind="prepass")

    def save_prepass_checkpoint(self, states: dict, chunks_done: int, rows_done: int, source_id: str | None) -> None:
        """The pre-pass states merged over the first ``chunks_done`` chunks, for a killed first
        pass to resume from (beside the df's checkpoint, :meth:`save_df_checkpoint`)."""
        if source_id is not None:
            self.save(0, self._prepass_key(source_id), (states, chunks_done, rows_done), kind="prepassck")

    def load_prepass_checkpoint(self, source_id: str | None) -> tuple[dict, int, int] | None:
        """``(states, chunks done, rows done)`` of a checkpoint of this input, or None."""
        return None if source_id is None else self.load(0, self._prepass_key(source_id), kind="prepassck")

    @staticmethod
    def prepass_digest(states: dict) -> str:
        """Identity of pre-pass states in chunk keys: a chunk scored with other states is not
        reused (pickle's bytes of equal states built the same way are equal)."""
        return hashlib.sha256(pickle.dumps(sorted(states.items()), protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def load_saved(p: Path | str, key: str, kind: str = "chunk"):
    """The object saved at ``p`` under ``key`` (:meth:`RunStore.save`), or None when absent,
    damaged or saved for other rows/settings."""
    p = Path(p)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return None
    head = len(_MAGIC) + 65
    if not data.startswith(_MAGIC) or len(data) < head:
        return None
    digest, payload = data[len(_MAGIC):head - 1], data[head:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    if kind in _DOORED:
        from ..doors import prescan_pickle
        from ..errors import InputError

        try:  # a plug-in's pre-pass state: bounded before it is unpickled (capeval.doors)
            prescan_pickle(payload, str(p))
        except InputError:
            return None
    saved_key, obj = pickle.loads(payload)
    return obj if saved_key == key else None
