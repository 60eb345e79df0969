"""pycocoevalcap 1.2's API computed by capeval: change ``from pycocoevalcap...`` to
``from capeval.compat.pycocoevalcap...`` and nothing else.

Same module paths (``eval.COCOEvalCap``, ``tokenizer.ptbtokenizer.PTBTokenizer``, ``bleu.bleu.Bleu``,
``meteor.meteor.Meteor``, ``rouge.rouge.Rouge``, ``cider.cider.Cider``, ``spice.spice.Spice``),
constructor arguments, ``compute_score``/``tokenize``/``method`` signatures, return types and
printed lines. The numbers equal pycocoevalcap's (tests/compat), except on purpose:

* ``Spice`` is SPICE-py (spaCy + WordNet), an approximation of the SPICE 1.0 jar, returned in the
  jar's per-image format;
* every line-break character in a caption is read as a space (pycocoevalcap's tokenizer does this
  for ``\\n`` only and misaligns captions at the others; its ROUGE-L keeps them inside tokens
  and its METEOR protocol breaks on them).

Each of these is announced once per process through :mod:`warnings`
(:class:`capeval.compat.CompatNotice`). Bad input raises :class:`capeval.errors.InputError` naming
the image id where pycocoevalcap would fail an ``assert``. No Java is used.
"""
