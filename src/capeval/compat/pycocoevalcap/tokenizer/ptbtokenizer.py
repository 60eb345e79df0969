"""pycocoevalcap's ``PTBTokenizer`` without Java: capeval's pure-Python PTB tokenizer
(:mod:`capeval.text.ptb`) on the whole batch, which gives the jar pipeline's strings
(docs/TOKENIZER.md)."""
from __future__ import annotations

from ....errors import InputError
from ....text import tokenize as _tokenize
from .._inputs import read_breaks_as_spaces

#: The punctuation tokens the wrapper drops (applied by capeval's tokenizer; kept for code that
#: imports the name).
PUNCTUATIONS = ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                ".", "?", "!", ",", ":", "-", "--", "...", ";"]


class PTBTokenizer:
    """Tokenize, lower-case and drop punctuation, as pycocoevalcap 1.2's wrapper of CoreNLP 3.4.1."""

    def tokenize(self, captions_for_image):
        """``{image_id: [{"caption": str, ...}, ...]}`` -> ``{image_id: [tokenized str, ...]}``.

        Images with no captions are left out of the result, as in the original."""
        if not isinstance(captions_for_image, dict):
            raise InputError(f"PTBTokenizer.tokenize: expected a dict of image id -> list of annotations, "
                             f"got {type(captions_for_image).__name__}")
        image_id = []
        texts = []
        for k, anns in captions_for_image.items():
            for j, ann in enumerate(anns):
                try:
                    cap = ann["caption"]
                except (TypeError, KeyError, IndexError):
                    raise InputError(f"PTBTokenizer: annotation {j} of image {k!r} has no 'caption': {ann!r:.80}") from None
                if not isinstance(cap, str):
                    raise InputError(f"PTBTokenizer: caption {j} of image {k!r} is not a string: {cap!r:.80}")
                image_id.append(k)
                texts.append(cap)
        # The wrapper itself replaces "\n" by a space; the other line breaks are the difference.
        # One batch, as the wrapper writes one file: a caption's last token can depend on the
        # next caption's first word there (docs/TOKENIZER.md, "Context across lines").
        tokens = _tokenize(read_breaks_as_spaces(texts, "PTBTokenizer", harmless="\n"), "ptb-batch")
        out: dict = {}
        for k, t in zip(image_id, tokens):
            out.setdefault(k, []).append(t)
        return out
