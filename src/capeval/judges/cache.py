"""The judges' response cache: one JSON file per answer, so a rerun or a resumed run sends no
request twice.

Key: SHA-256 over the backend kind, the model (an endpoint's model name; a local model's file
digests), the exact prompt, the image's SHA-256 and the decoding parameters (temperature,
seed, token limit, log probabilities asked). Never the API key, the endpoint's host or the
time. Entries live under ``<cache root>/judges/<key[:2]>/<key>/`` and are named by the digest
of their own bytes (the cache door, :func:`capeval.guards.read_cache_entry`): a damaged or
edited entry is dropped with a note and asked again. Each entry repeats its key, checked on
read. Only answers that were read successfully are stored: a failure is asked again next run.
"""
from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

from ..guards import CacheDamaged, cache_entry_name, loads_json, read_cache_entry
from ..errors import InputError
from ..outputs import atomic_write
from ..paths import cache_root
from .backend import Reply, TokenLogprob


class JudgeCacheDamaged(CacheDamaged):
    """A judge cache entry did not match its digest or key; it was dropped."""


def _note(message: str) -> None:
    warnings.warn(message, JudgeCacheDamaged, stacklevel=4)


def request_key(identity: dict, prompt: str, image_digest: str | None, decoding: dict, shape: str) -> str:
    blob = json.dumps({"id": identity, "prompt": prompt, "image": image_digest, "decoding": decoding,
                       "shape": shape}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else cache_root() / "judges"
        self.hits = 0

    def _dir(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str) -> Reply | None:
        folder = self._dir(key)
        if not folder.is_dir():
            return None
        for entry in sorted(folder.glob("*.json")):
            data = read_cache_entry(entry, _note)
            if data is None:
                continue
            try:
                obj = loads_json(data.decode("utf-8"), str(entry))
                if obj.get("key") != key:
                    raise InputError("stored under another key")
                reply = Reply(text=str(obj["text"]), prompt_tokens=int(obj["prompt_tokens"]),
                              completion_tokens=int(obj["completion_tokens"]))
                if obj.get("logprobs") is not None:
                    reply.logprobs = [TokenLogprob.from_json(t) for t in obj["logprobs"]]
            except (InputError, UnicodeDecodeError, KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
                entry.unlink(missing_ok=True)
                _note(f"judge cache entry {entry} is unreadable ({e}); dropped, the judge is asked again")
                continue
            self.hits += 1
            reply.attempts = 0  # nothing was sent
            return reply
        return None

    def put(self, key: str, reply: Reply) -> None:
        obj = {"key": key, "text": reply.text, "prompt_tokens": reply.prompt_tokens,
               "completion_tokens": reply.completion_tokens,
               "logprobs": None if reply.logprobs is None else [t.to_json() for t in reply.logprobs]}
        data = json.dumps(obj, ensure_ascii=False, sort_keys=True).encode("utf-8")
        folder = self._dir(key)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / cache_entry_name(data, ".json"), data)
