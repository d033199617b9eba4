"""ONNX imports of layers and activations that are more than one dongjing op: normalizations,
ConvTranspose, DepthToSpace / SpaceToDepth, Resize, the activation functions and the two
losses. Each is written with dongjing ops (so an imported model runs eagerly, in a graph, under
dj.jit, and differentiates); `NN_IMPORTS[op_type](ctx, ins, attrs)` as in `import_ops`."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..nn import functional as F
from ..tensor import Tensor
from .errors import OnnxImportError
from .import_ops import HAND_WRITTEN


def _axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _opt(ins: list, i: int):
    return ins[i] if len(ins) > i else None


def _scalar(value: float, like: Tensor) -> Tensor:
    return Tensor._make(np.asarray(value, dtype=like.dtype))


# --- normalizations ------------------------------------------------------------------------
def _normalize(x: Tensor, axes: tuple, eps: float):
    """(x - mean) / sqrt(var + eps) over `axes`, with the mean and 1/std (kept dims)."""
    mean = ops.mean(x, axes, keepdim=True)
    centered = x - mean
    inv_std = 1.0 / ops.sqrt(ops.mean(centered * centered, axes, keepdim=True) + eps)
    return centered * inv_std, mean, inv_std


def _layer_norm(ctx, ins, attrs):
    x, scale, bias = ins[0], ins[1], _opt(ins, 2)
    axis = _axis(attrs.get("axis", -1), x.ndim)
    if not 0 <= axis < x.ndim:
        raise OnnxImportError(f"axis {attrs.get('axis')} is out of range for shape {x.shape}")
    y, mean, inv_std = _normalize(x, tuple(range(axis, x.ndim)), attrs.get("epsilon", 1e-5))
    y = y * scale
    if bias is not None:
        y = y + bias
    return y, mean, inv_std


def _channel_shape(x: Tensor) -> tuple:
    return (-1,) + (1,) * (x.ndim - 2)


def _instance_norm(ctx, ins, attrs):
    x, scale, bias = ins
    if x.ndim < 3:
        raise OnnxImportError(f"expects an (N, C, ...) input with spatial dims, got {x.shape}")
    y, _, _ = _normalize(x, tuple(range(2, x.ndim)), attrs.get("epsilon", 1e-5))
    return y * ops.reshape(scale, _channel_shape(x)) + ops.reshape(bias, _channel_shape(x))


def _group_norm(ctx, ins, attrs):
    x, scale, bias = ins
    groups = int(attrs["num_groups"])
    if x.ndim < 2 or x.shape[1] is None or x.shape[1] % groups:
        raise OnnxImportError(f"num_groups={groups} must divide the channels of {x.shape}")
    channels, rest = x.shape[1], tuple(x.shape[2:])
    if any(d is None for d in rest):
        raise OnnxImportError(f"the spatial dims of {x.shape} must be known")
    per_group = (channels // groups) * int(np.prod(rest, dtype=np.int64))
    y, _, _ = _normalize(ops.reshape(x, (-1, groups, per_group)), (2,),
                         attrs.get("epsilon", 1e-5))
    y = ops.reshape(y, (-1, channels) + rest)
    if scale.shape[0] == groups and groups != channels:  # opset 18: one scale per group
        scale = ops.repeat_interleave(scale, channels // groups, 0)
        bias = ops.repeat_interleave(bias, channels // groups, 0)
    return y * ops.reshape(scale, _channel_shape(x)) + ops.reshape(bias, _channel_shape(x))


# --- convolutions --------------------------------------------------------------------------
def _conv(ctx, ins, attrs):
    """Conv: 2-d as dongjing's conv2d (import_ops), 1-d through a unit height, and grouped
    convolutions as one conv2d per group."""
    x, w = ins[0], ins[1]
    b = _opt(ins, 2)
    base = HAND_WRITTEN["Conv"]
    if x.ndim == 3:
        attrs = _widen_attrs(attrs)
        out = _conv(ctx, [ops.unsqueeze(x, 2), ops.unsqueeze(w, 2), b], attrs)
        return ops.squeeze(out, 2)
    groups = int(attrs.get("group", 1))
    if groups == 1:
        return base(ctx, [x, w, b], attrs)
    per = x.shape[1] // groups if x.shape[1] is not None else None
    if per is None or x.shape[1] % groups or w.shape[0] % groups:
        raise OnnxImportError(f"group={groups} must divide the channels of {x.shape} and "
                              f"the filters {w.shape}")
    outs_per = w.shape[0] // groups
    plain = {k: v for k, v in attrs.items() if k != "group"}
    outs = []
    for g in range(groups):
        xg = x[:, g * per:(g + 1) * per]
        wg = w[g * outs_per:(g + 1) * outs_per]
        bg = None if b is None else b[g * outs_per:(g + 1) * outs_per]
        outs.append(base(ctx, [xg, wg, bg], plain))
    return ops.concat(outs, 1)


def _widen_attrs(attrs: dict) -> dict:
    """The attributes of a 1-d window op as the 2-d op over a unit height."""
    out = dict(attrs)
    for key, unit in (("strides", 1), ("dilations", 1), ("kernel_shape", 1),
                      ("output_padding", 0)):
        if key in attrs:
            out[key] = [unit] + list(attrs[key])
    if "pads" in attrs:
        begin, end = attrs["pads"]
        out["pads"] = [0, begin, 0, end]
    if "output_shape" in attrs:
        out["output_shape"] = [1] + list(attrs["output_shape"])
    return out


def _conv_transpose(ctx, ins, attrs):
    """ConvTranspose as a product per input pixel (x . W gives every window's contribution)
    summed into place by fold2d (col2im), then cropped by the pads."""
    x, w = ins[0], ins[1]
    b = _opt(ins, 2)
    if x.ndim == 3:
        out = _conv_transpose(ctx, [ops.unsqueeze(x, 2), ops.unsqueeze(w, 2), b],
                              _widen_attrs(attrs))
        return ops.squeeze(out, 2)
    if x.ndim != 4 or any(d is None for d in x.shape[1:]):
        raise OnnxImportError(f"expects an (N, C, H, W) or (N, C, L) input with known C, H, W, "
                              f"got {x.shape}")
    if any(d != 1 for d in attrs.get("dilations", [1, 1])):
        raise OnnxImportError(f"dilations {attrs['dilations']} are not supported")
    groups = int(attrs.get("group", 1))
    if groups != 1:
        per, outs_per = x.shape[1] // groups, w.shape[1]
        plain = {k: v for k, v in attrs.items() if k != "group"}
        outs = [_conv_transpose(ctx, [x[:, g * per:(g + 1) * per], w[g * per:(g + 1) * per],
                                      None if b is None else b[g * outs_per:(g + 1) * outs_per]],
                                plain) for g in range(groups)]
        return ops.concat(outs, 1)
    _, c, h, wid = x.shape
    m, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    strides = list(attrs.get("strides", [1, 1]))
    extra = list(attrs.get("output_padding", [0, 0]))
    full = [(n - 1) * s + k + e for n, s, k, e in zip((h, wid), strides, (kh, kw), extra)]
    pads = _transpose_pads(attrs, full)
    cols = ops.matmul(ops.permute(x, (0, 2, 3, 1)), ops.reshape(w, (c, m * kh * kw)))
    cols = ops.permute(ops.reshape(cols, (-1, h, wid, m, kh, kw)), (0, 3, 4, 5, 1, 2))
    out = ops.fold2d(cols, full, (kh, kw), tuple(strides), 0)
    out = out[:, :, pads[0]:full[0] - pads[2], pads[1]:full[1] - pads[3]]
    return out if b is None else out + ops.reshape(b, (-1, 1, 1))


def _transpose_pads(attrs: dict, full: list) -> list:
    """[top, left, bottom, right] cropped from the full transposed output."""
    auto = _text(attrs.get("auto_pad", "NOTSET"))
    shape = attrs.get("output_shape")
    if shape is None and auto in ("NOTSET", "VALID"):
        return list(attrs.get("pads", [0, 0, 0, 0]))
    if shape is None:  # SAME_*: the output is input * stride
        raise OnnxImportError(f"auto_pad={auto} without output_shape is not supported")
    total = [f - int(s) for f, s in zip(full, shape[-2:])]
    if any(t < 0 for t in total):
        raise OnnxImportError(f"output_shape {list(shape)} is larger than the full output "
                              f"{full}")
    upper = auto == "SAME_UPPER"
    begin = [t // 2 if upper else t - t // 2 for t in total]
    return begin + [t - bg for t, bg in zip(total, begin)]


# --- rearrangements ------------------------------------------------------------------------
def _depth_to_space(ctx, ins, attrs):
    x, block = ins[0], int(attrs["blocksize"])
    if x.ndim != 4 or any(d is None for d in x.shape[1:]) or x.shape[1] % (block * block):
        raise OnnxImportError(f"blocksize {block}: expects (N, C, H, W) with known C, H, W and "
                              f"C divisible by {block * block}, got {x.shape}")
    _, c, h, w = x.shape
    depth = c // (block * block)
    if _text(attrs.get("mode", "DCR")) == "CRD":
        y = ops.permute(ops.reshape(x, (-1, depth, block, block, h, w)), (0, 1, 4, 2, 5, 3))
    else:
        y = ops.permute(ops.reshape(x, (-1, block, block, depth, h, w)), (0, 3, 4, 1, 5, 2))
    return ops.reshape(y, (-1, depth, h * block, w * block))


def _space_to_depth(ctx, ins, attrs):
    x, block = ins[0], int(attrs["blocksize"])
    if x.ndim != 4 or any(d is None for d in x.shape[1:]) or x.shape[2] % block or \
            x.shape[3] % block:
        raise OnnxImportError(f"blocksize {block}: expects (N, C, H, W) with known C, H, W "
                              f"divisible by {block}, got {x.shape}")
    _, c, h, w = x.shape
    y = ops.reshape(x, (-1, c, h // block, block, w // block, block))
    y = ops.permute(y, (0, 3, 5, 1, 2, 4))
    return ops.reshape(y, (-1, c * block * block, h // block, w // block))


# --- activations ---------------------------------------------------------------------------
def _softplus(x: Tensor) -> Tensor:
    return ops.logaddexp(x, ops.zeros_like(x))


def _hard_sigmoid(x: Tensor, alpha: float, beta: float) -> Tensor:
    return ops.clip(x * alpha + beta, 0.0, 1.0)


def _selu(ctx, ins, attrs):
    x = ins[0]
    alpha = attrs.get("alpha", 1.67326319217681884765625)
    gamma = attrs.get("gamma", 1.05070102214813232421875)
    return ops.where(x > 0, x, (ops.exp(x) - 1.0) * alpha) * gamma


def _celu(ctx, ins, attrs):
    x, alpha = ins[0], attrs.get("alpha", 1.0)
    return ops.where(x > 0, x, (ops.exp(x / alpha) - 1.0) * alpha)


def _prelu(ctx, ins, attrs):
    x, slope = ins
    return ops.where(x < 0, x * slope, x)


def _gelu(ctx, ins, attrs):
    approximate = _text(attrs.get("approximate", "none"))
    if approximate not in ("none", "tanh"):
        raise OnnxImportError(f"approximate={approximate!r} is not supported")
    return F.gelu(ins[0], approximate)


ACTIVATIONS: dict = {
    "Gelu": _gelu,
    "Softplus": lambda ctx, ins, attrs: _softplus(ins[0]),
    "Softsign": lambda ctx, ins, attrs: ins[0] / (ops.abs(ins[0]) + 1.0),
    "Elu": lambda ctx, ins, attrs: F.elu(ins[0], attrs.get("alpha", 1.0)),
    "Selu": _selu,
    "Celu": _celu,
    "HardSigmoid": lambda ctx, ins, attrs: _hard_sigmoid(ins[0], attrs.get("alpha", 0.2),
                                                         attrs.get("beta", 0.5)),
    "HardSwish": lambda ctx, ins, attrs: ins[0] * _hard_sigmoid(ins[0], 1.0 / 6.0, 0.5),
    "PRelu": _prelu,
    "Mish": lambda ctx, ins, attrs: ins[0] * ops.tanh(_softplus(ins[0])),
    "ThresholdedRelu": lambda ctx, ins, attrs: ops.where(
        ins[0] > attrs.get("alpha", 1.0), ins[0], ops.zeros_like(ins[0])),
    "Swish": lambda ctx, ins, attrs: ins[0] * ops.sigmoid(ins[0] * attrs.get("alpha", 1.0)),
}


# --- losses --------------------------------------------------------------------------------
def _nll(log_prob: Tensor, labels: Tensor, weight, attrs: dict, op: str) -> Tensor:
    """ONNX's negative log-likelihood of (N, C, d...) log-probabilities at integer labels."""
    if labels.dtype.kind not in "iu":
        raise OnnxImportError(f"{op}: labels must be integers, got {labels.dtype}")
    reduction = _text(attrs.get("reduction", "mean"))
    if reduction not in ("none", "sum", "mean"):
        raise OnnxImportError(f"{op}: reduction={reduction!r} is not supported")
    ignore = attrs.get("ignore_index")
    keep = None
    if ignore is not None:
        keep = ops.ne(labels, ignore)
        labels = ops.where(keep, labels, ops.zeros_like(labels))
    picked = ops.squeeze(ops.gather(log_prob, 1, ops.unsqueeze(labels, 1)), 1)
    per = None  # the weight of each element, where there is one
    if weight is not None:
        per = ops.reshape_like(ops.index_select(weight, 0, ops.reshape(labels, (-1,))), picked)
    elif keep is not None or reduction == "mean":
        per = ops.ones_like(picked)
    if keep is not None:
        per = per * ops.cast(keep, picked.dtype)
    loss = -picked if per is None else -picked * per
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ops.sum(loss)
    return ops.sum(loss) / ops.sum(per)


def _softmax_cross_entropy(ctx, ins, attrs):
    log_prob = ops.log_softmax(ins[0], 1)
    return _nll(log_prob, ins[1], _opt(ins, 2), attrs, "SoftmaxCrossEntropyLoss"), log_prob


def _negative_log_likelihood(ctx, ins, attrs):
    return _nll(ins[0], ins[1], _opt(ins, 2), attrs, "NegativeLogLikelihoodLoss")


NN_IMPORTS: dict = {
    "LayerNormalization": _layer_norm,
    "InstanceNormalization": _instance_norm,
    "GroupNormalization": _group_norm,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "SoftmaxCrossEntropyLoss": _softmax_cross_entropy,
    "NegativeLogLikelihoodLoss": _negative_log_likelihood,
    **ACTIVATIONS,
}
