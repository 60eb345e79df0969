"""QACE: question-answering caption evaluation (Lee et al., Findings of EMNLP 2021).

A candidate caption is turned into questions whose answers are spans of the candidate; the
questions are answered from each reference (QACE-Ref) or from the image (QACE-Img) and the two
answers are compared. Every score comes with its question/answer table.

``types``       Question, AnswerRow, Explanation (the table) and component score names
``extract``     answer candidates: spaCy noun chunks, in text order
``qgen``        offline question generation from the spaCy parse (role -> wh-question)
``graphqa``     offline question answering over a reference's scene graph
``similarity``  SQuAD token F1 and BERTScore (our implementation) between answers
``pipeline``    the pieces together, with the reference reduction (mean / max / merged)
``hf``          the paper's neural backends (T5 QG, T5 QA, visual QA) by Hugging Face id or path

Importing this package is cheap; spaCy, WordNet, vectors and torch load on first use.
"""
