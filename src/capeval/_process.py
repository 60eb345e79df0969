"""Whether capeval owns this interpreter.

True only in the ``capeval`` command (set by :func:`capeval.cli.main.main` before any command
runs), whose process runs nothing but capeval: there capeval may change process-wide state of
other libraries to start faster (:func:`capeval.scenegraph.parser.load_spacy`). In a user's
process, where capeval is a library, it stays False and capeval leaves other libraries as their
own imports would leave them.
"""
from __future__ import annotations

owns_interpreter = False
