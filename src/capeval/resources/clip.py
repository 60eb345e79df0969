"""Where the image-based metrics find CLIP weights and CLIP's BPE merges file, offline.

Nothing is downloaded. The defaults are the places a user's machine already holds them: the
``clip`` package's download folder (``~/.cache/clip``), capeval's cache, and the merges file
that the ``clip`` and ``open_clip`` packages ship.
"""
from __future__ import annotations

import os
from pathlib import Path

from .resolver import ResourceSpec, register_resource, resolve

CLIP_VIT_B32 = register_resource(
    ResourceSpec(
        name="clip-vit-b32",
        env="CAPEVAL_CLIP_MODEL",
        defaults=("~/.cache/clip/ViT-B-32.pt", "{cache}/clip/ViT-B-32.pt"),
        install_hint="CLIP-S and RefCLIP-S use OpenAI's CLIP ViT-B/32 checkpoint. Put ViT-B-32.pt (the file "
        "`clip.load('ViT-B/32')` downloads, SHA-256 "
        "40d365715913c9da98579312b702a82c18be219cc2a73407c4526f58eba950af) in ~/.cache/clip/, or set CAPEVAL_CLIP_MODEL "
        "to it, or pass -O clip_s.model=PATH (a file, or a transformers CLIPModel directory).",
    )
)
PACS_VIT_B32 = register_resource(
    ResourceSpec(
        name="pacs-vit-b32",
        env="CAPEVAL_PACS_MODEL",
        defaults=("{cache}/clip/pacs_clip_ViT-B-32.pth",),
        install_hint="PAC-S and RefPAC-S use the PAC-S checkpoint released with aimagelab/pacscore "
        "(checkpoints/clip_ViT-B-32.pth). Save it as ~/.cache/capeval/clip/pacs_clip_ViT-B-32.pth, or set "
        "CAPEVAL_PACS_MODEL to it, or pass -O pac_s.model=PATH.",
    )
)


def _open_clip_copy() -> Path | None:
    """open_clip ships the same merges file; find it without importing open_clip (which imports
    torchvision)."""
    from .resolver import package_dir

    base = package_dir("open_clip")
    p = base / "bpe_simple_vocab_16e6.txt.gz" if base is not None else None
    return p if p is not None and p.is_file() else None


CLIP_BPE = register_resource(
    ResourceSpec(
        name="clip-bpe",
        env="CAPEVAL_CLIP_BPE",
        package="clip",
        relpath="bpe_simple_vocab_16e6.txt.gz",
        finder=_open_clip_copy,
        defaults=("{cache}/clip/bpe_simple_vocab_16e6.txt.gz",),
        install_hint="The OpenAI-format CLIP backend tokenizes with CLIP's BPE merges file "
        "bpe_simple_vocab_16e6.txt.gz (shipped inside the openai-clip and open_clip_torch wheels). Copy it to "
        "~/.cache/capeval/clip/, or set CAPEVAL_CLIP_BPE to it, or pass -O clip_s.tokenizer=PATH.",
    )
)


def clip_bpe_path(path: str | os.PathLike | None = None) -> Path:
    """The merges file: ``path`` when given, else ``$CAPEVAL_CLIP_BPE``, the ``clip`` package's
    copy, open_clip's copy, or capeval's cache."""
    return resolve(CLIP_BPE.name, path)
