"""The model-judge families: ``clair`` (Chan et al., EMNLP 2023), ``fleur`` and ``reffleur``
(Lee et al., ACL 2024), run on the user's endpoint (``url=``, ``model=``) or local model
directory (``model=`` a path, no ``url``). docs/JUDGES.md.

A row the judge leaves unanswered (after retries) is NaN, its reason in
``Result.explanations[family]`` and ``Result.details[family]["failures"]``; the corpus score is
the mean over answered rows, and the signature counts the unanswered rows (``unans``). More
unanswered rows than ``allow_unanswered`` (default 0) is an error naming the first of them.
Each row is judged alone, so the family streams under the default statistics contract.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import InputError
from ..metrics.base import Metric, OutputInfo
from ..metrics.registry import register
from ..metrics.statistics import Aggregate, Statistics
from . import prompts
from .answers import Malformed, fleur_smooth, parse_clair
from .backend import Decoding, HttpBackend, JudgeUnavailable, Reply, Request
from .cache import ResponseCache
from .runner import Verdict, judge

_UNANSWERED = "the judge gave no usable answer after its retries (the reason is in Result.explanations)"


class TooManyUnanswered(InputError):
    """More rows were left unanswered than the run allows (an :class:`InputError`: a streamed
    run names the chunk's input rows, as for any row of it)."""


def check_unanswered(output: str, failed: np.ndarray, failures: np.ndarray, allow: int, *, of: str,
                     then: str) -> None:
    """:class:`TooManyUnanswered` when more than ``allow`` of the ``of`` items (``"6 rows"``) are
    ``failed`` (their flags), naming the first with its reason and what ``then`` happens to the
    unanswered ones when allowed."""
    at = np.flatnonzero(failed)
    if len(at) > allow:
        first, item = int(at[0]), of.split()[-1].rstrip("s")
        raise TooManyUnanswered(
            f"{output}: the judge left {len(at)} of {of} unanswered (allowed: {allow}); first: {item} {first}: "
            f"{failures[first]}. Answers already given are cached; rerun with allow_unanswered={len(at)} {then}")


class JudgeAggregate(Aggregate):
    """Scores of answered rows; corpus = their mean (NaN when none is answered); the unanswered
    rows counted in the signature (``unans``) and named in the details with token counts."""

    def __init__(self, output: str, allow: int, price_prompt: float, price_completion: float):
        self.output, self.allow = output, int(allow)
        self.price_prompt, self.price_completion = float(price_prompt), float(price_completion)

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        return {self.output: st.rows[self.output]}

    def _check(self, st: Statistics) -> None:
        if st.n:
            check_unanswered(self.output, st.rows["failed"], st.rows["failure"], self.allow, of=f"{st.n} rows",
                             then="(capeval score --judge-allow-unanswered) to score the rest as NaN")

    def corpus(self, st: Statistics) -> dict[str, float]:
        self._check(st)
        v = st.rows[self.output] if st.n else np.zeros(0)
        ok = v[~np.isnan(v)]
        return {self.output: float(np.mean(ok)) if ok.size else math.nan}

    def fields(self, st: Statistics) -> dict[str, Any]:
        return {"unans": int(st.rows["failed"].sum()) if st.n else 0}

    def details(self, st: Statistics) -> dict[str, Any]:
        if not st.n:
            return {}
        sent = st.rows["sent"] > 0
        ptok, ctok = st.rows["prompt_tokens"], st.rows["completion_tokens"]
        out: dict[str, Any] = {
            "unanswered": int(st.rows["failed"].sum()),
            "failures": {int(i): str(st.rows["failure"][i]) for i in np.flatnonzero(st.rows["failed"])},
            "requests": int(st.rows["sent"].sum()),
            "prompt_tokens": int(ptok.sum()), "completion_tokens": int(ctok.sum()),
            "prompt_tokens_sent": int(ptok[sent].sum()), "completion_tokens_sent": int(ctok[sent].sum()),
        }
        if self.price_prompt or self.price_completion:
            out["cost"] = (out["prompt_tokens_sent"] * self.price_prompt
                           + out["completion_tokens_sent"] * self.price_completion) / 1e6
        return out


def _clean(text: str) -> str:
    # a signature is "k:v|k:v": a bar inside a model name would split it
    return str(text).replace("|", "%7C")


class JudgeMetric(Metric):
    """Shared by the judge families: the backend, cache, decoding and failure policy.

    Parameters
    ----------
    url : str, optional
        Base URL of an OpenAI-compatible endpoint (``http://127.0.0.1:8000/v1``).
    model : str
        The endpoint's model name, or (without ``url``) a local transformers directory.
    api_key_env : str, optional
        Environment variable holding the endpoint's API key (read per request, never stored).
    timeout, concurrency, retries, backoff, rate : endpoint limits (seconds, requests in flight,
        retries of 429/5xx/timeouts/broken connections, the first wait between retries in
        seconds (doubling), requests per second).
    json_mode : bool
        Ask the endpoint for the answer's form (``response_format`` JSON for CLAIR, vLLM's
        ``guided_regex`` for FLEUR's number); servers that do not know the field ignore it.
    max_tokens, seed : decoding (temperature is always 0).
    attempts : int
        Times an unreadable answer is asked in all.
    allow_unanswered : int
        Rows that may stay unanswered (NaN) before the run fails.
    cache : bool or str
        The response cache (default on, under the cache root); a folder; False for none.
    price_prompt, price_completion : float
        Price per million prompt / completion tokens, for the cost in ``Result.details``.
    device, workers : local backend: torch device and requests decoded side by side.
    """

    text_input = "raw"
    shape: ClassVar[str] = "free"
    top_logprobs: ClassVar[int] = 0
    smoothing: ClassVar[str | None] = None
    template: ClassVar[str] = ""

    def __init__(self, model: str | None = None, url: str | None = None, api_key_env: str | None = None,
                 timeout: float = 60.0, concurrency: int = 4, retries: int = 4, backoff: float = 0.5,
                 rate: float | None = None,
                 json_mode: bool = True, max_tokens: int = 256, seed: int = 0, attempts: int = 3,
                 allow_unanswered: int = 0, cache: bool | str = True, price_prompt: float = 0.0,
                 price_completion: float = 0.0, device: str = "cpu", workers: int | None = None):
        if not model:
            raise JudgeUnavailable(f"{self.family}: no judge given: pass model= (a local transformers directory) "
                                   "or url= and model= (an OpenAI-compatible endpoint); capeval score: "
                                   "--judge-model [--judge-url]")
        if int(allow_unanswered) < 0 or int(attempts) < 1 or int(max_tokens) < 8:
            raise InputError(f"{self.family}: allow_unanswered >= 0, attempts >= 1 and max_tokens >= 8 are required")
        if url:
            self.backend: Any = HttpBackend(url, model, api_key_env=api_key_env, timeout=timeout,
                                            concurrency=concurrency, retries=retries, backoff=backoff, rate=rate,
                                            json_mode=json_mode)
        else:
            from .local import LocalBackend

            self.backend = LocalBackend(model, device=device, workers=workers)
        self.dec = Decoding(max_tokens=int(max_tokens), seed=int(seed), top_logprobs=self.top_logprobs)
        self.attempts, self.allow = int(attempts), int(allow_unanswered)
        self.cache = None if cache is False else ResponseCache(None if cache is True else Path(str(cache)))
        self.prices = (float(price_prompt), float(price_completion))

    def aggregate(self, outputs: tuple[str, ...]) -> Aggregate:
        return JudgeAggregate(self.family, self.allow, *self.prices)

    def _fields(self) -> dict[str, object]:
        ident = self.backend.identity()
        fields: dict[str, object] = {"backend": ident["backend"], "judge": _clean(ident["model"]),
                                     "prompt": prompts.digest(self.template), "t": self.dec.temperature,
                                     "seed": self.dec.seed, "max": self.dec.max_tokens}
        if self.smoothing:
            fields["smooth"] = self.smoothing
        fields["allow"] = self.allow
        return fields

    def requests(self, candidates, references, images) -> list[Request]:
        raise NotImplementedError

    def read(self, reply: Reply) -> tuple[float, str, float | None]:
        raise NotImplementedError

    def verdicts(self, candidates, references, images=None) -> list[Verdict]:
        reqs = self.requests(candidates, references, images)
        return judge(self.backend, reqs, self.dec, self.read, attempts=self.attempts, cache=self.cache)

    def statistics(self, candidates: Sequence[str], references: Sequence[Sequence[str]], **kw: Any) -> Statistics:
        verdicts = self.verdicts(candidates, references, kw.get("images"))
        st = self._stats(verdicts)
        st.details["explanations"] = verdicts
        return st

    def _stats(self, verdicts: list[Verdict]) -> Statistics:
        rows = {
            self.family: np.array([v.score for v in verdicts], dtype=np.float64),
            "failed": np.array([v.failure is not None for v in verdicts], dtype=np.int64),
            "failure": np.array([v.failure or "" for v in verdicts], dtype=np.str_),
            "prompt_tokens": np.array([v.prompt_tokens for v in verdicts], dtype=np.int64),
            "completion_tokens": np.array([v.completion_tokens for v in verdicts], dtype=np.int64),
            "sent": np.array([v.sent for v in verdicts], dtype=np.int64),
        }
        return Statistics(len(verdicts), self.aggregate((self.family,)), rows, {}, self._fields())



def judge_image(path: str) -> tuple[bytes, str, str]:
    """An image's bytes, SHA-256 and MIME type for a judge request, checked by the image door."""
    import io
    import warnings

    from PIL import Image, UnidentifiedImageError

    from ..guards import check_image_size, read_image_bytes

    data = read_image_bytes(path)
    # the image door's limits from the header, before a local judge decodes it or an endpoint is sent it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            size = Image.open(io.BytesIO(data)).size
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        raise InputError(f"image {path!r} ({len(data):,} bytes) cannot be read as an image: {e}") from None
    check_image_size(size[0], size[1], path, len(data))
    mime = "image/png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "image/jpeg"
    return data, hashlib.sha256(data).hexdigest(), mime


@register
class Clair(JudgeMetric):
    """CLAIR: the judge rates, 0--100, how likely the candidate describes the same image as the
    references; the score is that number / 100 and the judge's reason is the explanation."""

    family = "clair"
    variant = "clair"
    shape = "clair_json"
    template = prompts.CLAIR_TEMPLATE
    outputs = (OutputInfo("clair", "clair", "clair", (0.0, 1.0), True,
                          "an LLM judge's 0-100 rating (/100) that the candidate and references describe one image",
                          "Chan et al., EMNLP 2023 (CLAIR)", undefined=_UNANSWERED),)

    def requests(self, candidates, references, images) -> list[Request]:
        return [Request(prompts.clair_prompt(c, refs), self.shape) for c, refs in zip(candidates, references)]

    def read(self, reply: Reply) -> tuple[float, str, float | None]:
        score, reason = parse_clair(reply.text or "")
        return score, reason, None


class _Fleur(JudgeMetric):
    shape = "fleur_number"
    top_logprobs = 20
    smoothing = "ev-digits"
    needs_images = True
    with_references: ClassVar[bool] = False

    def requests(self, candidates, references, images) -> list[Request]:
        if images is None:
            raise InputError(f"{self.family} needs one image per candidate (images=...)")
        out = []
        for i, c in enumerate(candidates):
            data, digest, mime = judge_image(images[i])
            text = prompts.fleur_prompt(c, references[i] if self.with_references else None)
            out.append(Request(text, self.shape, image=data, image_digest=digest, image_mime=mime))
        return out

    def read(self, reply: Reply) -> tuple[float, str, float | None]:
        if reply.logprobs is None:
            raise JudgeUnavailable(
                f"{self.family}: the judge {self.backend.identity()['model']!r} returned no log probabilities; "
                "FLEUR's score smoothing needs them (an endpoint that returns `logprobs`, e.g. vLLM, llama.cpp's "
                "server, OpenAI; or a local model directory)")
        score, written = fleur_smooth(reply.text or "", reply.logprobs)
        return float(score), (reply.text or "").strip(), written


@register
class Fleur(_Fleur):
    """FLEUR: a vision-language judge's 0.0--1.0 rating of the caption against the image, smoothed
    by the expected value of its score digits."""

    family = "fleur"
    variant = "fleur"
    needs_references = False
    template = prompts.FLEUR_TEMPLATE
    outputs = (OutputInfo("fleur", "fleur", "fleur", (0.0, 1.0), True,
                          "a vision-language judge's rating of the caption for the image, digit-smoothed",
                          "Lee et al., ACL 2024 (FLEUR)", undefined=_UNANSWERED),)


@register
class RefFleur(_Fleur):
    """RefFLEUR: FLEUR with the reference captions in the prompt."""

    family = "reffleur"
    variant = "reffleur"
    with_references = True
    template = prompts.REFFLEUR_TEMPLATE
    outputs = (OutputInfo("reffleur", "reffleur", "reffleur", (0.0, 1.0), True,
                          "FLEUR with the references in the prompt, digit-smoothed",
                          "Lee et al., ACL 2024 (RefFLEUR)", undefined=_UNANSWERED),)


__all__ = ["Clair", "Fleur", "RefFleur", "JudgeMetric", "JudgeAggregate", "TooManyUnanswered", "Malformed"]
