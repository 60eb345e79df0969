"""Scene graphs for SPICE-style evaluation.

``annotate``  spaCy docs -> word rows, the token-local pipeline tail memoised per token
``depgraph``  spaCy parse -> collapsed, CC-processed UD-style dependency graph
``rules``     dependency graph -> (object), (object, attribute), (subject, relation, object)
``lemmas``    lemma repair ("riding" -> "ride", not "rid")
``synonyms``  word -> WordNet 3.0 synsets (via :mod:`capeval.resources.wordnet`)
``wnfacts``   the WordNet facts SPICE-py needs, read from the database files as NLTK answers them
``lexicon``   those facts memoised per word, on disk too
``graph``     SPICE's scene-graph merging, tuple matching and F-scores
``parser``    batched, cached spaCy parsing
``scorer``    the pieces together: ``PySpiceScorer``
``jar``       the original spice-1.0.jar as a subprocess (needs CoreNLP 3.6.0)

Importing this package is cheap; spaCy, NLTK and WordNet load on first use.
"""
