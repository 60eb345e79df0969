"""spaCy docs -> the per-sentence word rows the dependency graph is built from, with the
pipeline's token-local tail (attribute ruler, rule or lookup lemmatizer) run only where its
answer is not yet known.

A text's parse comes from the tagger and the parser. The components after them look at one
token at a time: the attribute ruler's one-token patterns read the token's text, tag,
dependency label and is-space flag, and the lemmatizer reads the text and what the ruler set
(part of speech, morphology). So everything the scene-graph rules read from a token (its
text, tag, dependency label, and lemma after SPICE-py's lemma repair) is a function of the
token's (text, tag, dependency label) as the parser leaves them, unless one of the ruler's
multi-token patterns matches in the doc. The tail is therefore run on a doc only when one of
its tokens is new or a multi-token pattern matches there (checked with a matcher holding only
those patterns); otherwise each token's answer is read from a memo filled by earlier docs.
That spares the ruler's full matcher and the lemmatizer on most docs, with the same answers:
the tail itself computes every memo entry, and the rule lemmatizer's own cache is keyed by
(text, part of speech, morphology), so its answer for a token does not depend on which docs
came before.

Pipelines whose tail is anything else (other components after the parser, ruler patterns that
read other attributes or use operators) run whole, exactly as spaCy runs them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from .depgraph import Word

# What a one-token ruler pattern may read for the memo key (text, tag, dep) to decide it.
_KEYED_ATTRS = frozenset({"ORTH", "TEXT", "LOWER", "TAG", "DEP", "IS_SPACE"})
LemmaFix = Callable[[str, str, str], str]
#: One sentence: its words, each word's head (its own index for a root) and dependency label.
Sentence = tuple[list[Word], list[int], list[str]]


def _tail_split(nlp):
    """(names of the tail components, ruler or None, lemmatizer or None), or None when the
    pipeline's tail is not made of the token-local components this module knows."""
    import spacy.lang.en.lemmatizer as en
    from spacy.pipeline import AttributeRuler, Lemmatizer

    # Exact classes: a subclass may read more than one token (the English lemmatizer adds
    # only a base-form test on the token's own part of speech and morphology).
    known = (AttributeRuler, Lemmatizer, en.EnglishLemmatizer)
    names = list(nlp.pipe_names)
    start = len(names)
    while start > 0 and type(nlp.get_pipe(names[start - 1])) in known:
        start -= 1
    tail = [nlp.get_pipe(n) for n in names[start:]]
    rulers = [p for p in tail if isinstance(p, AttributeRuler)]
    lemmatizers = [p for p in tail if isinstance(p, Lemmatizer)]
    if not tail or len(rulers) > 1 or len(lemmatizers) > 1:
        return None
    if lemmatizers and (lemmatizers[0].mode not in ("rule", "lookup")
                        or (rulers and tail.index(lemmatizers[0]) < tail.index(rulers[0]))):
        return None
    ruler = rulers[0] if rulers else None
    if ruler is not None:
        for entry in ruler.patterns:
            for pattern in entry["patterns"]:
                if not isinstance(pattern, list):  # a Doc pattern (phrase matcher): not analysed
                    return None
                for spec in pattern:
                    if "OP" in spec:
                        return None
                    if len(pattern) == 1 and not set(spec) <= _KEYED_ATTRS:
                        return None
    return names[start:], ruler, (lemmatizers[0] if lemmatizers else None)


# Columns of Annotator.doc_rows' token array, and the pattern keys that name them.
_COL_HEAD, _COL_SENT_START = 4, 5
_COLUMNS = {"ORTH": 0, "TEXT": 0, "TAG": 1, "DEP": 2, "LOWER": 3}


def _triggers(vocab, patterns: list[list[dict]]) -> list[tuple[int, frozenset]] | None:
    """Per multi-token pattern, one (column, hashes) a doc must hold for the pattern to match
    there: the token key with the fewest literal values (a string, or ``IN`` a list). None when
    some pattern has no such key, so every doc has to go through the matcher."""
    out = []
    for pattern in patterns:
        best = None
        for spec in pattern:
            for attr, value in spec.items():
                if attr not in _COLUMNS:
                    continue
                if isinstance(value, str):
                    values = [value]
                elif isinstance(value, dict) and set(value) == {"IN"}:
                    values = list(value["IN"])
                else:
                    continue
                if best is None or len(values) < len(best[1]):
                    best = (_COLUMNS[attr], values)
        if best is None:
            return None
        out.append((best[0], frozenset(vocab.strings.add(v) for v in best[1])))
    return out


class Annotator:
    """``sentences(texts, batch_size)`` -> per text, its :data:`Sentence` rows."""

    def __init__(self, nlp, lemma_fix: LemmaFix | None = None, memo: bool = True):
        self.nlp = nlp
        self.lemma_fix = lemma_fix
        split = _tail_split(nlp) if memo else None
        self.memo_enabled = split is not None
        self._tail_names: list[str] = []
        self._ruler = self._lemmatizer = self._multi = None
        self._triggers: list[tuple[int, frozenset]] | None = None
        # (orth, tag, dep) hashes as the parser leaves them -> (text, lemma, tag, dep) as read.
        self._memo: dict[tuple[int, int, int], tuple[str, str, str, str]] = {}
        if split is not None:
            self._tail_names, self._ruler, self._lemmatizer = split
            if self._ruler is not None:
                from spacy.matcher import Matcher

                multi = [p for e in self._ruler.patterns for p in e["patterns"] if len(p) > 1]
                if multi:
                    self._multi = Matcher(nlp.vocab)
                    self._multi.add("multi", multi)
                    self._triggers = _triggers(nlp.vocab, multi)
        self.tail_runs = 0

    def _read(self, t) -> tuple[str, str, str, str]:
        lemma = (t.lemma_ or t.text).strip().lower()
        if self.lemma_fix is not None:
            lemma = self.lemma_fix(t.text, lemma, t.tag_)
        return t.text, lemma, t.tag_, t.dep_

    def doc_rows(self, doc) -> list[Sentence]:
        """The rows of a doc that went through the components before the tail (the whole
        pipeline when the memo is off)."""
        from spacy.attrs import DEP, HEAD, LOWER, ORTH, SENT_START, TAG

        arr = doc.to_array([ORTH, TAG, DEP, LOWER, HEAD, SENT_START])
        if not self.memo_enabled:
            read = [self._read(t) for t in doc]
        else:
            keys = [tuple(k) for k in arr[:, :3].tolist()]
            memo = self._memo
            read = [memo.get(k) for k in keys]
            multi = self._multi is not None and self._may_match(arr) and bool(self._multi(doc, allow_missing=True))
            if multi or None in read:
                self.tail_runs += 1
                if self._ruler is not None:
                    self._ruler(doc)
                if self._lemmatizer is not None:
                    self._lemmatizer(doc)
                read = [self._read(t) for t in doc]
                if not multi:  # a multi-token match makes a token's answer depend on its neighbours
                    memo.update(zip(keys, read))
        n = len(read)
        heads = (arr[:, _COL_HEAD].astype("int64") + range(n)).tolist() if n else []  # stored relative
        # Sentences as Doc.sents cuts them: at each token whose sentence-start flag is 1.
        starts = [i for i, f in enumerate(arr[:, _COL_SENT_START].astype("int64").tolist()) if f == 1 or i == 0]
        out = []
        for start, end in zip(starts, starts[1:] + [n]):
            words = [Word(i - start, *read[i][:3]) for i in range(start, end)]
            out.append((words, [h - start for h in heads[start:end]], [read[i][3] for i in range(start, end)]))
        return out

    def _may_match(self, arr) -> bool:
        """False when no multi-token pattern can match: one of each pattern's tokens needs a
        value that no token of the doc has."""
        if self._triggers is None:
            return True
        columns: dict[int, set] = {}
        for col, values in self._triggers:
            have = columns.get(col)
            if have is None:
                have = columns[col] = set(arr[:, col].tolist())
            if not values.isdisjoint(have):
                return True
        return False

    def sentences(self, texts: Iterable[str], batch_size: int, n_process: int = 1) -> Iterator[list[Sentence]]:
        for doc in self.nlp.pipe(texts, batch_size=batch_size, n_process=n_process, disable=self._tail_names):
            yield self.doc_rows(doc)
