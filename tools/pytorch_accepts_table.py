"""The names where PyTorch's override record is not what PyTorch accepts: per namespace and
name, the signature PyTorch's own binding takes and the calls that show it (checked by
`pytorch_accepts.verify`). Why the record differs, by kind:

- `torch.*_copy` and a few other native functions: the record says `self`, the binding `input`;
- native functions whose record copies `torch.nn.functional`'s Python signature (the losses'
  `size_average`/`reduce`/`reduction='mean'`, `relu`'s `inplace`, `embedding`'s order): the
  native binding takes an integer `reduction` (default 0: no reduction) and its own order;
- overloads the record merges wrongly or omits (`median` without `dim`, `squeeze` without
  `dim`, `scatter`'s `value=`, `bernoulli`'s `p`, `trapz`'s `dx=`);
- Tensor methods whose record copies `torch.*`'s parameters (`out=`, `other`, `input`);
- Python functions behind `(*args, **kwargs)` wrappers (`unique`, the max pools' boolean
  dispatch, the recurrent modules, deprecated classes).
A None default means "may be left out" (an overload without it), as in PyTorch's documents.
"""

from __future__ import annotations

from pytorch_accepts import Accepts, call

ONE = "(input)"


def _one(make):  # a function of one tensor, refused under the record's `self`
    return Accepts(ONE, (lambda s: call(input=make(s)),), (lambda s: call(self=make(s)),))


def _losses_refused(make):
    """The Python loss's legacy keywords and string reduction, refused by the native binding."""
    return (lambda s: call(*make(s), size_average=None),
            lambda s: call(*make(s), reduction="mean"))


def _splits(first: str):
    """`(input, split_size, dim=0)` or `(input, split_sizes, dim=0)`."""
    size = [1, 2] if first == "split_sizes" else 2
    return Accepts(f"(input, {first}, dim=0)", (
        lambda s: call(input=s.x, **{first: size}, dim=0),
        lambda s: call(input=s.x, **{first: size})),
        (lambda s: call(tensor=s.x, split_size_or_sections=size),))


def _method_splits():
    return Accepts("(split_sizes, dim=0)", (
        lambda s: call(s.x, split_sizes=[1, 2], dim=0),
        lambda s: call(s.x, split_sizes=[3, 1], dim=1),
        lambda s: call(s.x, split_sizes=[1, 2])),
        (lambda s: call(s.x, split_size_or_sections=[1, 2]),))


def _median():
    return Accepts("(input, dim=None, keepdim=False, out=None)", (
        lambda s: call(input=s.x),
        lambda s: call(input=s.x, dim=1, keepdim=True),
        lambda s: call(input=s.x, dim=0, out=(s.empty(4), s.empty(4, dtype=s.torch.int64)))),
        (lambda s: call(input=s.x, dim=None),))


def _squeeze():
    return Accepts("(input, dim=None)", (
        lambda s: call(input=s.column), lambda s: call(input=s.column, dim=1)),
        (lambda s: call(input=s.column, dim=None),))


def _pool(kind: str, dims: int):
    if kind == "adaptive":
        return Accepts("(input, output_size, return_indices=False)", (
            lambda s: call(input=s.image(dims), output_size=2, return_indices=True),
            lambda s: call(input=s.image(dims), output_size=2)))
    return Accepts(
        "(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
        "return_indices=False)", (
            lambda s: call(input=s.image(dims), kernel_size=2, stride=2, padding=1, dilation=1,
                           ceil_mode=False, return_indices=True),
            lambda s: call(input=s.image(dims), kernel_size=3),
            lambda s: call(input=s.image(dims), kernel_size=2, ceil_mode=True)))


def _no_arguments(make, refused_kw: dict):
    return Accepts("()", (lambda s: call(make(s)),),
                   (lambda s: call(make(s), **refused_kw(s)),))


def _other(make, other, refused):
    return Accepts("(other)", (lambda s: call(make(s), other=other(s)),),
                   tuple(lambda s, r=r: call(make(s), **r(s)) for r in refused))


def _recurrent(extra_before: str, extra_after: str, kw_before: dict, kw_after: dict):
    text = (f"(input_size, hidden_size, num_layers=1, {extra_before}bias=True, "
            f"batch_first=False, dropout=0.0, bidirectional=False, {extra_after}device=None, "
            "dtype=None)")
    return Accepts(text, (
        lambda s: call(input_size=2, hidden_size=3, num_layers=2, **kw_before, bias=False,
                       batch_first=True, dropout=0.0, bidirectional=True, **kw_after,
                       device=None, dtype=None),
        lambda s: call(input_size=2, hidden_size=3)))


_LOSS = "(input, target, weight=None, pos_weight=None, reduction=0)"

TORCH = {
    "alias_copy": _one(lambda s: s.x),
    "bernoulli": Accepts("(input, p=None, generator=None, out=None)", (
        lambda s: call(input=s.p, p=0.5, generator=None),
        lambda s: call(input=s.p, generator=None, out=s.empty(3, 4)))),
    "binary_cross_entropy_with_logits": Accepts(_LOSS, (
        lambda s: call(input=s.x, target=s.p, weight=None, pos_weight=None, reduction=1),
        lambda s: call(input=s.x, target=s.p)),
        _losses_refused(lambda s: (s.x, s.p))),
    "cosine_embedding_loss": Accepts("(input1, input2, target, margin=0.0, reduction=0)", (
        lambda s: call(input1=s.x, input2=s.p, target=s.sign, margin=0.1, reduction=2),
        lambda s: call(input1=s.x, input2=s.p, target=s.sign)),
        _losses_refused(lambda s: (s.x, s.p, s.sign))),
    "detach_copy": _one(lambda s: s.x),
    "diagonal_copy": Accepts("(input, offset=0, dim1=0, dim2=1)", (
        lambda s: call(input=s.x, offset=1, dim1=1, dim2=0), lambda s: call(input=s.x)),
        (lambda s: call(self=s.x),)),
    "embedding": Accepts(
        "(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False)", (
            lambda s: call(weight=s.x, indices=s.long(0, 2), padding_idx=0,
                           scale_grad_by_freq=True, sparse=False),
            lambda s: call(weight=s.x, indices=s.long(2, 0))),
        (lambda s: call(input=s.long(0, 2), weight=s.x),)),
    "expand_copy": Accepts("(input, size, implicit=False)", (
        lambda s: call(input=s.row, size=(2, 3), implicit=True),
        lambda s: call(input=s.row, size=(2, 3))),
        (lambda s: call(self=s.row, size=(2, 3)),)),
    "full_like": Accepts(
        "(input, fill_value, dtype=None, layout=torch.strided, device=None, "
        "requires_grad=False, memory_format=torch.preserve_format)", (
            lambda s: call(input=s.x, fill_value=2.0, dtype=s.torch.float64,
                           layout=s.torch.strided, device=None, requires_grad=True,
                           memory_format=s.torch.contiguous_format),
            lambda s: call(input=s.x, fill_value=2.0)),
        (lambda s: call(s.x, 2.0, out=s.empty(3, 4)),)),
    "hinge_embedding_loss": Accepts("(input, target, margin=1.0, reduction=0)", (
        lambda s: call(input=s.row, target=s.sign, margin=0.5, reduction=1),
        lambda s: call(input=s.row, target=s.sign)),
        _losses_refused(lambda s: (s.row, s.sign))),
    "kl_div": Accepts("(input, target, reduction=0, log_target=False)", (
        lambda s: call(input=s.x, target=s.p, reduction=2, log_target=True),
        lambda s: call(input=s.x, target=s.p)),
        _losses_refused(lambda s: (s.x, s.p))),
    "margin_ranking_loss": Accepts("(input1, input2, target, margin=0.0, reduction=0)", (
        lambda s: call(input1=s.row, input2=s.sign, target=s.sign, margin=0.2, reduction=1),
        lambda s: call(input1=s.row, input2=s.sign, target=s.sign)),
        _losses_refused(lambda s: (s.row, s.sign, s.sign))),
    "median": _median(),
    "nanmedian": _median(),
    "permute_copy": Accepts("(input, dims)", (lambda s: call(input=s.x, dims=(1, 0)),),
                            (lambda s: call(self=s.x, dims=(1, 0)),)),
    "relu": Accepts(ONE, (lambda s: call(input=s.x),), (
        lambda s: call(s.x, inplace=False), lambda s: call(s.x, out=s.empty(3, 4)))),
    "repeat_interleave": Accepts("(input=None, repeats=None, dim=None, output_size=None)", (
        lambda s: call(s.ints2), lambda s: call(repeats=s.ints2),
        lambda s: call(input=s.x, repeats=2, dim=0, output_size=6),
        lambda s: call(input=s.x, repeats=2)),
        (lambda s: call(input=s.ints2),)),
    "rms_norm": Accepts("(input, normalized_shape, weight=None, eps=None)", (
        lambda s: call(input=s.x, normalized_shape=(4,), weight=None, eps=None),
        lambda s: call(input=s.x, normalized_shape=[4], eps=1e-3))),
    "scatter": Accepts("(input, dim, index, src=None, value=None, reduce=None)", (
        lambda s: call(input=s.x, dim=0, index=s.index, src=s.p),
        lambda s: call(input=s.x, dim=0, index=s.index, value=1.5, reduce="add"))),
    "searchsorted": Accepts(
        "(sorted_sequence, input, out_int32=False, right=False, side=None, out=None, "
        "sorter=None)", (
            lambda s: call(sorted_sequence=s.sorted, input=s.row, out_int32=True, right=True),
            lambda s: call(sorted_sequence=s.sorted, input=s.row, side="left", sorter=None),
            lambda s: call(sorted_sequence=s.sorted, input=s.row,
                           out=s.empty(3, dtype=s.torch.int64))),
        (lambda s: call(sorted_sequence=s.sorted, values=s.row),)),
    "select_copy": Accepts("(input, dim, index)", (lambda s: call(input=s.x, dim=1, index=2),),
                           (lambda s: call(self=s.x, dim=1, index=2),)),
    "slice_copy": Accepts("(input, dim=0, start=None, end=None, step=1)", (
        lambda s: call(input=s.x, dim=1, start=1, end=3, step=1),
        lambda s: call(input=s.x), lambda s: call(input=s.x, start=1))),
    "split_copy": _splits("split_size"),
    "split_with_sizes": _splits("split_sizes"),
    "split_with_sizes_copy": _splits("split_sizes"),
    "squeeze": _squeeze(),
    "squeeze_copy": _squeeze(),
    "t_copy": _one(lambda s: s.x),
    "transpose_copy": Accepts("(input, dim0, dim1)", (
        lambda s: call(input=s.x, dim0=0, dim1=1),), (lambda s: call(self=s.x, dim0=0, dim1=1),)),
    "trapz": Accepts("(y, x=None, dx=None, dim=-1)", (
        lambda s: call(y=s.x, x=s.p, dim=0), lambda s: call(y=s.x, dx=0.5, dim=1),
        lambda s: call(y=s.x)),
        (lambda s: call(y=s.x, x=None),)),
    "triplet_margin_loss": Accepts(
        "(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=0)", (
            lambda s: call(anchor=s.x, positive=s.p, negative=s.big, margin=0.5, p=1, eps=1e-3,
                           swap=True, reduction=1),
            lambda s: call(anchor=s.x, positive=s.p, negative=s.big)),
        _losses_refused(lambda s: (s.x, s.p, s.big))),
    "unbind_copy": Accepts("(input, dim=0)", (
        lambda s: call(input=s.x, dim=1), lambda s: call(input=s.x)),
        (lambda s: call(self=s.x),)),
    "unfold_copy": Accepts("(input, dimension, size, step)", (
        lambda s: call(input=s.x, dimension=1, size=2, step=1),),
        (lambda s: call(self=s.x, dimension=1, size=2, step=1),)),
    "unique": Accepts("(input, sorted=True, return_inverse=False, return_counts=False, dim=None)", (
        lambda s: call(input=s.ints, sorted=True, return_inverse=True, return_counts=True,
                       dim=None),
        lambda s: call(input=s.ints))),
    "unique_consecutive": Accepts("(input, return_inverse=False, return_counts=False, dim=None)", (
        lambda s: call(input=s.ints, return_inverse=True, return_counts=True, dim=0),
        lambda s: call(input=s.ints))),
    "unsafe_split": _splits("split_size"),
    "unsafe_split_with_sizes": _splits("split_sizes"),
    "unsqueeze_copy": Accepts("(input, dim)", (lambda s: call(input=s.x, dim=0),),
                              (lambda s: call(self=s.x, dim=0),)),
    "view_copy": Accepts("(input, size=None, dtype=None)", (
        lambda s: call(input=s.x, size=(4, 3)), lambda s: call(input=s.x, dtype=s.torch.int32),
        lambda s: call(s.x, (4, 3))),
        (lambda s: call(self=s.x, size=(4, 3)),)),
    "where": Accepts("(condition, input=None, other=None, out=None)", (
        lambda s: call(condition=s.x > 0),
        lambda s: call(condition=s.x > 0, input=s.x, other=s.p, out=s.empty(3, 4)))),
}

FUNCTIONAL = {
    **{f"adaptive_max_pool{d}d": _pool("adaptive", d) for d in (1, 2, 3)},
    **{f"max_pool{d}d": _pool("max", d) for d in (1, 2, 3)},
}

TENSOR = {
    "arccosh": _no_arguments(lambda s: s.big, lambda s: {"out": None}),
    "arccosh_": _no_arguments(lambda s: s.big, lambda s: {"out": None}),
    "arctan2_": Accepts("(other)", (lambda s: call(s.x, other=s.p),),
                        (lambda s: call(s.x, other=s.p, out=None),)),
    "arctanh_": _no_arguments(lambda s: s.p, lambda s: {"other": s.p}),
    "atanh_": _no_arguments(lambda s: s.p, lambda s: {"other": s.p}),
    "bernoulli": Accepts("(p=None, generator=None)", (
        lambda s: call(s.p, p=0.5, generator=None), lambda s: call(s.p)),
        (lambda s: call(s.p, p=None),)),
    **{name: _other(lambda s: s.ints, lambda s: s.ints2, (lambda s: {},))
       for name in ("bitwise_and", "bitwise_and_", "bitwise_or", "bitwise_or_", "bitwise_xor",
                    "bitwise_xor_", "logical_and", "logical_and_", "logical_or", "logical_or_",
                    "logical_xor", "logical_xor_")},
    "clamp_max_": Accepts("(max)", (lambda s: call(s.x, max=0.5),),
                          (lambda s: call(s.x, max=0.5, out=None),)),
    "clamp_min_": Accepts("(min)", (lambda s: call(s.x, min=0.5),),
                          (lambda s: call(s.x, min=0.5, out=None),)),
    "divide_": Accepts("(other, rounding_mode=None)", (
        lambda s: call(s.x, other=s.big, rounding_mode="floor"), lambda s: call(s.x, other=s.big)),
        (lambda s: call(s.x, value=s.big),)),
    "index_copy": Accepts("(dim, index, source)", (
        lambda s: call(s.x, dim=0, index=s.long(1), source=s.p[:1]),),
        (lambda s: call(s.x, dim=0, index=s.long(1), tensor2=s.p[:1]),)),
    "index_copy_": Accepts("(dim, index, source)", (
        lambda s: call(s.x, dim=0, index=s.long(1), source=s.p[:1]),),
        (lambda s: call(s.x, dim=0, index=s.long(1), tensor=s.p[:1]),)),
    "less": _other(lambda s: s.x, lambda s: s.p, (lambda s: {"other": s.p, "out": None},)),
    "logit": Accepts("(eps=None)", (lambda s: call(s.p, eps=1e-3), lambda s: call(s.p))),
    "logit_": Accepts("(eps=None)", (lambda s: call(s.p, eps=1e-3), lambda s: call(s.p))),
    "masked_scatter": Accepts("(mask, source)", (
        lambda s: call(s.x, mask=s.x > 0, source=s.p),),
        (lambda s: call(s.x, mask=s.x > 0, tensor=s.p),)),
    "mode": Accepts("(dim=-1, keepdim=False)", (
        lambda s: call(s.x, dim=0, keepdim=True), lambda s: call(s.x)),
        (lambda s: call(s.x, dim=None),)),
    "multiply_": Accepts("(other)", (lambda s: call(s.x, other=s.p),),
                         (lambda s: call(s.x, value=s.p),)),
    "narrow_copy": Accepts("(dim, start, length)", (
        lambda s: call(s.x, dim=1, start=1, length=2),),
        (lambda s: call(s.x, dimension=1, start=1, length=2),)),
    "pinverse": Accepts("(rcond=1e-15)", (lambda s: call(s.x, rcond=0.1), lambda s: call(s.x))),
    "put": Accepts("(index, source, accumulate=False)", (
        lambda s: call(s.x, index=s.long(0, 5), source=s.row[:2], accumulate=True),
        lambda s: call(s.x, index=s.long(0, 5), source=s.row[:2])),
        (lambda s: call(s.x, input=s.x, index=s.long(0, 5), source=s.row[:2]),)),
    "relu_": _no_arguments(lambda s: s.x, lambda s: {"inplace": False}),
    "roll": Accepts("(shifts, dims=None)", (
        lambda s: call(s.x, shifts=1), lambda s: call(s.x, shifts=(1, 2), dims=(0, 1)))),
    "rot90": Accepts("(k=1, dims=(0, 1))", (
        lambda s: call(s.x, k=2, dims=(1, 0)), lambda s: call(s.x))),
    "scatter": Accepts("(dim, index, src=None, value=None, reduce=None)", (
        lambda s: call(s.x, dim=0, index=s.index, src=s.p),
        lambda s: call(s.x, dim=0, index=s.index, value=1.5, reduce="multiply"))),
    "scatter_": Accepts("(dim, index, src=None, value=None, reduce=None)", (
        lambda s: call(s.x, dim=0, index=s.index, src=s.p),
        lambda s: call(s.x, dim=0, index=s.index, value=1.5, reduce="add"))),
    "split_with_sizes": _method_splits(),
    "take": Accepts("(index)", (lambda s: call(s.x, index=s.long(0, 5)),),
                    (lambda s: call(s.x, indices=s.long(0, 5)),)),
    "take_along_dim": Accepts("(indices, dim=None)", (
        lambda s: call(s.x, indices=s.long(0, 5)),
        lambda s: call(s.x, indices=s.long(0, 1, 2).reshape(3, 1), dim=1))),
    "unsafe_split_with_sizes": _method_splits(),
}

NN = {
    "Container": Accepts("(**kwargs)", (lambda s: call(first=s.torch.nn.Identity()),),
                         (lambda s: call(s.torch.nn.Identity()),)),
    "GRU": _recurrent("", "", {}, {}),
    "LSTM": _recurrent("", "proj_size=0, ", {}, {"proj_size": 2}),
    "NLLLoss2d": Accepts(
        "(weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean')", (
            lambda s: call(weight=None, size_average=None, ignore_index=-100, reduce=None,
                           reduction="sum"),
            lambda s: call())),
    "RNN": _recurrent("nonlinearity='tanh', ", "", {"nonlinearity": "relu"}, {}),
}

ACCEPTS = {"torch": TORCH, "functional": FUNCTIONAL, "tensor": TENSOR, "nn": NN}
