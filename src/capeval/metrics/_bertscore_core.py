"""BERTScore as bert_score 0.3.12/0.3.13 computes it, in pure functions (token ids and weights,
embeddings of distinct sentences, greedy matching with bert_score's batch padding, per-row maxima);
why each step is exact: :class:`capeval.metrics.bertscore.BERTScore`."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._bertscore_idf import idf_table, reference_df
from ._bertscore_windows import cut_tokens, plan_windows, stitch, token_window

PAIR_BATCH = 1024  # pairs per greedy-matching batch; only memory and speed depend on it


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


def encode_sentences(tokenizer, sentences: Sequence[str], *, full: bool = False) -> list[list[int]]:
    """Token ids with special tokens, as bert_score's ``sent_encode`` (strip, truncate); with
    ``full``, not truncated (``long_text=windows``)."""
    stripped = [s.strip() for s in sentences]
    out: list[list[int] | None] = [None] * len(stripped)
    todo = [i for i, s in enumerate(stripped) if s]
    if todo:
        # The Rust backend rejects a huge max_length: nothing to truncate to then.
        limit = None if full else token_window(tokenizer)
        from ..resources.encoders import tokenizer_lock

        with tokenizer_lock(tokenizer):  # shared tokenizers are not safe to call from two threads
            if full:
                # transformers logs "sequence length is longer than the specified maximum" once:
                # the windows are what make such a sequence fit.
                getattr(tokenizer, "deprecation_warnings", {})[
                    "sequence-length-is-longer-than-the-specified-maximum"] = True
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


def reference_counts(tokenizer, references: Sequence[Sequence[str]], *,
                     full: bool = False) -> tuple[dict[int, int], int]:
    """``(df, M)`` of the flattened ``references``, each distinct reference tokenized once
    (``full``: not truncated, as ``long_text=windows`` reads them)."""
    occurrences: Counter = Counter(ref for refs in references for ref in refs)
    distinct = list(occurrences)
    ids = encode_sentences(tokenizer, distinct, full=full)
    counts = [occurrences[s] for s in distinct]
    return reference_df(ids, counts), int(sum(counts))


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


def cpu_workers(device: str) -> int:
    """How many of capeval's torch threads one call uses at once
    (:func:`capeval.resources.torch_runner.default_workers`); only speed depends on it."""
    from ..resources.torch_runner import default_workers

    return default_workers(device)


def run_batches(work, batches: Sequence, workers: int, *, progress: bool = True) -> None:
    """``work(batch)`` for every batch on capeval's torch threads (one intra-op thread each),
    ``workers`` at a time (:func:`capeval.resources.torch_runner.run`).

    With ``progress``, :func:`capeval.progress.report` counts the batches' items, from the
    calling thread, in batch order. The calling thread's torch settings are left as they are.
    """
    from ..resources.torch_runner import run

    run(work, batches, workers=workers, sizes=[len(b) for b in batches], progress=progress)


def embed(
    model,
    ids_list: Sequence[Sequence[int]],
    layers: Sequence[int],
    *,
    device: str = "cpu",
    workers: int | None = None,
) -> dict[int, list]:
    """L2-normalised token embeddings of each sentence at each requested layer (float32 tensors).

    Every sentence goes through the model in a batch of the torch runner's fixed shape
    (:data:`~capeval.resources.torch_runner.ROWS` sentences of its own token length, so no
    position is padding), on threads with one intra-op thread each: a sentence's embeddings
    depend on its token ids alone. With one layer the model is cut after that layer (same
    numbers, less work). ``workers``: threads used at once (default :func:`cpu_workers`).
    """
    import torch

    from ..resources.encoders import truncated
    from ..resources.torch_runner import map_fixed

    layers = list(layers)
    runner, use_hidden = model, True
    if len(layers) == 1:
        # Not for several layers: transformers installs its hidden-state hooks on the blocks,
        # which a cut view shares with the model, so each new view would add another set.
        cut = truncated(model, layers[0])
        if cut is not None:
            runner, use_hidden = cut, False

    def forward(idx: list[int]) -> list[dict]:
        x = torch.tensor([list(ids_list[i]) for i in idx], dtype=torch.long)
        mask = torch.ones_like(x)
        out = runner(x.to(device), attention_mask=mask.to(device), output_hidden_states=use_hidden)
        rows: list[dict] = [{} for _ in idx]
        for layer in layers:
            h = out.hidden_states[layer] if use_hidden else out[0]
            h = h.float().cpu()
            h = h / torch.norm(h, dim=-1).unsqueeze(-1)
            for row, vec in zip(rows, h.unbind(0)):
                row[layer] = vec
        return rows

    per = map_fixed(forward, [len(t) for t in ids_list],
                    workers=cpu_workers(device) if workers is None else workers, progress=True)
    return {layer: [p[layer] for p in per] for layer in layers}


def _encode(tokenizer, sentences: list[str], windows: bool, cut: dict[str, int] | None) -> list[list[int]]:
    """Token ids (whole with ``windows``); ``cut`` receives what truncation dropped otherwise."""
    ids = encode_sentences(tokenizer, sentences, full=windows)
    if cut is not None and not windows:
        cut.update(cut_tokens(sentences, ids, token_window(tokenizer),
                              lambda some: encode_sentences(tokenizer, some, full=True)))
    return ids


def embed_windows(tokenizer, model, ids_list: Sequence[Sequence[int]], layers: Sequence[int], *,
                  device: str = "cpu", workers: int | None = None) -> dict[int, list]:
    """:func:`embed` for any length (``long_text=windows``, ``_bertscore_windows``): windows are
    sentences of the same fixed-shape batches, so an embedding still depends on its sentence alone."""
    limit = token_window(tokenizer)
    if limit is None or max((len(t) for t in ids_list), default=0) <= limit:
        return embed(model, ids_list, layers, device=device, workers=workers)
    if limit <= 2 or len(special_only(tokenizer)) != 2:
        raise InputError("bertscore: long_text=windows needs one special token before and one after a "
                         "sentence (BERT, RoBERTa); use long_text=truncate")
    pieces, plans = plan_windows(ids_list, limit)
    return stitch(embed(model, pieces, layers, device=device, workers=workers), plans, layers)


# --------------------------------------------------------------------------- greedy matching


@dataclass
class PairScores:
    """Per distinct (candidate, reference) pair, float32.

    ``p``/``r``: weighted means of the true best cosines; ``p_floor``/``r_floor``: the same with
    each best cosine floored at 0, which is what bert_score computes when the other sentence is
    padded in its batch; ``low``: the lowest best cosine of any token of the pair.
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
    *,
    workers: int = 1,
) -> PairScores:
    """Greedy cosine matching for (candidate, reference) sentence-index pairs.

    ``emb[k]``: normalised token embeddings of sentence k; ``weights[k]``: its weights, summing
    to 1. Pairs are matched in batches of one (candidate length, reference length) shape, so no
    position is padding; batches run on ``workers`` threads (:func:`run_batches`).
    """
    import torch

    n = len(pairs)
    cols = [np.zeros(n, dtype=np.float32) for _ in range(5)]
    shapes: dict[tuple[int, int], list[int]] = {}
    for q, (c, r) in enumerate(pairs):
        shapes.setdefault((emb[c].shape[0], emb[r].shape[0]), []).append(q)
    batches = [
        members[s : s + PAIR_BATCH]
        for _, members in sorted(shapes.items())
        for s in range(0, len(members), PAIR_BATCH)
    ]

    def work(idx: list[int]) -> None:
        c_idx = [pairs[q][0] for q in idx]
        r_idx = [pairs[q][1] for q in idx]
        hc = torch.stack([emb[k] for k in c_idx])
        hr = torch.stack([emb[k] for k in r_idx])
        wc = torch.from_numpy(np.stack([weights[k] for k in c_idx]))
        wr = torch.from_numpy(np.stack([weights[k] for k in r_idx]))
        sim = torch.bmm(hc, hr.transpose(1, 2))
        best_p = sim.amax(dim=2)  # per candidate token
        best_r = sim.amax(dim=1)  # per reference token
        low = torch.minimum(best_p.amin(dim=1), best_r.amin(dim=1))
        for col, val in zip(
            cols,
            (
                (best_p * wc).sum(dim=1),
                (best_r * wr).sum(dim=1),
                (best_p.clamp(min=0.0) * wc).sum(dim=1),
                (best_r.clamp(min=0.0) * wr).sum(dim=1),
                low,
            ),
        ):
            col[idx] = val.numpy()

    run_batches(work, batches, workers, progress=False)
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


def _flattened(candidates: Sequence[str], references: Sequence[Sequence[str]], sentence_index: dict[str, int]):
    """bert_score's flattened (candidate, reference) list and its distinct pairs: ``(pairs,
    distinct pair of each flattened position, first position of each row, candidate and
    reference sentence of each position)``."""
    pair_index: dict[tuple[int, int], int] = {}
    flat: list[int] = []
    flat_c: list[int] = []
    flat_r: list[int] = []
    starts: list[int] = []
    for cand, refs in zip(candidates, references):
        starts.append(len(flat))
        c = sentence_index[cand]
        for ref in refs:
            k = sentence_index[ref]
            flat.append(pair_index.setdefault((c, k), len(pair_index)))
            flat_c.append(c)
            flat_r.append(k)
    return (list(pair_index), np.asarray(flat, dtype=np.int64), np.asarray(starts, dtype=np.int64),
            flat_c, flat_r)


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
    idf_weights: tuple[dict[int, float], float] | None = None,
    long_text: str = "truncate",
    cut: dict[str, int] | None = None,
) -> dict[int, LayerScores]:
    """BERTScore of every row at each layer in ``layers`` (max over references per component).

    ``padding_floor``: reproduce bert_score's zero floor for sentences padded within its
    matching batches of ``batch_size`` consecutive (candidate, reference) pairs.
    ``idf_weights``: with ``idf``, the :func:`idf_table` to weight with (a larger input's, from
    its pre-pass) instead of the one of these references. ``long_text``: ``truncate`` (bert_score's
    truncation at the tokenizer's limit) or ``windows`` (:func:`embed_windows`); ``cut``, when
    given, receives the tokens truncation dropped from each sentence it cut.
    """
    if len(candidates) != len(references):
        raise InputError(f"{len(candidates)} candidates but {len(references)} reference lists")
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    sentence_index: dict[str, int] = {}
    for s in candidates:
        sentence_index.setdefault(s, len(sentence_index))
    ref_counts: Counter = Counter()
    for i, refs in enumerate(references):
        if not refs:
            raise InputError(f"item {i} has no references")
        for ref in refs:
            k = sentence_index.setdefault(ref, len(sentence_index))
            ref_counts[k] += 1
    windows = long_text == "windows"
    ids = _encode(tokenizer, list(sentence_index), windows, cut)
    lengths = np.array([len(t) for t in ids], dtype=np.int64)
    # bert_score tests "length == 2"; this is the same for [CLS] x [SEP]-style models and also
    # right for models with another number of special tokens.
    empty = lengths <= len(special_only(tokenizer))

    table = None
    if idf and idf_weights is not None:
        table = idf_weights
    elif idf:
        keys = list(ref_counts)
        table = idf_table([ids[k] for k in keys], [ref_counts[k] for k in keys])
    weights = token_weights(tokenizer, ids, table)

    pairs, flat_arr, starts_arr, flat_c, flat_r = _flattened(candidates, references, sentence_index)
    blank = empty[flat_c] | empty[flat_r]
    if padding_floor:
        floor_p = padded_in_batch(lengths[flat_r], batch_size)  # candidate tokens see padded refs
        floor_r = padded_in_batch(lengths[flat_c], batch_size)
    else:
        floor_p = floor_r = np.zeros(len(flat_arr), dtype=bool)

    workers = cpu_workers(device)
    embs = (embed_windows(tokenizer, model, ids, layers, device=device, workers=workers) if windows
            else embed(model, ids, layers, device=device, workers=workers))
    out: dict[int, LayerScores] = {}
    for layer in layers:
        ps = greedy_match(embs[layer], weights, pairs, workers=workers)
        p = np.where(floor_p, ps.p_floor[flat_arr], ps.p[flat_arr])
        r = np.where(floor_r, ps.r_floor[flat_arr], ps.r[flat_arr])
        flat_prf = combine(p, r, blank)
        # np.maximum propagates NaN like torch.max does in bert_score.
        prf = np.maximum.reduceat(flat_prf, starts_arr, axis=0)
        low = ps.low[flat_arr][~blank]
        out[layer] = LayerScores(prf, float(low.min(initial=np.inf)))
    return out
