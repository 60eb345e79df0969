"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for the tests: its answers and
log probabilities come from a real forward pass of a tiny random transformers model (through
capeval's local backend, as a vLLM server would run its model), not from canned text.

``response_format: json_object`` and vLLM's ``guided_regex`` select the constrained answer form,
as guided decoding does on vLLM. Faults are queued per request (:attr:`JudgeServer.faults`):
``429``, ``500``, ``timeout`` (no answer before the client gives up), ``truncated`` (a body cut
in the middle of its JSON), ``empty`` (an empty answer), ``range`` (a score of 150), ``close``
(the connection closed after the headers, mid-response), ``nologprobs``, ``markup`` (Rich markup
as the score) and any other status (``400``); ``429@S`` sends ``Retry-After: S``. Hostile
bodies: ``endless`` (no length, bytes until the client hangs up), ``huge`` (a length of 10 GB
announced), ``drip`` (a byte every 0.2 s), ``deep`` (JSON nested 100,000 deep) and ``notutf8``.
:attr:`JudgeServer.block_after` holds every request after that many until :attr:`release` is
set (a run killed while it waits, deterministically).
"""
from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from capeval.judges.backend import Decoding, Request


class JudgeServer:
    def __init__(self, backend, name: str = "tiny-judge", delay: float = 3.0):
        self.backend, self.name, self.delay = backend, name, delay
        self.faults: deque = deque()  # names of faults, or bytes: a body sent as it is
        self.requests = 0
        self.pick_first = False
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.block_after: int | None = None
        self.release = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):  # noqa: N802 - http.server's name
                try:
                    server.handle(self)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout fault)
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def _send(self, h, status: int, body: bytes, length: int | None = None, headers: dict | None = None):
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)
        h.wfile.flush()

    def handle(self, h) -> None:
        n = int(h.headers.get("Content-Length", "0"))
        body = json.loads(h.rfile.read(n))
        with self._lock:
            self.requests += 1
            self.bodies.append(body)
            self.headers.append(dict(h.headers))
            fault = self.faults.popleft() if self.faults else None
            number = self.requests
        if self.block_after is not None and number > self.block_after:
            self.release.wait()
            return None
        if h.path != "/v1/chat/completions":
            return self._send(h, 404, b'{"error": "not found"}')
        if isinstance(fault, bytes):  # a body given by the test, sent as it is
            return self._send(h, 200, fault)
        if fault is not None and fault.split("@")[0] == "429":
            wait = fault.split("@")[1] if "@" in fault else "0"
            return self._send(h, 429, b'{"error": "rate limited"}', headers={"Retry-After": wait})
        if fault in ("endless", "huge", "deep", "notutf8", "drip"):
            return self._hostile(h, fault)
        if fault == "500":
            return self._send(h, 500, b'{"error": "internal"}')
        if fault == "timeout":
            time.sleep(self.delay)
            return self._send(h, 500, b"{}")
        if fault is not None and fault.isdigit():  # any other status, e.g. 400
            return self._send(h, int(fault), b'{"error": "refused"}')
        answer = self.answer(body, fault)
        data = json.dumps(answer).encode()
        if fault == "truncated":
            return self._send(h, 200, data[: len(data) // 2])
        if fault == "close":  # the headers promise the whole body; half of it arrives
            self._send(h, 200, data[: len(data) // 3], length=len(data))
            h.close_connection = True
            return None
        return self._send(h, 200, data)

    def _hostile(self, h, fault: str) -> None:
        if fault == "deep":
            return self._send(h, 200, b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        if fault == "notutf8":
            return self._send(h, 200, b'{"choices": "\xff\xfe"}')
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if fault == "huge":
            h.send_header("Content-Length", str(10 << 30))
        h.end_headers()
        if fault == "drip":  # a byte every 0.2 s, for at most 20 s: each read is quick, the body never ends
            try:
                for _ in range(100):
                    h.wfile.write(b" ")
                    h.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
            h.close_connection = True
            return None
        chunk = b" " * (1 << 20)
        try:  # at most 256 MiB, in case a client never hangs up
            for _ in range(256 if fault == "endless" else 1):
                h.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        h.close_connection = True
        return None

    def answer(self, body: dict, fault: str | None) -> dict:
        content = body["messages"][-1]["content"]
        image = digest = None
        if isinstance(content, list):
            text = "".join(p.get("text", "") for p in content if p.get("type") == "text")
            for p in content:
                if p.get("type") == "image_url":
                    image = base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
                    digest = hashlib.sha256(image).hexdigest()
        else:
            text = content
        shape = "free"
        if body.get("guided_json"):
            shape = "pair_json"
        elif (body.get("response_format") or {}).get("type") == "json_object":
            shape = "clair_json"
        elif body.get("guided_regex"):
            shape = "fleur_number"
        top = int(body.get("top_logprobs") or 0) if body.get("logprobs") else 0
        # the image reaches this text-only model as its digest in the prompt: it changes the answer
        prompt = text if digest is None else f"[image {digest[:16]}]\n{text}"
        reply = self.backend.complete([Request(prompt, shape)], Decoding(max_tokens=int(body.get("max_tokens", 64)),
                                                                          top_logprobs=top))[0]
        message = reply.text or ""
        if fault == "empty":
            message = ""
        if fault == "range":
            message = '{"score": 150, "reason": "too good"}'
        if fault == "markup":  # Rich markup in the judge's words: printed as written, never interpreted
            message = '{"score": "[bold red]boom[/]", "reason": "x"}'
        if self.pick_first and shape == "pair_json" and message:
            message = json.dumps({**json.loads(message), "better": "A"})
        choice: dict = {"index": 0, "message": {"role": "assistant", "content": message}, "finish_reason": "stop"}
        if top and fault != "nologprobs" and reply.logprobs is not None:
            choice["logprobs"] = {"content": [
                {"token": t.token, "logprob": t.logprob,
                 "top_logprobs": [{"token": k, "logprob": v} for k, v in t.top.items()]} for t in reply.logprobs]}
        return {"id": f"cmpl-{self.requests}", "object": "chat.completion", "model": self.name, "choices": [choice],
                "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                          "total_tokens": reply.prompt_tokens + reply.completion_tokens}}
