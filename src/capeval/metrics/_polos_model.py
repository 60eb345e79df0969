"""Polos's network (``polos`` 0.1.3, ``PolosEstimator``) run with plain torch from the user's
checkpoint: the checkpoint and its ``hparams.yaml``, the RoBERTa sentence encoder with its
layer-wise scalar mix, CLIP's towers, and the feed-forward head.

What the package computes for one caption c with references r_1..r_k and image v:

* u = the sentence embedding of a text: RoBERTa's hidden states (embeddings and every layer)
  mixed by ``ScalarMixWithDropout`` (softmax weights, gamma, each state layer-normalised over
  all its tokens and dimensions at once), then its first token (``pool: cls``) or the mean
  over tokens (``pool: avg``);
* e = CLIP embeddings (unnormalised) of the image and of "A photo depicts " + text;
* per reference j: x_j = [u_r, u_c, |u_c-u_r|, u_c*u_r, e_v, e_c, |e_v-e_c|, e_v*e_c,
  |e_r-e_c|, e_r*e_c], score_j = sigmoid(FF(x_j)); the caption's score is max_j score_j.

The package layer-normalises over a whole batch (its mean and variance run over every token of
every text in the batch), so its number for a caption moves with the captions batched with it.
Here every text is normalised over its own tokens: the package's number at ``batch_size=1``,
the one batch composition where a caption's score is its own.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..guards import open_regular, read_regular
from ..errors import InputError, ResourceNotFound

#: A checkpoint read into memory (the released one holds RoBERTa-base and CLIP ViT-B/32: 1.7 GB).
MAX_CHECKPOINT_BYTES = 8 << 30
MAX_HPARAMS_BYTES = 1 << 20
#: Hidden-layer activations the head may name (torch.nn's, and Swish as the package defines it).
ACTIVATIONS = ("Tanh", "Sigmoid", "ReLU", "GELU", "SiLU", "ELU", "LeakyReLU", "Softplus", "Swish", "Identity")
POOLS = ("cls", "avg")
#: ScalarMixWithDropout's layer norm: (x - mean) / sqrt(var + 1e-12).
MIX_EPS = 1e-12


@dataclass(frozen=True)
class HParams:
    pretrained_model: str
    layer: str | int
    pool: str
    hidden_sizes: tuple[int, ...]
    activation: str
    final_activation: str | None
    digest: str


def read_hparams(checkpoint: Path, path: Path | None = None) -> HParams:
    """The hyper-parameters file ``path``, by default ``hparams.yaml`` beside the checkpoint,
    where ``polos.models.load_checkpoint`` reads it."""
    import yaml

    path = checkpoint.parent / "hparams.yaml" if path is None else path
    data = read_regular(path, "Polos hparams file", MAX_HPARAMS_BYTES)
    try:
        hp = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{path} is not a YAML file: {exc}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise InputError(f"{path}: its values nest deeper than the YAML reader's recursion limit; "
                         "not a hparams.yaml Lightning writes") from None
    if not isinstance(hp, dict):
        raise InputError(f"{path} does not hold a mapping of hyper-parameters")

    def need(key: str) -> Any:
        if key not in hp:
            raise InputError(f"{path} has no {key!r}")
        return hp[key]

    if need("model") != "PolosEstimator" or need("encoder_model") != "BERT":
        raise InputError(f"{path}: capeval runs PolosEstimator with the BERT (Hugging Face) encoder, "
                         f"not {hp.get('model')!r} with {hp.get('encoder_model')!r}")
    pool = need("pool")
    if pool not in POOLS:
        raise InputError(f"{path}: pool {pool!r} is not one PolosEstimator.forward runs ({', '.join(POOLS)})")
    layer = need("layer")
    if layer != "mix" and not (isinstance(layer, int) and not isinstance(layer, bool) and layer >= 0):
        raise InputError(f"{path}: layer must be 'mix' or a layer number, got {layer!r}")
    sizes = need("hidden_sizes")
    try:
        hidden = tuple(int(x) for x in (sizes.split(",") if isinstance(sizes, str) else [sizes]))
    except (TypeError, ValueError):
        raise InputError(f"{path}: hidden_sizes must be sizes separated by commas, got {sizes!r}") from None
    act, final = need("activations"), hp.get("final_activation", "Sigmoid")
    for name in (act, final):
        if name not in ACTIVATIONS and name not in (False, None):
            raise InputError(f"{path}: activation {name!r} is not one of {', '.join(ACTIVATIONS)}")
    return HParams(str(need("pretrained_model")), layer, pool, hidden, act, final or None,
                   hashlib.sha256(data).hexdigest())


def read_state_dict(path: Path) -> dict:
    """The tensors of a Polos checkpoint: a Lightning ``.ckpt`` (its ``state_dict``) read by
    ``torch.load(weights_only=True)``, or a ``.safetensors`` file of the same names."""
    import torch

    with open_regular(path, "Polos checkpoint", MAX_CHECKPOINT_BYTES) as f:
        obj = _load_tensors(f, path)
    sd = obj.get("state_dict", obj) if isinstance(obj, dict) else None
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise InputError(f"{path} holds no state dict of tensors")
    return sd


def _load_tensors(f, path: Path) -> Any:
    """What the open checkpoint file holds, tensors and plain containers only."""
    import torch

    if path.suffix == ".safetensors":
        from safetensors.torch import load as load_safetensors

        try:
            return load_safetensors(f.read())
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
            raise InputError(f"{path} is not a safetensors file: {exc}") from None
    else:
        try:
            return torch.load(f, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - torch raises UnpicklingError, RuntimeError...
            raise InputError(
                f"{path}: torch.load(weights_only=True) refused it ({_why(exc)}). "
                "capeval unpickles no objects; convert the checkpoint once where you trust it: "
                "python -c \"import torch, safetensors.torch as s; "
                "s.save_file(torch.load('reprod.ckpt', weights_only=False)['state_dict'], 'reprod.safetensors')\" "
                "and pass reprod.safetensors (hparams.yaml beside it)") from None


def _why(exc: Exception) -> str:
    """torch's refusal in one line: the global it met, else the start of its message (which
    carries terminal escapes and several paragraphs)."""
    text = str(exc)
    found = re.search(r"Unsupported global: (GLOBAL [\w.]+)", text)
    if found:
        return found.group(1)
    return type(exc).__name__ + ": " + re.sub(r"\x1b\[[0-9;]*m|[\x00-\x1f\x7f]+", " ", text)[:200]


def _sub(sd: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}


def text_encoder(sd: dict, text_model: str, path: Path):
    """(RoBERTa module with the checkpoint's weights, its tokenizer, its window in tokens)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from ..resources.encoders import quiet_model_loading

    try:
        with quiet_model_loading():
            config = AutoConfig.from_pretrained(text_model, local_files_only=True)
            tok = AutoTokenizer.from_pretrained(text_model, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ResourceNotFound(
            f"polos: the text encoder's config and tokenizer ({text_model}) are not here ({exc}). Pass "
            "-O polos.text_model=DIR, a local copy of the model hparams.yaml names "
            "(princeton-nlp/sup-simcse-roberta-base for the released checkpoint); its weights are "
            "not read, the checkpoint holds them") from None
    # The package's transformers (4.35) ran BERT-style attention eagerly.
    config._attn_implementation = "eager"
    with torch.device("cpu"):
        net = AutoModel.from_config(config)
    enc = _sub(sd, "encoder.model.")
    if not enc:
        raise InputError(f"{path} has no encoder.model.* weights (not a PolosEstimator checkpoint)")
    missing, unexpected = net.load_state_dict(enc, strict=False)
    bad = [k for k in [*missing, *unexpected] if not k.startswith("pooler.") and not k.endswith("position_ids")]
    if bad:
        raise InputError(f"{path}: encoder weights do not fit {text_model}'s config ({sorted(bad)[:4]})")
    pad = int(config.pad_token_id if config.pad_token_id is not None else tok.pad_token_id)
    window = int(config.max_position_embeddings) - (pad + 1 if config.model_type in ("roberta", "xlm-roberta") else 0)
    return net.eval(), tok, window, pad


def mix_weights(sd: dict, layer: str | int, n_states: int, path: Path) -> tuple[Any, Any]:
    """Softmax of the scalar mix's parameters and gamma (None: one layer, ``layer`` its index)."""
    import torch

    if layer != "mix":
        if not isinstance(layer, int) or layer >= n_states:
            raise InputError(f"{path}: layer {layer} is not one of the encoder's {n_states} hidden states")
        return None, None
    try:
        w = torch.cat([sd[f"scalar_mix.scalar_parameters.{i}"].float() for i in range(n_states)])
        gamma = sd["scalar_mix.gamma"].float()
    except KeyError as exc:
        raise InputError(f"{path} has no scalar mix weight {exc} for {n_states} hidden states") from None
    return torch.nn.functional.softmax(w, dim=0), gamma


def sentence_vectors(net, weights, gamma, layer, pool: str, pad: int, rows: list[np.ndarray]) -> list[np.ndarray]:
    """One sentence embedding per row of token ids (rows of one length, no padding), each
    normalised over its own tokens (module docstring)."""
    import torch

    with torch.inference_mode():
        ids = torch.from_numpy(np.stack(rows)).long()
        states = net(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True).hidden_states
        out = []
        for i in range(ids.shape[0]):
            if weights is None:
                x = states[layer][i]
            else:
                pieces = []
                for w, t in zip(torch.split(weights, 1), states):
                    t = t[i]
                    n = torch.tensor(float(t.shape[0] * t.shape[1]))
                    mean = torch.sum(t) / n
                    var = torch.sum((t - mean) ** 2) / n
                    pieces.append(w * ((t - mean) / torch.sqrt(var + MIX_EPS)))
                x = gamma * sum(pieces)
            if pool == "cls":
                v = x[0]
            else:  # the package zeroes positions holding the padding id, then divides by the length
                v = torch.sum(x.masked_fill(ids[i].eq(pad).unsqueeze(-1), 0.0), 0) / float(x.shape[0])
            out.append(v.float().numpy().copy())
    return out


def head(sd: dict, hp: HParams, in_dim: int, path: Path):
    """PolosEstimator's ``ff``: FeedForward (linear, activation per hidden size; a last linear;
    the final activation if any) followed by a sigmoid."""
    import torch
    from torch import nn

    dims = [in_dim, *hp.hidden_sizes, 1]
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims, dims[1:]), start=1):
        lin = nn.Linear(a, b)
        try:
            w, bias = sd[f"ff.0.ff.linear_{i}.weight"], sd[f"ff.0.ff.linear_{i}.bias"]
        except KeyError as exc:
            raise InputError(f"{path} has no head weight {exc} (hidden_sizes {hp.hidden_sizes})") from None
        if tuple(w.shape) != (b, a):
            raise InputError(f"{path}: head layer {i} is {tuple(w.shape)}, hparams and encoders give {(b, a)}")
        with torch.no_grad():
            lin.weight.copy_(w.float())
            lin.bias.copy_(bias.float())
        layers.append(lin)
        if i < len(dims) - 1:
            layers.append(_activation(hp.activation))
    if hp.final_activation:
        layers.append(_activation(hp.final_activation))
    layers.append(nn.Sigmoid())
    return nn.Sequential(*layers).eval()


def _activation(name: str):
    import torch
    from torch import nn

    if name == "Swish":
        class Swish(nn.Module):
            def forward(self, x):
                return x * torch.sigmoid(x)
        return Swish()
    return getattr(nn, name)()


def features(u_c: np.ndarray, u_r: np.ndarray, e_v: np.ndarray, e_c: np.ndarray, e_r: np.ndarray) -> np.ndarray:
    """The head's input for one (caption, reference) pair, in the package's order."""
    return np.concatenate([u_r, u_c, np.abs(u_c - u_r), u_c * u_r, e_v, e_c, np.abs(e_v - e_c), e_v * e_c,
                           np.abs(e_r - e_c), e_r * e_c]).astype(np.float32)


def describe(hp: HParams) -> str:
    """The head and pooling as the signature names them."""
    act = hp.activation + ("" if not hp.final_activation else "+" + hp.final_activation)
    return f"{hp.pool}-{hp.layer}-ff{'x'.join(map(str, hp.hidden_sizes))}-{act}"
