"""Judge requests and replies, and the OpenAI-compatible HTTP backend.

The HTTP backend speaks ``POST {base_url}/chat/completions`` with the standard library only
(``urllib``), so it needs no client package. It sends temperature 0 and a seed, bounds the
requests in flight (``concurrency``) and their rate (``rate`` per second), and retries 429,
5xx, timeouts and broken connections with exponential backoff (``Retry-After`` honoured up
to a cap). A reply it cannot use after its retries is a :class:`Reply` with ``failure`` set:
failures are values handed back to the runner, never scores and never tracebacks.

The API key is read from the environment variable the user names (``api_key_env``) when a
request is sent; it is never part of a signature, a log line, an error message or a cache key.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..guards import loads_json
from ..errors import CapevalError, InputError

#: Largest response body read from an endpoint (a judge's answer is a few hundred tokens).
MAX_RESPONSE_BYTES = 16 << 20
#: Longest wait a ``Retry-After`` header may impose between two attempts, in seconds.
MAX_RETRY_AFTER = 60.0
#: FLEUR's answer form, sent as vLLM's ``guided_regex`` in JSON mode.
FLEUR_REGEX = r"(0\.[0-9][0-9]?|1\.0)"
#: The pairwise judge's answer form, sent as vLLM's ``guided_json`` in JSON mode.
PAIR_SCHEMA = {"type": "object", "properties": {"better": {"type": "string", "enum": ["A", "B"]},
                                                "reason": {"type": "string"}},
               "required": ["better", "reason"]}
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Decoding:
    """What decides an answer besides the prompt: part of every cache key and signature."""

    max_tokens: int = 256
    seed: int = 0
    temperature: float = 0.0
    top_logprobs: int = 0  # >0: ask for each answer token's log probability and this many alternatives

    def key(self) -> dict:
        return {"max_tokens": self.max_tokens, "seed": self.seed, "t": self.temperature,
                "top_logprobs": self.top_logprobs}


@dataclass(frozen=True)
class Request:
    """One question to the judge: a prompt (the user message), an optional image and the
    answer's form (``"clair_json"``, ``"pair_json"``, ``"fleur_number"`` or ``"free"``), which the local backend
    enforces while decoding and an endpoint may be asked for (``json_mode``)."""

    prompt: str
    shape: str = "free"
    image: bytes | None = None
    image_digest: str | None = None
    image_mime: str = "image/jpeg"


@dataclass
class TokenLogprob:
    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> list:
        return [self.token, self.logprob, self.top]

    @classmethod
    def from_json(cls, v: list) -> TokenLogprob:
        return cls(str(v[0]), float(v[1]), {str(k): float(x) for k, x in dict(v[2]).items()})


@dataclass
class Reply:
    """An answer (``text``, with per-token log probabilities when asked) or a ``failure``."""

    text: str | None = None
    logprobs: list[TokenLogprob] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failure: str | None = None
    attempts: int = 1


class JudgeUnavailable(CapevalError):
    """The judge cannot be used at all (no such model directory, an endpoint without logprobs)."""


class HttpBackend:
    """An endpoint speaking OpenAI's chat-completions protocol."""

    kind = "http"

    def __init__(self, url: str, model: str, *, api_key_env: str | None = None, timeout: float = 60.0,
                 concurrency: int = 4, retries: int = 4, backoff: float = 0.5, rate: float | None = None,
                 json_mode: bool = True):
        if not url or not url.startswith(("http://", "https://")):
            raise InputError(f"judge url {url!r}: expected http://HOST:PORT/v1 or https://...")
        if not model:
            raise InputError("judge: an endpoint needs a model name (--judge-model)")
        if concurrency < 1 or retries < 0 or timeout <= 0 or (rate is not None and rate <= 0):
            raise InputError("judge: concurrency >= 1, retries >= 0, timeout > 0 and rate > 0 are required")
        self.url = url.rstrip("/") + "/chat/completions"
        self.model, self.api_key_env = model, api_key_env
        self.timeout, self.concurrency, self.retries, self.backoff = float(timeout), int(concurrency), int(retries), backoff
        self.rate, self.json_mode = rate, json_mode
        self.requests_sent = 0
        self._lock = threading.Lock()
        self._next_slot = 0.0

    def identity(self) -> dict:
        # the model as the endpoint names it; never the key, and not the host (the same model
        # served elsewhere answers the same)
        return {"backend": self.kind, "model": self.model}

    def payload(self, req: Request, dec: Decoding) -> dict:
        content: str | list = req.prompt
        if req.image is not None:
            import base64

            url = f"data:{req.image_mime};base64,{base64.b64encode(req.image).decode('ascii')}"
            content = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": req.prompt}]
        body: dict = {"model": self.model, "messages": [{"role": "user", "content": content}],
                      "temperature": dec.temperature, "seed": dec.seed, "max_tokens": dec.max_tokens, "n": 1}
        if dec.top_logprobs:
            body.update(logprobs=True, top_logprobs=dec.top_logprobs)
        if self.json_mode and req.shape in ("clair_json", "pair_json"):
            body["response_format"] = {"type": "json_object"}
        if self.json_mode and req.shape == "pair_json":
            body["guided_json"] = PAIR_SCHEMA  # vLLM's guided decoding; other servers ignore it
        elif self.json_mode and req.shape == "fleur_number":
            body["guided_regex"] = FLEUR_REGEX  # vLLM's guided decoding; other servers ignore it
        return body

    def complete(self, requests: list[Request], dec: Decoding,
                 on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        """Every request's reply, in order; ``on_reply(i, reply)`` as each arrives (the runner
        caches it then, so a run killed mid-batch loses no answer it paid for)."""
        def one(i: int) -> Reply:
            reply = self._one(requests[i], dec)
            if on_reply is not None:
                on_reply(i, reply)
            return reply

        if len(requests) <= 1 or self.concurrency == 1:
            return [one(i) for i in range(len(requests))]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(one, range(len(requests))))

    def _wait_for_rate(self) -> None:
        if self.rate is None:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot)
            self._next_slot = slot + 1.0 / self.rate
        if slot > now:
            time.sleep(slot - now)

    def _one(self, req: Request, dec: Decoding) -> Reply:
        data = json.dumps(self.payload(req, dec)).encode("utf-8")
        why = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(MAX_RETRY_AFTER, self.backoff * 2 ** (attempt - 1)))
            self._wait_for_rate()
            reply, why, retry_after = self._post(data, dec)
            if reply is not None:
                reply.attempts = attempt + 1
                return reply
            if retry_after is None:
                return Reply(failure=why, attempts=attempt + 1)
            if retry_after > 0:
                time.sleep(min(MAX_RETRY_AFTER, retry_after))
        return Reply(failure=f"{why} (after {self.retries + 1} attempts)", attempts=self.retries + 1)

    def _post(self, data: bytes, dec: Decoding) -> tuple[Reply | None, str, float | None]:
        """(reply, "", None), or (None, why, None) for a failure not worth retrying, or (None,
        why, seconds to wait first) for one that is."""
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        with self._lock:
            self.requests_sent += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                length = resp.headers.get("Content-Length")
                if length and length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
                    return None, f"response over {MAX_RESPONSE_BYTES >> 20} MiB", None
                body = _read_body(resp, int(length) if length and length.isdigit() else None,
                                  time.monotonic() + self.timeout)
        except urllib.error.HTTPError as e:
            status = e.code
            wait = _retry_after(e.headers.get("Retry-After") if e.headers else None)
            e.close()
            if status in RETRY_STATUS:
                return None, f"HTTP {status}", wait
            return None, f"HTTP {status} (not retried: the request itself was refused)", None
        except (TimeoutError, socket.timeout):
            return None, f"no answer within {self.timeout:g} s", 0.0
        except http.client.IncompleteRead:
            return None, "connection closed mid-response", 0.0
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            return None, f"connection failed ({type(reason).__name__})", 0.0
        if len(body) > MAX_RESPONSE_BYTES:
            return None, f"response over {MAX_RESPONSE_BYTES >> 20} MiB", None
        try:
            return parse_completion(body, dec), "", None
        except InputError as e:
            return None, str(e), 0.0


def _read_body(resp, length: int | None, deadline: float) -> bytes:
    """The body, in pieces, within ``deadline`` (a body trickled a byte at a time is a timeout,
    not a wait without end) and at most one byte past :data:`MAX_RESPONSE_BYTES`; a body shorter
    than its ``Content-Length`` is a connection closed mid-response."""
    parts, size = [], 0
    while size <= MAX_RESPONSE_BYTES and (length is None or size < length):
        if time.monotonic() > deadline:
            raise TimeoutError
        piece = resp.read1(min(1 << 16, MAX_RESPONSE_BYTES + 1 - size, (length or 1 << 62) - size))
        if not piece:
            break
        parts.append(piece)
        size += len(piece)
    if length is not None and size < length:
        raise http.client.IncompleteRead(b"".join(parts), length - size)
    return b"".join(parts)


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


def parse_completion(body: bytes, dec: Decoding) -> Reply:
    """A chat-completions response body as a :class:`Reply`; an :class:`InputError` saying what is
    wrong with a body that is not one (the runner retries it)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("response is not UTF-8") from None
    obj = loads_json(text, "judge response")
    try:
        choice = obj["choices"][0]
        content = choice["message"]["content"]
        usage = obj.get("usage") or {}
        reply = Reply(text=content if isinstance(content, str) else None,
                      prompt_tokens=int(usage.get("prompt_tokens") or 0),
                      completion_tokens=int(usage.get("completion_tokens") or 0))
        if dec.top_logprobs:
            lp = choice.get("logprobs") or {}
            items = lp.get("content") if isinstance(lp, dict) else None
            reply.logprobs = None if items is None else [
                TokenLogprob(str(t["token"]), float(t["logprob"]),
                             {str(a["token"]): float(a["logprob"]) for a in t.get("top_logprobs") or ()})
                for t in items]
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise InputError("response is not a chat completion (no choices[0].message.content)") from None
    if not reply.text:
        raise InputError("empty answer")
    return reply
