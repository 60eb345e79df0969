"""Model judges: a language or vision-language model asked to rate a caption (docs/JUDGES.md).

* :mod:`.backend` -- requests and replies, and the OpenAI-compatible HTTP backend (vLLM,
  llama.cpp's server, Ollama, OpenAI);
* :mod:`.local` -- a ``transformers`` model from a local directory, greedy, with decoding
  constrained to the answer's form;
* :mod:`.cache` -- the response cache (JSON entries named by their digest, keyed by backend,
  model, prompt, image digest and decoding parameters);
* :mod:`.prompts` -- CLAIR's and FLEUR's prompts;
* :mod:`.answers` -- parsing answers and FLEUR's score smoothing;
* :mod:`.runner` -- one judged batch: cache, backend, retries, failures, token counts;
* :mod:`.metric` -- the ``clair``, ``fleur`` and ``reffleur`` families.
* :mod:`.pairwise` -- the ``pairjudge`` family: both captions of a pair, asked in both orders.

Nothing here imports torch or transformers at module level.
"""
