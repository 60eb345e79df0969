"""Streaming, parallel and distributed scoring of inputs of any length (``capeval.score_stream``).

Modules: ``readers`` (chunked input), ``images`` (rows' image paths, by ``capeval score``'s
rules), ``chunks`` (the pure chunk functions), ``dfstore`` (CIDEr
df of a large reference set), ``engines`` (local processes, Ray), ``store`` (resumable run
folder), ``run`` (the driver). Row files are written by ``capeval.rowfiles``, shared with
in-memory results.
"""
from .run import DEFAULT_CHUNK, score_stream, streamable

__all__ = ["score_stream", "streamable", "DEFAULT_CHUNK"]
