"""A judge from a local ``transformers`` directory: a causal language model, or an image-text
model (LLaVA-style) when the directory holds a processor with an image processor.

Decoding is greedy and the answer's form is enforced token by token, so even a small model
answers in form: CLAIR's ``{"score": N, "reason": "..."}`` with N an integer from 0 to 100 and a
reason without quotes or line breaks; the pairwise judge's ``{"better": "A" or "B", "reason":
"..."}``; FLEUR's ``0.D``, ``0.DD`` or ``1.0``. Each request is
decoded alone (no padding, no batch-mates) on capeval's single-threaded torch runner
(:mod:`capeval.resources.torch_runner`), so an answer depends on its own prompt only; requests
run side by side on the runner's threads. FLEUR's probabilities are the softmax over the whole
vocabulary at each digit, before the constraint chooses (as FLEUR reads ``output_scores``).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..digests import sha256_file
from ..errors import InputError
from .backend import Decoding, JudgeUnavailable, Reply, Request, TokenLogprob

CLAIR_HEAD = '{"score": '
CLAIR_MID = ', "reason": "'
CLAIR_END = '"}'
PAIR_HEAD = '{"better": "'
PAIR_MID = '", "reason": "'


def model_digest(folder: Path) -> str:
    """SHA-256 over the directory's files (names and contents): the model's identity in cache
    keys and signatures, so replacing a weight file is a new model."""
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(str(p.relative_to(folder)).encode("utf-8") + b"\x00" + sha256_file(p).encode("ascii"))
    return h.hexdigest()


class LocalBackend:
    kind = "local"
    deterministic = True  # greedy and constrained: asking again gives the same answer

    def __init__(self, path: str, *, device: str = "cpu", workers: int | None = None):
        folder = Path(path).expanduser()
        if not (folder / "config.json").is_file():
            raise JudgeUnavailable(f"judge model {path!r}: no config.json in that directory (a local "
                                   "transformers model directory is expected)")
        self.folder, self.device, self.workers = folder, device, workers
        self.digest = model_digest(folder)
        self.requests_sent = 0
        self._loaded = False

    def identity(self) -> dict:
        return {"backend": self.kind, "model": f"sha256:{self.digest[:16]}"}

    def _load(self) -> None:
        if self._loaded:
            return
        import transformers

        self.processor: Any = None
        try:
            proc = transformers.AutoProcessor.from_pretrained(self.folder, local_files_only=True)
            self.processor = proc if getattr(proc, "image_processor", None) is not None else None
        except (OSError, ValueError, KeyError, TypeError):
            pass
        self.tok: Any = (self.processor.tokenizer if self.processor is not None
                    else transformers.AutoTokenizer.from_pretrained(self.folder, local_files_only=True))
        auto: Any = transformers.AutoModelForImageTextToText if self.processor is not None \
            else transformers.AutoModelForCausalLM
        self.model: Any = auto.from_pretrained(self.folder, local_files_only=True).to(self.device).eval()
        self.vocab = int(self.model.get_output_embeddings().weight.shape[0])
        self.digits = [self._ids(str(s))[-1] for s in range(10)]  # FLEUR's rate2token
        self.piece: list[str] = [str(self.tok.decode([i])) for i in range(self.vocab)]
        self.reason_ok = [i for i, s in enumerate(self.piece)
                          if s and '"' not in s and "\\" not in s and s.isprintable()]
        self.eos = self.tok.eos_token_id
        self._loaded = True

    def _ids(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def complete(self, requests: list[Request], dec: Decoding, on_reply=None) -> list[Reply]:
        from ..resources.torch_runner import run

        self._load()
        if self.processor is None and any(r.image is not None for r in requests):
            raise JudgeUnavailable(f"judge model {self.folder}: a text-only model cannot see the images this "
                                   "metric sends (use an image-text model directory, e.g. LLaVA)")
        self.requests_sent += len(requests)
        if on_reply is None:
            return run(lambda r: self._generate(r, dec), requests, workers=self.workers)

        def one(i: int) -> Reply:  # each answer handed on as it is decoded (HttpBackend.complete)
            reply = self._generate(requests[i], dec)
            on_reply(i, reply)
            return reply

        return run(one, list(range(len(requests))), workers=self.workers)

    def _inputs(self, req: Request) -> dict:
        import torch

        text: Any = req.prompt
        if req.image is not None:
            text = "<image>\n" + text
        if getattr(self.tok, "chat_template", None):
            text = self.tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                add_generation_prompt=True)
        if req.image is not None:
            import io

            from PIL import Image

            img = Image.open(io.BytesIO(req.image)).convert("RGB")
            return dict(self.processor(text=text, images=img, return_tensors="pt"))
        return {"input_ids": torch.tensor([self._ids(text)], dtype=torch.long)}

    def _step(self, pick: int, out):
        import torch

        ids = torch.tensor([[pick]], device=self.device)
        # transformers 5 names the key/value cache ``cache``; 4.x ``past_key_values``
        if "cache" in out:
            return self.model(input_ids=ids, cache=out["cache"], use_cache=True)
        return self.model(input_ids=ids, past_key_values=out["past_key_values"], use_cache=True)

    def _generate(self, req: Request, dec: Decoding) -> Reply:
        import torch

        inputs = {k: v.to(self.device) for k, v in self._inputs(req).items()}
        steer = Steer(self, req.shape, dec.max_tokens)
        out = self.model(**inputs, use_cache=True)
        chosen: list[TokenLogprob] = []
        ids: list[int] = []
        while True:
            logits = out.logits[0, -1].float()
            pick = steer.choose(logits)
            if pick is None:
                break
            logp = torch.log_softmax(logits, dim=-1)
            top = {}
            if dec.top_logprobs:
                vals, idx = torch.topk(logp, min(dec.top_logprobs, self.vocab))
                top = {self.piece[i]: float(v) for v, i in zip(vals.tolist(), idx.tolist())}
                top.update({self.piece[i]: float(logp[i]) for i in self.digits})
            chosen.append(TokenLogprob(self.piece[pick], float(logp[pick]), top))
            ids.append(pick)
            out = self._step(pick, out)
        text = "".join(t.token for t in chosen)
        if not text:
            return Reply(failure="empty answer")
        return Reply(text=text, logprobs=chosen if dec.top_logprobs else None,
                     prompt_tokens=int(inputs["input_ids"].shape[1]), completion_tokens=len(ids))


class Steer:
    """The next token under the answer's form: forced text, a choice among allowed tokens (the
    highest logit among them), or None when the answer is complete."""

    def __init__(self, be: LocalBackend, shape: str, max_tokens: int):
        if shape not in ("clair_json", "pair_json", "fleur_number", "free"):
            raise InputError(f"unknown answer form {shape!r}")
        self.be, self.shape, self.budget = be, shape, max_tokens
        head = {"clair_json": CLAIR_HEAD, "pair_json": PAIR_HEAD}.get(shape)
        self.forced: list[int] = be._ids(head) if head else []
        self.state = {"clair_json": "number", "pair_json": "choice"}.get(shape, "lead")
        self.number = ""
        self.n = 0

    def _best(self, logits, allowed: list[int]) -> int:
        sub = logits[allowed]
        return allowed[int(sub.argmax())]  # ties: the lowest position in ``allowed``, fixed

    def choose(self, logits) -> int | None:
        if self.n >= self.budget and self.shape == "free":
            return None
        self.n += 1
        if self.forced:
            return self.forced.pop(0)
        return getattr(self, f"_{self.shape}")(logits)

    def _free(self, logits) -> int | None:
        pick = int(logits.argmax())
        return None if pick == self.be.eos else pick

    def _clair_json(self, logits) -> int | None:
        be = self.be
        if self.state == "number":
            mid = be._ids(CLAIR_MID)
            allowed = []
            if self.number != "0" and len(self.number) < 3:  # 0..100, no leading zero
                allowed += [d for k, d in enumerate(be.digits) if int(self.number + str(k)) <= 100]
            if self.number:
                allowed.append(mid[0])
            pick = self._best(logits, allowed)
            if pick == mid[0]:
                self.state, self.forced = "reason", mid[1:]
            else:
                self.number += str(be.digits.index(pick))
            return pick
        if self.state == "reason":
            end = be._ids(CLAIR_END)
            if self.n >= self.budget - len(end):
                self.state, self.forced = "done", end[1:]
                return end[0]
            pick = self._best(logits, be.reason_ok + [end[0]])
            if pick == end[0]:
                self.state, self.forced = "done", end[1:]
            return pick
        return None

    def _pair_json(self, logits) -> int | None:
        if self.state == "choice":  # A or B, then the reason as CLAIR's
            pick = self._best(logits, [self.be._ids("A")[-1], self.be._ids("B")[-1]])
            self.state, self.forced = "reason", self.be._ids(PAIR_MID)
            return pick
        return self._clair_json(logits)

    def _fleur_number(self, logits) -> int | None:
        be = self.be
        d, dot = be.digits, be._ids(".")[-1]
        if self.state == "lead":
            pick = self._best(logits, [d[0], d[1]])
            self.state, self.forced = ("one", [dot, d[0]]) if pick == d[1] else ("first", [dot])
            return pick
        if self.state == "first":
            self.state = "second"
            return self._best(logits, list(d))
        if self.state == "second" and be.eos is not None:  # a second decimal, or the end
            self.state = "done"
            pick = self._best(logits, list(d) + [be.eos])
            return None if pick == be.eos else pick
        return None
