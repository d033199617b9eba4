"""More of tf.nn: activations (leaky_relu, elu, selu, softplus, relu6, ...), moments,
batch_normalization, l2_normalize, embedding_lookup, top_k, in_top_k, dropout with a tensor
keep_prob, and the sampled losses nce_loss / sampled_softmax_loss."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

import numpy as np

from ... import ops as _ops
from ...core.registry import Spec, register
from ...devices.random import generator
from ...dispatch import apply1
from ...errors import DTypeError, GraphError, ShapeError
from ...ops import dropout_mask
from ...tensor import Tensor
from .dynamic_shape import constant_value
from .graphs import tf_function
from .math_ops import _t
from .random_ops import random_like
from .unsupported import not_provided

if TYPE_CHECKING:
    from ...types import TensorLike

# nn.py (which re-exports this module) hands it over when it loads
_nn = types.SimpleNamespace(sigmoid_cross_entropy_with_logits=None)


@tf_function
def relu6(features, name=None):
    """min(max(features, 0), 6)."""
    return _ops.clip(_t(features), 0.0, 6.0)


@tf_function
def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, else alpha * features (TF's default alpha is 0.2)."""
    x = _t(features)
    return _ops.maximum(x, x * alpha) if 0 <= alpha <= 1 else _ops.where(x > 0, x, x * alpha)


@tf_function
def elu(features, name=None):
    """features where positive, else exp(features) - 1."""
    x = _t(features)
    return _ops.where(x > 0, x, _ops.expm1(_ops.minimum(x, 0.0)))


_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


@tf_function
def selu(features, name=None):
    """scale * elu(features) with selu's alpha and scale."""
    x = _t(features)
    return _SELU_SCALE * _ops.where(x > 0, x, _SELU_ALPHA * _ops.expm1(_ops.minimum(x, 0.0)))


@tf_function
def softplus(features, name=None):
    """log(1 + exp(features)), computed stably."""
    x = _t(features)
    return _ops.relu(x) + _ops.log1p(_ops.exp(-_ops.abs(x)))


@tf_function
def softsign(features, name=None):
    """features / (1 + |features|)."""
    x = _t(features)
    return x / (1.0 + _ops.abs(x))


def _axes_list(axes, what: str) -> tuple:
    if isinstance(axes, Tensor):
        known = constant_value(axes)
        if known is None:
            not_provided(f"{what} with axes computed at run time")
        axes = known
    return tuple(int(a) for a in np.asarray(axes).reshape(-1))


@tf_function
def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over `axes` (the biased variance, as TF)."""
    x = _t(x)
    dims = _axes_list(axes, "tf.nn.moments")
    keep = bool(keep_dims or keepdims)
    mean = _ops.mean(x, dims, keepdim=True)
    centered = x - mean
    variance = _ops.mean(centered * centered, dims, keepdim=True)
    if not keep:
        mean, variance = _ops.squeeze(mean, dims), _ops.squeeze(variance, dims)
    return mean, variance


@tf_function
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + eps) * scale + offset (scale, offset may be None)."""
    x = _t(x)
    inv = _ops.rsqrt(_t(variance) + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    out = (x - mean) * inv
    return out if offset is None else out + offset


@tf_function
def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x**2, axis), epsilon))."""
    x = _t(x)
    axis = dim if axis is None else axis
    dims = None if axis is None else _axes_list(axis, "tf.nn.l2_normalize")
    square_sum = _ops.sum(x * x, dims, keepdim=True)
    return x * _ops.rsqrt(_ops.maximum(square_sum, epsilon))


@tf_function
def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """Rows of `params` at `ids` (shape ids.shape + params.shape[1:])."""
    if max_norm is not None:
        not_provided("tf.nn.embedding_lookup(max_norm=...)")
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            not_provided("tf.nn.embedding_lookup over a list of partitioned tables")
        params = params[0]
    table, idx = _t(params), _t(ids)
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"tf.nn.embedding_lookup: ids must be integers, got {idx.dtype}")
    return table[idx]


@tf_function
def top_k(input, k=1, sorted=True, name=None):  # noqa: A002
    """(values, indices) of the k largest entries along the last dim (indices int32)."""
    x = _t(input)
    k = int(constant_value(k)) if isinstance(k, Tensor) else int(k)
    values, indices = _ops.topk(x, k, -1)
    return values, _ops.cast(indices, np.int32)


@tf_function
def in_top_k(predictions, targets, k, name=None):
    """Whether each row's target class is among its k largest predictions (ties count as in,
    as TF counts them)."""
    p, t = _t(predictions), _t(targets)
    if p.ndim != 2 or t.ndim != 1:
        raise ShapeError(f"tf.nn.in_top_k: needs (batch, classes) predictions and (batch,) "
                         f"targets, got {p.shape} and {t.shape}")
    target_score = _ops.gather(p, 1, _ops.unsqueeze(_ops.cast(t, np.int64), 1))
    above = _ops.sum(_ops.cast(p > target_score, np.int64), 1)
    return _ops.logical_and(above < int(k), _ops.isfinite(_ops.squeeze(target_score, 1)))


@tf_function
def dropout(x: TensorLike, keep_prob: float | Tensor | None = None, noise_shape: None = None,
            seed: int | None = None, name: str | None = None, rate: float | Tensor | None = None
            ) -> Tensor:
    """x with elements zeroed with probability 1 - keep_prob (or `rate`), the rest scaled by
    1/keep_prob; a fresh mask every run. keep_prob / rate may be tensors (e.g. fed)."""
    if noise_shape is not None:
        not_provided("tf.nn.dropout(noise_shape=...)")
    if (keep_prob is None) == (rate is None):
        raise GraphError("tf.nn.dropout: give keep_prob or rate (exactly one)")
    x = _t(x)
    if isinstance(keep_prob, Tensor) or isinstance(rate, Tensor):
        keep = _t(keep_prob) if keep_prob is not None else 1.0 - _t(rate)
        keep = _ops.cast(keep, x.dtype) if keep.dtype != x.dtype else keep
        kept = _ops.cast(random_like(x, "uniform") < keep, x.dtype)
        return x * kept / keep
    drop = float(rate) if rate is not None else 1.0 - float(keep_prob)
    if not 0.0 <= drop < 1.0:
        raise GraphError(f"tf.nn.dropout: keep probability {1 - drop} is not in (0, 1]")
    if drop == 0.0:
        return x
    return x * dropout_mask(x, drop)


# --- sampled losses ----------------------------------------------------------------------------
def _candidates_forward(labels, num_sampled, range_max, unique):
    """num_sampled log-uniform (Zipfian) class ids and, last, how many draws that took."""
    rng = generator()
    log_range = np.log(range_max + 1.0)
    if not unique:
        draws = np.floor(np.exp(rng.uniform(0, 1, num_sampled) * log_range)).astype(np.int64) - 1
        return np.append(np.clip(draws, 0, range_max - 1), num_sampled)
    picked: dict = {}
    tries = 0
    while len(picked) < num_sampled:
        draw = int(np.exp(rng.uniform() * log_range)) - 1
        tries += 1
        picked.setdefault(min(max(draw, 0), range_max - 1), None)
    return np.asarray(list(picked) + [tries], np.int64)


def _candidates_infer(labels: Spec, num_sampled, range_max, unique):
    return (num_sampled + 1,), np.dtype(np.int64)


_candidates = register("tf_log_uniform_candidates", forward=_candidates_forward,
                       infer=_candidates_infer, random=True,
                       onnx_reason="random sampling (compat.v1's candidate sampler)",
                       doc="log-uniform class ids for tf.nn.nce_loss / sampled_softmax_loss, "
                           "then the number of draws.")


def _expected_count(ids, tries, range_max: int, unique: bool):
    """How often the sampler is expected to draw each of `ids` in `tries` draws."""
    ids = _ops.cast(ids, np.float64)
    p = (_ops.log(ids + 2.0) - _ops.log(ids + 1.0)) / float(np.log(range_max + 1.0))
    if not unique:
        return p * tries
    return -_ops.expm1(tries * _ops.log1p(-p))


def _sampled_logits(what, weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                    remove_accidental_hits, unique=True):
    if isinstance(weights, (list, tuple)):
        if len(weights) != 1:
            not_provided(f"{what} over a list of partitioned weights")
        weights = weights[0]
    w, b, x = _t(weights), _t(biases), _t(inputs)
    labels = _ops.cast(_t(labels), np.int64)
    if labels.ndim != 2 or labels.shape[1] not in (None, num_true):
        raise ShapeError(f"{what}: labels must have shape (batch, num_true={num_true}), got "
                         f"{labels.shape}")
    drawn = apply1(_candidates, labels, num_sampled=int(num_sampled),
                   range_max=int(num_classes), unique=bool(unique))
    sampled = _ops.stop_gradient(drawn[:num_sampled])
    tries = _ops.cast(drawn[num_sampled], np.float64)
    true_w = w[labels]  # (batch, num_true, dim)
    true_logits = _ops.sum(true_w * _ops.unsqueeze(x, 1), -1) + b[labels]
    sampled_logits = _ops.matmul(x, _ops.transpose(w[sampled], 0, 1)) + b[sampled]
    true_q = _ops.cast(_expected_count(labels, tries, num_classes, unique), x.dtype)
    sampled_q = _ops.cast(_expected_count(sampled, tries, num_classes, unique), x.dtype)
    true_logits = true_logits - _ops.log(true_q)
    sampled_logits = sampled_logits - _ops.log(sampled_q)
    if remove_accidental_hits:
        hits = _ops.any(_ops.eq(_ops.unsqueeze(labels, 2), _ops.reshape(sampled, (1, 1, -1))), 1)
        lowest = float(np.finfo(x.dtype).min)  # TF's value for an accidental hit's logit
        sampled_logits = _ops.where(hits, lowest, sampled_logits)
    return true_logits, sampled_logits


@tf_function
def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation loss per example, with TF's log-uniform candidate sampler
    (fresh candidates every run) and its expected-count correction."""

    if sampled_values is not None:
        not_provided("tf.nn.nce_loss(sampled_values=...)")
    true_logits, sampled_logits = _sampled_logits(
        "tf.nn.nce_loss", weights, biases, labels, inputs, num_sampled, num_classes, num_true,
        remove_accidental_hits)
    true_loss = _nn.sigmoid_cross_entropy_with_logits(
        labels=_ops.ones_like(true_logits) / float(num_true), logits=true_logits)
    sampled_loss = _nn.sigmoid_cross_entropy_with_logits(
        labels=_ops.zeros_like(sampled_logits), logits=sampled_logits)
    return _ops.sum(true_loss, 1) + _ops.sum(sampled_loss, 1)


@tf_function
def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Softmax cross-entropy over the true class and sampled classes, per example."""
    if sampled_values is not None:
        not_provided("tf.nn.sampled_softmax_loss(sampled_values=...)")
    true_logits, sampled_logits = _sampled_logits(
        "tf.nn.sampled_softmax_loss", weights, biases, labels, inputs, num_sampled,
        num_classes, num_true, remove_accidental_hits)
    logits = _ops.concat([true_logits, sampled_logits], 1)
    log_p = _ops.log_softmax(logits, 1)
    return -_ops.sum(log_p[:, :num_true], 1) / float(num_true)
