"""The paper's neural backends, for users who have the weights (Hugging Face id or local path).

* :class:`HFQuestionGenerator` - T5 QG (QACE: ``mrm8488/t5-base-finetuned-question-generation-ap``):
  prompt ``answer: {a}  context: {caption} </s>`` (two spaces before ``context:``), greedy,
  ``max_length=32``; ``<pad>``/``</s>`` deleted and the leading ``question:`` removed (the notebook
  drops the first 11 characters, which is that prefix with its spaces).
* :class:`HFQuestionAnswerer` - T5 QA (QACE: ``valhalla/t5-base-qa-qg-hl``): prompt
  ``question: {q}  context: {context} </s>``, greedy, ``max_length=32``; answer lower-cased with
  stop words removed; answerability = 1 - softmax(first decoding step)[unanswerable token].
* :class:`VisualT5Answerer` - QACE-Img's Visual-T5: question tokens padded to 64, two prefix ids,
  region features through ``Linear(2054 -> d_model)`` appended to the encoder input; greedy;
  answerability from token id 73 by default (docs/QACE.md, The paper's public code).

Answer candidates for the generator are the noun chunks of :mod:`capeval.qace.extract` in text
order (the notebook's set order is not deterministic). The candidate answer is the lower-cased
chunk text without stop words (surface words: the neural reader answers in surface words).
Every class takes a model and tokenizer object (tests build tiny random ones) or loads by id.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..errors import InputError, ResourceNotFound
from .types import Answer, Question

QG_TEMPLATE = "answer: {answer}  context: {context} </s>"
QA_TEMPLATE = "question: {question}  context: {context} </s>"
VQA_PREFIX = "visual answer: "


def _load_seq2seq(name: str, device: str):
    try:
        import transformers
    except ImportError as exc:
        from ..extras import install_hint

        raise ResourceNotFound(f"neural QACE backends need transformers and torch: {install_hint(['bertscore'])}") from exc
    try:
        from ..resources.encoders import quiet_model_loading

        with quiet_model_loading():
            tok = transformers.AutoTokenizer.from_pretrained(name)
            model = transformers.AutoModelForSeq2SeqLM.from_pretrained(name).to(device).eval()
    except OSError as exc:
        raise ResourceNotFound(f"cannot load seq2seq model {name!r} (Hugging Face id or local path): {exc}") from exc
    return tok, model


def _revision(model, name: str) -> str:
    commit = getattr(getattr(model, "config", None), "_commit_hash", None)
    return f"{name}@{commit[:12]}" if commit else name


def clean_generation(text: str, tokenizer) -> str:
    """Delete pad and eos tokens, as the notebook does, and surrounding spaces."""
    for special in (tokenizer.pad_token, tokenizer.eos_token):
        if special:
            text = text.replace(special, "")
    return text.strip()


class _Seq2Seq:
    """Batched greedy generation; returns texts and the first decoding step's logits."""

    def __init__(self, model, tokenizer, batch_size: int, max_length: int, device: str):
        if batch_size < 1:
            raise InputError(f"batch_size must be at least 1, got {batch_size}")
        self.model, self.tok = model, tokenizer
        self.batch_size, self.max_length, self.device = batch_size, max_length, device
        self._lock = threading.Lock()  # generate() on one module is not re-entrant-safe
        #: Tokens truncation dropped from each prompt of the last :meth:`generate` (0: not cut).
        self.last_cut: list[int] = []

    def length(self, texts: Sequence[str]) -> list[int]:
        """Token lengths of whole prompts (not truncated; the tokenizer's special tokens added)."""
        with self._lock:
            getattr(self.tok, "deprecation_warnings", {})["sequence-length-is-longer-than-the-specified-maximum"] = True
            return [len(x) for x in self.tok(list(texts), truncation=False)["input_ids"]] if len(texts) else []

    @property
    def window(self) -> int | None:
        from ..metrics._bertscore_windows import token_window

        return token_window(self.tok)

    def generate(self, prompts: Sequence[str]) -> tuple[list[str], np.ndarray]:
        import torch

        from ..resources.torch_runner import ROWS, map_fixed

        # Each prompt is generated in a batch of the torch runner's fixed shape (prompts of its
        # own token length, no padding, at most batch_size of them) on its single-threaded
        # workers, so its text and logits depend on it alone, not on the other prompts or the
        # thread count. The prompts carry their own "</s>", as the QACE notebook writes them;
        # the tokenizer may add another, exactly as there.
        with self._lock:
            enc = self.tok(list(prompts), truncation=True)["input_ids"] if len(prompts) else []
        limit = self.window
        at = [k for k, e in enumerate(enc) if limit is not None and len(e) >= limit]
        self.last_cut = [0] * len(enc)
        for k, n in zip(at, self.length([prompts[k] for k in at])):
            self.last_cut[k] = max(0, n - len(enc[k]))

        def forward(idx: list[int]) -> list[tuple[str, np.ndarray]]:
            x = torch.tensor([enc[i] for i in idx], dtype=torch.long).to(self.device)
            out = self.model.generate(
                input_ids=x, attention_mask=torch.ones_like(x),
                max_length=self.max_length, num_beams=1, do_sample=False,
                output_scores=True, return_dict_in_generate=True)
            texts = [clean_generation(t, self.tok)
                     for t in self.tok.batch_decode(out.sequences, skip_special_tokens=False)]
            return list(zip(texts, out.scores[0].float().cpu().numpy()))

        rows = min(self.batch_size, ROWS)
        with self._lock:  # generate() on one module is not re-entrant-safe: one pass at a time
            got = map_fixed(forward, [len(e) for e in enc], rows=rows, workers=1)
        texts = [t for t, _ in got]
        logits = np.stack([v for _, v in got]) if got else np.zeros((0, 0))
        return texts, logits


def answerability_from_logits(logits: np.ndarray, token_id: int) -> np.ndarray:
    """1 - softmax(logits)[token_id], row-wise, computed stably in float64."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return 1.0 - p[:, token_id]


def strip_stopwords(text: str, stopwords: frozenset) -> str:
    return " ".join(w for w in text.lower().split() if w not in stopwords)


class HFQuestionGenerator:
    """Candidates -> questions with a T5 question generator (variant field ``qg:<id>``)."""

    def __init__(self, model: str | object, tokenizer=None, *, stopwords: str = "nltk-153",
                 spacy_model: str | None = None, batch_size: int = 16, max_length: int = 32,
                 device: str = "cpu", name: str | None = None, long_text: str = "truncate"):
        from ..text.stopwords import get_stopwords

        if isinstance(model, str):
            name = name or model
            tokenizer, model = _load_seq2seq(model, device)
        if tokenizer is None:
            raise InputError("HFQuestionGenerator: pass a tokenizer with a model object")
        self.id = _revision(model, name or type(model).__name__)
        stop = get_stopwords(stopwords)
        self._stop, self.stop_id = stop.words, stop.id
        self._gen = _Seq2Seq(model, tokenizer, batch_size, max_length, device)
        self._spacy_model = spacy_model
        self._nlp = None
        self.long_text = check_long_text(long_text)
        #: Per candidate of the last :meth:`generate`: tokens cut from each of its prompts.
        self.last_cut: list[list[int]] = []

    @property
    def window(self) -> int | None:
        """The tokenizer's length limit, prompts included (None: no limit)."""
        return self._gen.window

    def _parse(self, texts):
        if self._nlp is None:
            from ..scenegraph.parser import DEFAULT_MODEL, load_spacy

            self._nlp = load_spacy(self._spacy_model or DEFAULT_MODEL)
        return list(self._nlp.pipe(texts))

    def answers(self, candidates: Sequence[str]) -> list[list[tuple[str, str]]]:
        """(answer, chunk text) per candidate: noun chunks in text order, first occurrence."""
        out = []
        for doc in self._parse(list(candidates)):
            seen, rows = set(), []
            for chunk in doc.noun_chunks:
                a = strip_stopwords(chunk.text, self._stop)
                if a and a not in seen:
                    seen.add(a)
                    rows.append((a, chunk.text))
            out.append(rows)
        return out

    def generate(self, candidates: Sequence[str], answers: Sequence[Sequence[tuple[str, str]]] | None = None
                 ) -> list[list[Question]]:
        answers = self.answers(candidates) if answers is None else answers
        prompts = [QG_TEMPLATE.format(answer=a, context=c) for c, rows in zip(candidates, answers) for a, _ in rows]
        if self.long_text == "sentences":
            # a prompt over the window asks about the sentence that holds the answer's span instead
            spans = [(c, span) for c, rows in zip(candidates, answers) for _, span in rows]
            answer_of = [a for rows in answers for a, _ in rows]
            limit = self._gen.window
            for k, n in enumerate(self._gen.length(prompts)):
                if limit is not None and n > limit:
                    c, span = spans[k]
                    prompts[k] = QG_TEMPLATE.format(answer=answer_of[k], context=sentence_with(c, span))
        texts, _ = self._gen.generate(prompts)
        sizes = [len(rows) for rows in answers]
        cuts = self._gen.last_cut
        self.last_cut = [cuts[sum(sizes[:i]):sum(sizes[:i + 1])] for i in range(len(sizes))]
        out, k = [], 0
        for rows in answers:
            qs, seen = [], set()
            for a, span in rows:
                q = texts[k]
                k += 1
                q = q[len("question:"):].strip() if q.lower().startswith("question:") else q
                if q not in seen:  # the paper keeps the first occurrence of a question
                    seen.add(q)
                    qs.append(Question(q, a, "entity", span))
            out.append(qs)
        return out


def check_long_text(value: object) -> str:
    if value not in ("truncate", "sentences"):
        raise InputError(f"qace: long_text must be one of truncate, sentences, got {value!r}")
    return str(value)


def split_sentences(text: str) -> list[str]:
    import re

    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def sentence_with(text: str, span: str) -> str:
    """The first sentence of ``text`` that holds ``span`` (the whole text when none does)."""
    return next((s for s in split_sentences(text) if span in s), text)


def unanswerable_id(tokenizer, token: str = "unanswerable") -> int:
    """The vocabulary id of the "unanswerable" token: the word itself, else its first piece."""
    tid = tokenizer.convert_tokens_to_ids(token)
    if tid is not None and tid != tokenizer.unk_token_id:
        return int(tid)
    ids = tokenizer(token, add_special_tokens=False)["input_ids"]
    if not ids:
        raise InputError(f"tokenizer cannot encode {token!r}")
    return int(ids[0])


class HFQuestionAnswerer:
    """(question, context) -> answer with a T5 reader; context = the references joined by spaces."""

    def __init__(self, model: str | object, tokenizer=None, *, stopwords: str = "nltk-153",
                 unanswerable: str | int = "unanswerable", batch_size: int = 16, max_length: int = 32,
                 device: str = "cpu", name: str | None = None, long_text: str = "truncate"):
        from ..text.stopwords import get_stopwords

        if isinstance(model, str):
            name = name or model
            tokenizer, model = _load_seq2seq(model, device)
        if tokenizer is None:
            raise InputError("HFQuestionAnswerer: pass a tokenizer with a model object")
        self.id = _revision(model, name or type(model).__name__)
        self._stop = get_stopwords(stopwords).words
        self._unans = unanswerable if isinstance(unanswerable, int) else unanswerable_id(tokenizer, unanswerable)
        self._unans_word = tokenizer.convert_ids_to_tokens(self._unans)
        self._gen = _Seq2Seq(model, tokenizer, batch_size, max_length, device)
        self.long_text = check_long_text(long_text)
        #: Per item of the last :meth:`answer`: tokens cut from its prompt(s).
        self.last_cut: list[int] = []

    def _windows(self, question: str, context: str) -> list[str]:
        """Prompts whose contexts are the context's sentences packed, in order, into the window."""
        limit = self._gen.window
        sentences = split_sentences(context) or [context]
        room = (limit or 0) - self._gen.length([QA_TEMPLATE.format(question=question, context="")])[0]
        out: list[str] = []
        cur: list[str] = []
        for sent in sentences:
            if cur and self._gen.length([" ".join([*cur, sent])])[0] > room:
                out.append(" ".join(cur))
                cur = []
            cur.append(sent)
        out.append(" ".join(cur))
        return [QA_TEMPLATE.format(question=question, context=c) for c in out]

    def answer(self, items: Sequence[tuple[Question, tuple[str, ...]]]) -> list[Answer]:
        prompts = [[QA_TEMPLATE.format(question=q.text, context=" ".join(c))] for q, c in items]
        limit = self._gen.window
        if self.long_text == "sentences" and limit is not None:
            # over the window: one prompt per window of whole sentences; the most answerable reading wins
            for k, n in enumerate(self._gen.length([p[0] for p in prompts])):
                if n > limit:
                    prompts[k] = self._windows(items[k][0].text, " ".join(items[k][1]))
        flat = [p for ps in prompts for p in ps]
        texts, logits = self._gen.generate(flat)
        ans = answerability_from_logits(logits, self._unans) if len(texts) else np.zeros(0)
        out, self.last_cut, at = [], [], 0
        for ps in prompts:
            best = at + int(np.argmax(ans[at:at + len(ps)]))
            t = strip_stopwords(texts[best], self._stop)
            if t.replace("▁", "") in ("unanswerable", self._unans_word):
                t = ""
            out.append(Answer(t, float(ans[best])))
            self.last_cut.append(sum(self._gen.last_cut[at:at + len(ps)]))
            at += len(ps)
        return out


class VisualT5Answerer:
    """QACE-Img reader: (image regions, question) -> answer and answerability.

    ``regions``: array (36, 2054) per image (pool5 feature + normalised box). The encoder input
    is the question's embeddings (padded to ``text_len`` with id 0), embeddings of the two
    ``prefix_ids`` and ``proj(regions)``; the attention mask is 0 only on the text padding.
    ``proj`` is the checkpoint's ``Linear(2054 -> d_model)``.
    """

    def __init__(self, model, tokenizer, proj, *, prompt_prefix: str = VQA_PREFIX, text_len: int = 64,
                 prefix_ids: tuple[int, ...] = (1023, 10), unanswerable_id: int = 73,
                 max_length: int = 16, stopwords: str = "nltk-153", name: str | None = None):
        from ..text.stopwords import get_stopwords

        self.model, self.tok, self.proj = model, tokenizer, proj
        self.prompt_prefix, self.text_len, self.prefix_ids = prompt_prefix, text_len, tuple(prefix_ids)
        self._unans, self.max_length = unanswerable_id, max_length
        self._stop = get_stopwords(stopwords).words
        self.id = name or type(model).__name__
        self._lock = threading.Lock()

    def encoder_inputs(self, questions: Sequence[str], regions: Sequence[np.ndarray]):
        import torch

        n = len(questions)
        ids = torch.zeros((n, self.text_len + len(self.prefix_ids)), dtype=torch.long)
        mask = torch.zeros((n, self.text_len + len(self.prefix_ids) + regions[0].shape[0]), dtype=torch.long)
        for i, q in enumerate(questions):
            t = self.tok(self.prompt_prefix + q, add_special_tokens=False)["input_ids"][: self.text_len]
            ids[i, : len(t)] = torch.tensor(t, dtype=torch.long)
            mask[i, : len(t)] = 1
            mask[i, self.text_len:] = 1
        ids[:, self.text_len:] = torch.tensor(self.prefix_ids, dtype=torch.long)
        emb = self.model.get_input_embeddings()(ids)
        reg = torch.as_tensor(np.stack(regions), dtype=emb.dtype)
        return torch.cat([emb, self.proj(reg)], dim=1), mask

    def answer(self, questions: Sequence[str], regions: Sequence[np.ndarray]) -> list[Answer]:

        if len(questions) != len(regions):
            raise InputError(f"{len(questions)} questions but {len(regions)} region sets")
        if not questions:
            return []
        from ..resources.torch_runner import map_fixed

        def forward(idx: list[int]) -> list[tuple[str, np.ndarray]]:
            embeds, mask = self.encoder_inputs([questions[i] for i in idx], [regions[i] for i in idx])
            out = self.model.generate(inputs_embeds=embeds, attention_mask=mask, max_length=self.max_length,
                                      num_beams=1, do_sample=False, output_scores=True,
                                      return_dict_in_generate=True)
            texts = [clean_generation(t, self.tok)
                     for t in self.tok.batch_decode(out.sequences, skip_special_tokens=False)]
            return list(zip(texts, out.scores[0].float().cpu().numpy()))

        # Every input row has the same length (text_len + prefix + regions); batches of the torch
        # runner's fixed shape per region count, so an answer depends on its question alone.
        with self._lock:
            got = map_fixed(forward, [int(r.shape[0]) for r in regions], workers=1)
        ans = answerability_from_logits(np.stack([v for _, v in got]), self._unans)
        return [Answer(strip_stopwords(t, self._stop), float(a)) for (t, _), a in zip(got, ans)]


class ImageQA:
    """QACE-Img as a pipeline reader: a context is ``(image_key,)`` and ``images[key]`` holds
    that image's region features, so :meth:`QacePipeline.run` with ``[[key]]`` per caption gives
    QACE-Img scores and the same explanation tables."""

    def __init__(self, answerer: VisualT5Answerer, images: dict):
        self.answerer, self.images = answerer, images
        self.id = answerer.id

    def answer(self, items: Sequence[tuple[Question, tuple[str, ...]]]) -> list[Answer]:
        for _, c in items:
            if len(c) != 1 or c[0] not in self.images:
                raise InputError(f"QACE-Img: no region features for image {c!r}")
        return self.answerer.answer([q.text for q, _ in items], [self.images[c[0]] for _, c in items])
