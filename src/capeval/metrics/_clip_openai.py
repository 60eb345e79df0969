"""The OpenAI CLIP architecture (ViT image tower), built from an OpenAI-format state dict.

CLIP (OpenAI's ``ViT-B-32.pt``) and PAC-S (``clip_ViT-B-32.pth``, ``{"state_dict": ...}``) are
released as state dicts of OpenAI's ``clip.model.CLIP``. This module reads the sizes from the
state dict as ``clip.model.build_model`` does and runs the same computation with plain torch,
so the OpenAI-format backend needs neither the ``clip`` package nor torchvision. Half precision
follows ``clip.load`` on a GPU: linear, convolution and projection weights in float16, layer
norms computed in float32 and cast back.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from ..errors import InputError, ResourceNotFound

#: Entries of some OpenAI-format files that are no weights: sizes (OpenAI's archive) and the
#: causal mask (archives traced from modules that keep it as a buffer).
_NOT_WEIGHTS = ("input_resolution", "context_length", "vocab_size", "attn_mask")


def read_state_dict(path: str | Path) -> dict:
    """The tensors of an OpenAI-format checkpoint: a TorchScript archive (OpenAI's download),
    a plain state dict, or ``{"state_dict": ...}`` (PAC-S), with a DataParallel ``module.``
    prefix removed."""
    import torch

    import warnings

    path = Path(path)
    with warnings.catch_warnings():
        # torch.load hands a TorchScript archive to torch.jit.load, with a warning about it.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            sd = torch.load(str(path), map_location="cpu", weights_only=True)
        except Exception:  # noqa: BLE001 - not a pickled state dict: a TorchScript archive?
            try:
                sd = torch.jit.load(str(path), map_location="cpu")
            except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
                raise ResourceNotFound(f"{path} is not a CLIP checkpoint torch can read: {exc}") from None
    if isinstance(sd, torch.nn.Module) or isinstance(sd, torch.jit.ScriptModule):
        sd = sd.state_dict()
    if isinstance(sd, dict) and isinstance(sd.get("state_dict"), dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict) or "visual.conv1.weight" not in {k.removeprefix("module.") for k in sd}:
        if isinstance(sd, dict) and "visual.layer1.0.conv1.weight" in sd:
            raise InputError(f"{path}: ResNet CLIP towers are not supported; use a ViT checkpoint (ViT-B/32)")
        raise ResourceNotFound(f"{path} is not an OpenAI-format CLIP ViT state dict (no visual.conv1.weight)")
    return {k.removeprefix("module."): v for k, v in sd.items() if k.removeprefix("module.") not in _NOT_WEIGHTS}


def _count_blocks(sd: dict, prefix: str) -> int:
    return len({k[len(prefix):].split(".")[0] for k in sd if k.startswith(prefix)})


def build(sd: dict, quick_gelu: bool = True):
    """An :class:`OpenAICLIP` with the sizes the state dict implies and its weights loaded."""
    vision_width = sd["visual.conv1.weight"].shape[0]
    patch = sd["visual.conv1.weight"].shape[-1]
    grid = round((sd["visual.positional_embedding"].shape[0] - 1) ** 0.5)
    width = sd["ln_final.weight"].shape[0]
    model = _model_class()(
        embed_dim=sd["text_projection"].shape[1],
        image_resolution=patch * grid,
        vision_layers=_count_blocks(sd, "visual.transformer.resblocks."),
        vision_width=vision_width,
        vision_patch=patch,
        context_length=sd["positional_embedding"].shape[0],
        vocab_size=sd["token_embedding.weight"].shape[0],
        width=width,
        layers=_count_blocks(sd, "transformer.resblocks."),
        quick_gelu=quick_gelu,
    )
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=False)
    if missing or unexpected:
        raise ResourceNotFound(
            f"CLIP state dict does not fit the ViT architecture: missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]}"
        )
    return model.eval()


_CLASS = None


def _model_class():
    """The module classes, defined on first use so importing this file does not import torch."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    import torch
    from torch import nn

    class LayerNorm(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.float()).to(x.dtype)

    class QuickGELU(nn.Module):
        def forward(self, x):
            return x * torch.sigmoid(1.702 * x)

    class Block(nn.Module):
        def __init__(self, width: int, heads: int, quick_gelu: bool) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
            self.ln_1 = LayerNorm(width)
            self.mlp = nn.Sequential(OrderedDict([
                ("c_fc", nn.Linear(width, width * 4)),
                ("gelu", QuickGELU() if quick_gelu else nn.GELU()),
                ("c_proj", nn.Linear(width * 4, width)),
            ]))
            self.ln_2 = LayerNorm(width)

        def forward(self, x, mask):
            y = self.ln_1(x)
            x = x + self.attn(y, y, y, need_weights=False, attn_mask=mask)[0]
            return x + self.mlp(self.ln_2(x))

    class Tower(nn.Module):
        def __init__(self, width: int, layers: int, quick_gelu: bool) -> None:
            super().__init__()
            # OpenAI's head size is 64 in every released model.
            self.resblocks = nn.ModuleList(Block(width, width // 64, quick_gelu) for _ in range(layers))

        def forward(self, x, mask=None):
            for block in self.resblocks:
                x = block(x, mask)
            return x

    class Visual(nn.Module):
        def __init__(self, resolution: int, patch: int, width: int, layers: int, out: int, quick_gelu: bool):
            super().__init__()
            self.input_resolution = resolution
            self.conv1 = nn.Conv2d(3, width, kernel_size=patch, stride=patch, bias=False)
            self.class_embedding = nn.Parameter(torch.empty(width))
            self.positional_embedding = nn.Parameter(torch.empty((resolution // patch) ** 2 + 1, width))
            self.ln_pre = LayerNorm(width)
            self.transformer = Tower(width, layers, quick_gelu)
            self.ln_post = LayerNorm(width)
            self.proj = nn.Parameter(torch.empty(width, out))

        def forward(self, x):
            x = self.conv1(x.to(self.conv1.weight.dtype))
            x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
            cls = self.class_embedding.to(x.dtype).expand(x.shape[0], 1, -1)
            x = torch.cat([cls, x], dim=1) + self.positional_embedding.to(x.dtype)
            x = self.transformer(self.ln_pre(x))
            return self.ln_post(x[:, 0, :]) @ self.proj

    class OpenAICLIP(nn.Module):
        def __init__(self, *, embed_dim, image_resolution, vision_layers, vision_width, vision_patch,
                     context_length, vocab_size, width, layers, quick_gelu):
            super().__init__()
            self.context_length = context_length
            self.visual = Visual(image_resolution, vision_patch, vision_width, vision_layers, embed_dim, quick_gelu)
            self.transformer = Tower(width, layers, quick_gelu)
            self.token_embedding = nn.Embedding(vocab_size, width)
            self.positional_embedding = nn.Parameter(torch.empty(context_length, width))
            self.ln_final = LayerNorm(width)
            self.text_projection = nn.Parameter(torch.empty(width, embed_dim))
            self.logit_scale = nn.Parameter(torch.ones([]))
            mask = torch.full((context_length, context_length), float("-inf")).triu_(1)
            self.register_buffer("attn_mask", mask, persistent=False)

        @property
        def dtype(self):
            return self.visual.conv1.weight.dtype

        def encode_image(self, pixels):
            return self.visual(pixels.to(self.dtype))

        def encode_text(self, ids):
            # ids may be shorter than the context (padding cut after the longest row): attention is
            # causal, so no position up to a row's end token sees what follows it.
            n = ids.shape[1]
            x = self.token_embedding(ids).to(self.dtype) + self.positional_embedding[:n].to(self.dtype)
            x = self.transformer(x, self.attn_mask[:n, :n].to(x.dtype))
            x = self.ln_final(x)
            # The end token has the largest id, so argmax finds it (OpenAI's pooling).
            return x[torch.arange(x.shape[0]), ids.argmax(dim=-1)] @ self.text_projection.to(x.dtype)

        def half_weights(self):
            """``clip.model.convert_weights``: the weights that float16 inference keeps in half."""
            for module in self.modules():
                if isinstance(module, (nn.Conv2d, nn.Linear)):
                    module.weight.data = module.weight.data.half()
                    if module.bias is not None:
                        module.bias.data = module.bias.data.half()
                if isinstance(module, nn.MultiheadAttention):
                    for name in ("in_proj_weight", "in_proj_bias"):
                        getattr(module, name).data = getattr(module, name).data.half()
            self.text_projection.data = self.text_projection.data.half()
            self.visual.proj.data = self.visual.proj.data.half()
            return self

    _CLASS = OpenAICLIP
    return _CLASS
