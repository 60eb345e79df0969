"""BERTScore, computed as bert_score 0.3.12/0.3.13 computes it, with less repeated work.

Zhang, Kishore, Wu, Weinberger & Artzi (2020), "BERTScore: Evaluating Text Generation with
BERT", ICLR. Protocol (PROTOCOLS.md §9): token embeddings from layer L, L2-normalised; each
candidate token takes its best cosine over the reference tokens (precision), each reference
token its best over the candidate tokens (recall); both are weighted means with weights
normalised to sum 1 (IDF off: 1 for every token but [CLS]/[SEP], which weigh 0); F = 2PR/(P+R)
with NaN → 0. With several references each of P, R and F is the maximum over the references,
separately, and rescaling X' = (X − b)/(1 − b) comes after the maximum.

bert_score's batching changes numbers in one place, and we reproduce it: it matches
``batch_size`` consecutive flattened (candidate, reference) pairs in one zero-padded matrix,
and the padding zeros take part in the maxima. So a token whose best cosine is negative scores
0 instead whenever the other sentence is shorter than the longest one in that batch (issue
#165: batched and one-at-a-time scores differ). With MiniLM this happens on Flickr8k-Expert
(best cosines go down to about -0.11; ignoring it moves scores by up to 0.01). We compute both
weighted sums per pair and pick, per flattened position, the one bert_score's batch gives
(``padding_floor=True``, default); ``padding_floor=False`` takes the true maxima instead.

Where bert_score repeats work and we do not (numbers agree to float32 rounding, ≤ 1e-6):

* each distinct sentence is tokenized (one batched call) and encoded once, in batches of
  equal-ish token length; the model runs only its first L blocks;
* greedy matching runs once per distinct (candidate, reference) pair (Flickr8k-Expert: 84,960
  flattened pairs, 28,308 distinct) in large length-sorted batches;
* IDF document frequencies come from the token ids of the distinct references, weighted by
  how often each occurs in the flattened list, instead of re-tokenizing every occurrence in
  a process pool.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._version import __version__
from ..errors import InputError
from ..progress import report
from ..result import MetricScores
from ._bertscore_baselines import Baseline, packaged_baseline, read_baseline
from .base import Metric, OutputInfo
from .registry import register

VARIANT = "bertscore"
CITATION = (
    "Zhang, Kishore, Wu, Weinberger & Artzi (2020). BERTScore: Evaluating Text Generation "
    "with BERT. ICLR."
)
#: Pairs per greedy-matching batch; only memory and speed depend on it.
PAIR_BATCH = 1024


# --------------------------------------------------------------------------- tokens and weights


def _special_prefix_kwargs(tokenizer) -> dict:
    # bert_score encodes RoBERTa/GPT-2 style byte-level BPE with a leading space, so a sentence's
    # first word gets the same piece as it would mid-sentence.
    try:
        from transformers import GPT2Tokenizer, RobertaTokenizer
    except ImportError:  # pragma: no cover - transformers is present whenever a tokenizer is
        return {}
    if isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer)):
        return {"add_prefix_space": True}
    return {}


def encode_sentences(tokenizer, sentences: Sequence[str]) -> list[list[int]]:
    """Token ids with special tokens, as bert_score's ``sent_encode`` (strip, truncate)."""
    stripped = [s.strip() for s in sentences]
    out: list[list[int] | None] = [None] * len(stripped)
    todo = [i for i, s in enumerate(stripped) if s]
    if todo:
        # Tokenizers without a length limit report a huge model_max_length; there is nothing
        # to truncate to then (and the Rust backend rejects such a max_length).
        limit = tokenizer.model_max_length
        limit = limit if limit is not None and limit < 1_000_000 else None
        from ..resources.encoders import tokenizer_lock

        with tokenizer_lock(tokenizer):  # shared tokenizers are not safe to call from two threads
            enc = tokenizer(
                [stripped[i] for i in todo],
                add_special_tokens=True,
                max_length=limit,
                truncation=limit is not None,
                **_special_prefix_kwargs(tokenizer),
            )["input_ids"]
        for i, ids in zip(todo, enc):
            out[i] = list(ids)
    empty = special_only(tokenizer)
    return [ids if ids is not None else list(empty) for ids in out]


def special_only(tokenizer) -> list[int]:
    """Ids of an empty sentence: just the special tokens (``[CLS] [SEP]`` for BERT)."""
    # bert_score calls build_inputs_with_special_tokens([]), which transformers 5 tokenizers
    # no longer have; encoding "" gives the same ids.
    from ..resources.encoders import tokenizer_lock

    with tokenizer_lock(tokenizer):
        build = getattr(type(tokenizer), "build_inputs_with_special_tokens", None)
        if build is not None:
            return list(tokenizer.build_inputs_with_special_tokens([]))
        return list(tokenizer("", add_special_tokens=True)["input_ids"])


def idf_table(ref_ids: Sequence[Sequence[int]], ref_counts: Sequence[int]) -> tuple[dict[int, float], float]:
    """``(idf, unseen)``: idf(t) = ln((M+1)/(df(t)+1)) over the flattened reference list.

    ``ref_ids[k]`` are the ids of distinct reference k and ``ref_counts[k]`` how many times it
    occurs in the flattened list (bert_score counts every occurrence: a reference shared by
    three rows counts three times). M is the flattened length; unseen tokens get ln(M+1).
    """
    df: Counter = Counter()
    for ids, count in zip(ref_ids, ref_counts):
        for t in set(ids):
            df[t] += count
    m = int(sum(ref_counts))
    return {t: math.log((m + 1) / (c + 1)) for t, c in df.items()}, math.log(m + 1)


def token_weights(
    tokenizer, ids_list: Sequence[Sequence[int]], idf: tuple[dict[int, float], float] | None
) -> list[np.ndarray]:
    """Per-sentence float32 weights, normalised to sum 1 as bert_score does (in float32)."""
    out = []
    if idf is None:
        zero = {tokenizer.sep_token_id, tokenizer.cls_token_id}
        for ids in ids_list:
            w = np.array([0.0 if t in zero else 1.0 for t in ids], dtype=np.float32)
            out.append(w)
    else:
        table, unseen = idf
        for ids in ids_list:
            out.append(np.array([table.get(t, unseen) for t in ids], dtype=np.float32))
    # Division by a zero sum gives NaN, as in bert_score (only reachable with IDF on when every
    # token of a sentence occurs in every reference).
    with np.errstate(invalid="ignore", divide="ignore"):
        return [w / w.sum(dtype=np.float32) for w in out]


# --------------------------------------------------------------------------- embeddings


def embed(
    model,
    ids_list: Sequence[Sequence[int]],
    layers: Sequence[int],
    *,
    pad_id: int,
    batch_size: int = 64,
    device: str = "cpu",
) -> dict[int, list]:
    """L2-normalised token embeddings of each sentence at each requested layer (float32 tensors).

    Sentences go through the model in batches of similar token length; results come back in
    input order. With one layer the model is cut after that layer (same numbers, less work).
    """
    import torch

    from ..resources.encoders import truncated

    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    layers = list(layers)
    runner, use_hidden = model, True
    if len(layers) == 1:
        cut = truncated(model, layers[0])
        if cut is not None:
            runner, use_hidden = cut, False
    order = sorted(range(len(ids_list)), key=lambda i: len(ids_list[i]), reverse=True)
    result: dict[int, list] = {layer: [None] * len(ids_list) for layer in layers}
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            report(start, len(order))  # progress in sentences encoded (capeval.progress)
            idx = order[start : start + batch_size]
            lens = [len(ids_list[i]) for i in idx]
            width = max(lens)
            x = torch.full((len(idx), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for row, i in enumerate(idx):
                x[row, : lens[row]] = torch.tensor(ids_list[i], dtype=torch.long)
                mask[row, : lens[row]] = 1
            out = runner(x.to(device), attention_mask=mask.to(device), output_hidden_states=use_hidden)
            for layer in layers:
                h = out.hidden_states[layer] if use_hidden else out[0]
                h = h.float().cpu()
                h = h / torch.norm(h, dim=-1).unsqueeze(-1)
                for row, i in enumerate(idx):
                    result[layer][i] = h[row, : lens[row]].clone()
    return result


# --------------------------------------------------------------------------- greedy matching


@dataclass
class PairScores:
    """Per distinct (candidate, reference) pair, float32.

    ``p``/``r``: weighted means of the true best cosines; ``p_floor``/``r_floor``: the same with
    each best cosine floored at 0, which is what bert_score computes when the other sentence is
    padded in its batch; ``low``: the lowest best cosine of any token (+inf for blank pairs).
    """

    p: np.ndarray
    r: np.ndarray
    p_floor: np.ndarray
    r_floor: np.ndarray
    low: np.ndarray


def greedy_match(
    emb: Sequence,
    weights: Sequence[np.ndarray],
    pairs: Sequence[tuple[int, int]],
) -> PairScores:
    """Greedy cosine matching for (candidate, reference) sentence-index pairs.

    ``emb[k]``: normalised token embeddings of sentence k; ``weights[k]``: its weights, summing
    to 1. Pairs are matched in padded batches of similar shape; padding never wins a maximum.
    """
    import torch

    n = len(pairs)
    cols = [np.zeros(n, dtype=np.float32) for _ in range(5)]
    order = sorted(range(n), key=lambda q: (emb[pairs[q][0]].shape[0], emb[pairs[q][1]].shape[0]))
    pad = torch.nn.utils.rnn.pad_sequence
    with torch.inference_mode():
        for start in range(0, n, PAIR_BATCH):
            idx = order[start : start + PAIR_BATCH]
            c_idx = [pairs[q][0] for q in idx]
            r_idx = [pairs[q][1] for q in idx]
            hc = pad([emb[k] for k in c_idx], batch_first=True)
            hr = pad([emb[k] for k in r_idx], batch_first=True)
            wc = pad([torch.from_numpy(weights[k]) for k in c_idx], batch_first=True)
            wr = pad([torch.from_numpy(weights[k]) for k in r_idx], batch_first=True)
            lc = torch.tensor([emb[k].shape[0] for k in c_idx])
            lr = torch.tensor([emb[k].shape[0] for k in r_idx])
            mc = torch.arange(hc.shape[1]).unsqueeze(0) < lc.unsqueeze(1)
            mr = torch.arange(hr.shape[1]).unsqueeze(0) < lr.unsqueeze(1)
            sim = torch.bmm(hc, hr.transpose(1, 2))
            sim = sim.masked_fill(~mr.unsqueeze(1), float("-inf"))
            sim = sim.masked_fill(~mc.unsqueeze(2), float("-inf"))
            best_p = sim.max(dim=2).values  # per candidate token; -inf on padding
            best_r = sim.max(dim=1).values  # per reference token
            # Padded positions carry weight 0; zero them so -inf * 0 does not make NaN.
            word_p = best_p.masked_fill(~mc, 0.0)
            word_r = best_r.masked_fill(~mr, 0.0)
            low = torch.minimum(
                best_p.masked_fill(~mc, float("inf")).min(dim=1).values,
                best_r.masked_fill(~mr, float("inf")).min(dim=1).values,
            )
            for col, val in zip(
                cols,
                (
                    (word_p * wc).sum(dim=1),
                    (word_r * wr).sum(dim=1),
                    (word_p.clamp(min=0.0) * wc).sum(dim=1),
                    (word_r.clamp(min=0.0) * wr).sum(dim=1),
                    low,
                ),
            ):
                col[idx] = val.numpy()
    return PairScores(*cols)


def combine(p: np.ndarray, r: np.ndarray, blank: np.ndarray) -> np.ndarray:
    """``(n, 3)`` P, R, F finished as bert_score finishes them: F = 2PR/(P+R) from the unmasked
    P and R with NaN → 0, then P = R = 0 where a sentence has only special tokens (its weights
    are 0/0 = NaN, so F is already 0 there)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.float32(2.0) * p * r / (p + r)
    f = np.where(np.isnan(f), np.float32(0.0), f)
    p = np.where(blank, np.float32(0.0), p)
    r = np.where(blank, np.float32(0.0), r)
    return np.stack((p, r, f), axis=1).astype(np.float32)


# --------------------------------------------------------------------------- rows


@dataclass
class LayerScores:
    """Unrescaled float32 ``(n, 3)`` P, R, F per row, and the lowest best cosine seen."""

    prf: np.ndarray
    min_best_cosine: float


def padded_in_batch(lengths: np.ndarray, batch: int) -> np.ndarray:
    """True where a sentence is shorter than the longest in its batch of ``batch`` consecutive
    items, i.e. where bert_score's padded matrix gives it zero-similarity padding entries."""
    starts = np.arange(0, len(lengths), batch)
    longest = np.maximum.reduceat(lengths, starts)
    return lengths < np.repeat(longest, np.diff(np.append(starts, len(lengths))))


def score_rows(
    tokenizer,
    model,
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    layers: Sequence[int],
    *,
    idf: bool = False,
    batch_size: int = 64,
    padding_floor: bool = True,
    device: str = "cpu",
) -> dict[int, LayerScores]:
    """BERTScore of every row at each layer in ``layers`` (max over references per component).

    ``padding_floor``: reproduce bert_score's zero floor for sentences padded within its
    matching batches of ``batch_size`` consecutive (candidate, reference) pairs.
    """
    if len(candidates) != len(references):
        raise InputError(f"{len(candidates)} candidates but {len(references)} reference lists")
    sentence_index: dict[str, int] = {}
    for s in candidates:
        sentence_index.setdefault(s, len(sentence_index))
    ref_counts: Counter = Counter()
    for i, refs in enumerate(references):
        if not refs:
            raise InputError(f"item {i} has no references")
        for r in refs:
            k = sentence_index.setdefault(r, len(sentence_index))
            ref_counts[k] += 1
    ids = encode_sentences(tokenizer, list(sentence_index))
    lengths = np.array([len(t) for t in ids], dtype=np.int64)
    # bert_score tests "length == 2"; this is the same for [CLS] x [SEP]-style models and also
    # right for models with another number of special tokens.
    empty = lengths <= len(special_only(tokenizer))

    table = None
    if idf:
        keys = list(ref_counts)
        table = idf_table([ids[k] for k in keys], [ref_counts[k] for k in keys])
    weights = token_weights(tokenizer, ids, table)

    # bert_score's flattened (candidate, reference) list, and its distinct pairs.
    pair_index: dict[tuple[int, int], int] = {}
    flat: list[int] = []
    flat_c: list[int] = []
    flat_r: list[int] = []
    starts: list[int] = []
    for cand, refs in zip(candidates, references):
        starts.append(len(flat))
        c = sentence_index[cand]
        for ref in refs:
            r = sentence_index[ref]
            flat.append(pair_index.setdefault((c, r), len(pair_index)))
            flat_c.append(c)
            flat_r.append(r)
    pairs = list(pair_index)
    flat_arr = np.asarray(flat, dtype=np.int64)
    starts_arr = np.asarray(starts, dtype=np.int64)
    blank = empty[flat_c] | empty[flat_r]
    if padding_floor:
        floor_p = padded_in_batch(lengths[flat_r], batch_size)  # candidate tokens see padded refs
        floor_r = padded_in_batch(lengths[flat_c], batch_size)
    else:
        floor_p = floor_r = np.zeros(len(flat), dtype=bool)

    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    embs = embed(model, ids, layers, pad_id=pad_id, batch_size=batch_size, device=device)
    out: dict[int, LayerScores] = {}
    for layer in layers:
        ps = greedy_match(embs[layer], weights, pairs)
        p = np.where(floor_p, ps.p_floor[flat_arr], ps.p[flat_arr])
        r = np.where(floor_r, ps.r_floor[flat_arr], ps.r[flat_arr])
        flat_prf = combine(p, r, blank)
        # np.maximum propagates NaN like torch.max does in bert_score.
        prf = np.maximum.reduceat(flat_prf, starts_arr, axis=0)
        low = ps.low[flat_arr][~blank]
        out[layer] = LayerScores(prf, float(low.min(initial=np.inf)))
    return out


# --------------------------------------------------------------------------- the metric


def bert_score_hash(
    model: str, layer: int, idf: bool, baseline_id: str | None, transformers_version: str
) -> str:
    """bert_score's ``get_hash`` format, with our version and the baseline's id made explicit."""
    text = "{}_L{}{}_version=capeval-{}(hug_trans={})".format(
        model, layer, "_idf" if idf else "_no-idf", __version__, transformers_version
    )
    if baseline_id is not None:
        text += f"-rescaled({baseline_id})"
    return text


@register
class BERTScore(Metric):
    """BERTScore P, R, F (max over references, per component).

    Parameters
    ----------
    model : str, optional
        ``minilm`` (default: the packaged sentence-transformers/all-MiniLM-L6-v2), ``mpnet``
        (all-mpnet-base-v2, if present locally), a Hugging Face id, or a local model directory.
    num_layers : int, optional
        Layer whose token embeddings are used (0 = embedding output). Default: bert-score's
        tuned layer when it has one for the model; 6 for MiniLM-L6, 8 for all-mpnet-base-v2
        (why: ``capeval.resources.encoders``); otherwise required.
    idf : bool
        IDF weights from the references of this call, exactly as bert_score computes them.
    rescale_with_baseline : bool
        Apply X' = (X − b)/(1 − b) with the baseline capeval computed for the model (see
        ``capeval/metrics/_bertscore_baselines``), or with ``baseline`` when given.
    baseline : str or Path, optional
        A bert_score-format baseline file (implies rescaling).
    batch_size : int
        bert_score's ``batch_size`` (default 64, as there). It sets the encoder batch and, with
        ``padding_floor``, which pairs bert_score matches together (see below).
    padding_floor : bool
        Default True: reproduce bert_score exactly. bert_score matches ``batch_size``
        consecutive (candidate, reference) pairs in one zero-padded matrix, so a token whose
        best cosine is negative scores 0 instead whenever the other sentence is shorter than
        the longest one in that batch (issue #165: batched and one-at-a-time scores differ).
        False takes the true maxima, so no score depends on its neighbours.
    device : str
        ``"cpu"`` (default) or a torch device string.
    """

    family = "bertscore"
    variant = VARIANT
    outputs = tuple(
        OutputInfo(f"bertscore_{k}", "bertscore", VARIANT, (-1.0, 1.0), True, desc, CITATION)
        for k, desc in (
            ("p", "BERTScore precision (max over references)"),
            ("r", "BERTScore recall (max over references)"),
            ("f", "BERTScore F1 (max over references, separately from P and R)"),
        )
    )
    text_input = "raw"
    corpus_dependent = False  # per instance: True when idf is on (IDF comes from the references)

    def __init__(
        self,
        model: str | Path | None = None,
        num_layers: int | None = None,
        idf: bool = False,
        rescale_with_baseline: bool = False,
        baseline: str | Path | None = None,
        batch_size: int = 64,
        padding_floor: bool = True,
        device: str = "cpu",
    ) -> None:
        from ..resources.encoders import resolve_encoder

        for name, flag in (("idf", idf), ("padding_floor", padding_floor)):
            if not isinstance(flag, bool):
                raise InputError(f"bertscore: {name} must be True or False, got {flag!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"bertscore: batch_size must be a positive integer, got {batch_size!r}")
        self.encoder = resolve_encoder(model)
        if num_layers is None:
            num_layers = self.encoder.default_layer
            if num_layers is None:
                raise InputError(
                    f"bertscore: no default layer is known for encoder {self.encoder.name!r}; "
                    "pass num_layers (bert-score tunes it per model on WMT16)"
                )
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
            raise InputError(f"bertscore: num_layers must be a non-negative integer, got {num_layers!r}")
        self.num_layers = num_layers
        self.idf = idf
        self.corpus_dependent = idf
        self.rescale = bool(rescale_with_baseline or baseline is not None)
        self.baseline_path = baseline
        self.batch_size = batch_size
        self.padding_floor = padding_floor
        self.device = device

    def _baseline(self, revision: str) -> Baseline | None:
        if not self.rescale:
            return None
        if self.baseline_path is not None:
            return read_baseline(self.baseline_path)
        return packaged_baseline(self.encoder.name, revision)

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        import torch
        import transformers

        from ..resources.encoders import load_encoder, num_hidden_layers, weights_revision

        revision = weights_revision(self.encoder.location)
        baseline = self._baseline(revision)  # fail on a missing baseline before any encoding
        tokenizer, model = load_encoder(self.encoder.location, self.device)
        depth = num_hidden_layers(model)
        if self.num_layers > depth:
            raise InputError(
                f"bertscore: num_layers={self.num_layers}, but encoder {self.encoder.name!r} "
                f"has {depth} layers"
            )
        b = baseline.row(self.num_layers) if baseline is not None else None

        layer = score_rows(
            tokenizer, model, candidates, references, [self.num_layers],
            idf=self.idf, batch_size=self.batch_size, padding_floor=self.padding_floor,
            device=self.device,
        )[self.num_layers]
        prf = layer.prf
        if b is not None:
            # After the max over references, in float32, as bert_score does.
            prf = (prf - b) / (np.float32(1.0) - b)
        per_caption = {f"bertscore_{k}": prf[:, j].astype(np.float64) for j, k in enumerate("prf")}
        baseline_id = baseline.id if baseline is not None else None
        return MetricScores(
            corpus={k: float(np.mean(v)) for k, v in per_caption.items()},
            per_caption=per_caption,
            signature_fields={
                "model": self.encoder.name,
                "rev": revision,
                "layer": self.num_layers,
                "idf": self.idf,
                "rescale": baseline_id or "no",
                "mref": "max-per-component",
                "floor": f"batch{self.batch_size}" if self.padding_floor else "none",
                "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
                "device": self.device,
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "hash": bert_score_hash(
                    self.encoder.name, self.num_layers, self.idf, baseline_id, transformers.__version__
                ),
            },
            details={
                "baseline": None if b is None else {"id": baseline_id, "P": float(b[0]), "R": float(b[1]), "F": float(b[2])},
                # < 0: some score depends on padding_floor (and then on batch_size).
                "min_best_cosine": layer.min_best_cosine,
            },
        )
