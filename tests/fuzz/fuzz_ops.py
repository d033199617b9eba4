"""Per-op generators for the differential fuzzer: each op of `dongjing.ops.registry.OPS` has a
few expression templates (Python source over earlier values), or a reason it is left out."""

from __future__ import annotations

# An expression template: fn(pick) -> source text or None. `pick` is a Picker (fuzz_program):
# pick.float(), pick.any(), pick.bool(), pick.int(), pick.ndim(name), pick.shape(name),
# pick.rng, pick.const(). Templates need not be valid for every input: the generator evaluates
# each new line eagerly and drops the ones that raise a dongjing error.


def _unary(fn):
    return lambda p: f"{fn}({p.float()})"


def _binary(fn):
    def make(p):
        a = p.float()
        b = p.float_like(a) if p.rng.random() < 0.8 else p.const()
        return f"{fn}({a}, {b})" if p.rng.random() < 0.7 else f"{fn}({b}, {a})"
    return make


def _dim(p, name, keep_none=True):
    nd = p.ndim(name)
    if nd == 0 or (keep_none and p.rng.random() < 0.25):
        return "None"
    return str(p.rng.randrange(-nd, nd))


def _reduce(fn):
    def make(p):
        a = p.float()
        keep = p.rng.random() < 0.3
        return f"{fn}({a}, dim={_dim(p, a)}, keepdim={keep})"
    return make


def _softmax(p):
    a = p.float(min_ndim=1)
    fn = p.rng.choice(["dj.log_softmax", "dj.softmax"])
    return f"{fn}({a}, dim={p.rng.randrange(p.ndim(a))})"


def _logsumexp(p):
    a = p.float(min_ndim=1)
    return f"dj.logsumexp({a}, dim={p.rng.randrange(p.ndim(a))})"


def _compare(fn):
    def make(p):
        a = p.float()
        return f"{fn}({a}, {p.float_like(a) if p.rng.random() < 0.7 else p.const()})"
    return make


def _logical(fn):
    return lambda p: f"{fn}({p.bool()}, {p.bool()})"


def _where(p):
    a = p.float()
    return f"dj.where({p.bool()}, {a}, {p.float_like(a)})"


def _clip(p):
    lo = p.rng.choice(["-0.5", "None", "0.0", "-2.0"])
    hi = p.rng.choice(["0.5", "None", "1.0"]) if lo != "None" else "0.25"
    return f"dj.clip({p.float()}, {lo}, {hi})"


def _cast(p):
    target = p.rng.choice(["dj.float32", "dj.float64", "dj.int64", "dj.bool"])
    return f"dj.ops.cast({p.any()}, {target})"


def _cast_back(p):
    a = p.float()
    return f"dj.ops.cast(dj.ops.cast({a}, dj.float64), {a}.dtype)"


def _pow_scalar(p):
    return f"{p.float()} ** {p.rng.choice(['2', '3', '0.5', '-1', '1', '0', '2.5'])}"


def _pow(p):
    a = p.float()
    return f"dj.pow(dj.abs({a}) + 0.5, {p.float_like(a)})"


def _matmul(p):
    a = p.float(min_ndim=1)
    if p.rng.random() < 0.5 and p.ndim(a) >= 2:
        return f"dj.matmul({a}, dj.transpose({a}, -2, -1))"
    return f"dj.matmul({a}, {p.float(min_ndim=1)})"


def _reshape(p):
    a = p.any()
    shape = p.shape(a)
    choices = ["(-1,)", str(tuple(reversed(shape))) if shape else "(1,)"]
    if len(shape) >= 2:
        choices.append(f"({shape[0]}, -1)")
    return f"dj.reshape({a}, {p.rng.choice(choices)})"


def _reshape_like(p):
    a = p.any()
    return f"dj.ops.reshape_like({a}, {p.any()})"


def _permute(p):
    a = p.any()
    dims = list(range(p.ndim(a)))
    p.rng.shuffle(dims)
    return f"dj.permute({a}, {tuple(dims)})"


def _transpose(p):
    a = p.float(min_ndim=2)
    return f"{a}.T" if p.ndim(a) == 2 else f"dj.transpose({a}, -2, -1)"


def _expand(p):
    a = p.any()
    shape = [p.rng.choice([2, 3]) if d == 1 else d for d in p.shape(a)]
    if p.rng.random() < 0.5:
        shape.insert(0, 2)
    return f"dj.expand({a}, {tuple(shape)})"


def _broadcast_like(p):
    a = p.any()
    return f"dj.ops.broadcast_to_like({a}, {p.any()})"


def _unsqueeze(p):
    a = p.any()
    return f"dj.unsqueeze({a}, {p.rng.randint(0, p.ndim(a))})"


def _squeeze(p):
    a = p.any()
    ones = [i for i, d in enumerate(p.shape(a)) if d == 1]
    return f"dj.squeeze({a}, {p.rng.choice(ones)})" if ones else f"dj.squeeze({a})"


def _concat(p):
    a = p.any(min_ndim=1)
    fn = p.rng.choice(["dj.cat", "dj.stack"])
    other = p.rng.choice([a, p.any(min_ndim=1)])
    return f"{fn}([{a}, {other}], {p.rng.randrange(p.ndim(a))})"


def _getitem(p):
    a = p.any(min_ndim=1)
    n = p.shape(a)[0]
    keys = ["[1:]", "[::2]", "[::-1]", "[None, ..., ::2]", "[1:-1]"]  # valid for any shape
    if n > 0:
        keys += ["[0]", "[-1]", f"[np.array([{p.rng.randrange(n)}, 0])]"]
    if p.ndim(a) >= 2:
        keys.append("[:, 1:]")
    if p.shape(a)[-1] > 0:
        keys.append("[..., 0]")
    if p.rng.random() < 0.2:
        return f"{a}[{a} > 0]"  # a data-dependent shape
    return a + p.rng.choice(keys)


def _fill_like(p):
    return f"dj.full_like({p.any()}, {p.rng.choice(['2.5', '-0.0', '0', '1'])})"


def _stop_gradient(p):
    a = p.float()
    return f"dj.stop_gradient({a}) * {a}"


def _conv(p):
    a = p.float(min_ndim=2)
    h, w = p.shape(a)[-2:]
    weight = p.new_input((2, 1, 2, 2))
    return f"F.conv2d(dj.reshape({a}, (-1, 1, {h}, {w})), {weight}, None, 1, 1)"


def _conv_channels(p):
    """A convolution of two input channels (F.conv2d's conv2d op; one channel is im2col)."""
    a = p.float(min_ndim=2)
    h, w = p.shape(a)[-2:]
    weight = p.new_input((3, 2, 2, 2))
    image = f"dj.reshape({a}, (-1, 1, {h}, {w}))"
    return f"F.conv2d(dj.cat([{image}, {image} * 0.5], 1), {weight}, None, 1, 1)"


def _max_pool(p):
    a = p.float(min_ndim=2)
    h, w = p.shape(a)[-2:]
    return f"F.max_pool2d(dj.reshape({a}, (-1, 1, {h}, {w})), 2, padding=1)"


def _fold(p):
    a = p.float(min_ndim=2)
    h, w = p.shape(a)[-2:]
    pad = p.rng.choice([0, 1])
    return f"ops.fold2d(ops.unfold2d(dj.reshape({a}, (-1, 1, {h}, {w})), (2, 2), (1, 1), {pad}), " \
           f"({h}, {w}), (2, 2), (1, 1), {pad})"


def _one_hot(p):
    a = p.float(min_ndim=1)
    dim = p.rng.randrange(p.ndim(a))
    return f"dj.ops.one_hot(dj.argmax({a}, dim={dim}), {max(p.shape(a)[dim], 1)})"


def _arg(fn):
    def make(p):
        a = p.float(min_ndim=1)
        return f"{fn}({a}, dim={_dim(p, a, keep_none=False)})"
    return make


def _mean(p):
    a = p.float()
    return f"dj.mean({a}, dim={_dim(p, a)})"


def _cond(p):
    a = p.float()
    return f"dj.cond(dj.sum({a}) > 0, lambda: {a} * 2.0, lambda: {a} - 1.0)"


def _while(p):
    a = p.float()
    return (f"dj.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 0.5), "
            f"(dj.tensor(0), {a}), maximum_iterations=3)[1]")


def _tanh_backward(p):
    a = p.float()
    return f"dj.ops.elementwise.tanh_backward({a}, {p.float_like(a)})"


def _relu_backward(p):
    a = p.float()
    return f"dj.ops.elementwise.relu_backward({a}, {p.float_like(a)})"


def _scan(fn):
    def make(p):
        a = p.float(min_ndim=1)
        return f"{fn}({a}, dim={p.rng.randrange(p.ndim(a))})"
    return make


def _logic_reduce(fn):
    def make(p):
        a = p.float()
        return f"{fn}({a} > 0, dim={_dim(p, a)})"
    return make


def _sorting(p):
    a = p.float(min_ndim=1)
    if p.rng.random() < 0.5:
        return f"dj.argsort({a}, dim=-1, descending={p.rng.random() < 0.5})"
    return f"dj.topk({a}, 1, dim=-1).values"


def _layout(p):
    a = p.float(min_ndim=1)
    d = p.rng.randrange(p.ndim(a))
    return p.rng.choice([f"dj.flip({a}, {d})", f"dj.roll({a}, 1, {d})"])


def _triangle(p):
    a = p.float(min_ndim=2)
    return f"dj.{p.rng.choice(['tril', 'triu'])}({a}, {p.rng.choice([-1, 0, 1])})"


def _norm(p):
    a = p.float()
    return f"dj.norm({a})"


GENERATORS = {
    "floor": [_unary("dj.floor")], "ceil": [_unary("dj.ceil")], "round": [_unary("dj.round")],
    "trunc": [_unary("dj.trunc")], "isnan": [_unary("dj.isnan")],
    "isinf": [_unary("dj.isinf")], "isfinite": [_unary("dj.isfinite")],
    "floor_divide": [_binary("dj.floor_divide")], "remainder": [_binary("dj.remainder")],
    "prod": [_reduce("dj.prod")], "cumsum": [_scan("dj.cumsum")],
    "cumprod": [_scan("dj.cumprod")], "all": [_logic_reduce("dj.all")],
    "any": [_logic_reduce("dj.any")], "norm2": [_norm], "argsort": [_sorting],
    "topk": [_sorting], "flip": [_layout], "roll": [_layout], "tril": [_triangle],
    "triu": [_triangle],
    "abs": [_unary("dj.abs")], "neg": [_unary("dj.neg"), _unary("-")],
    "exp": [_unary("dj.exp")], "log": [_unary("dj.log"), _logsumexp],
    "sqrt": [_unary("dj.sqrt")], "tanh": [_unary("dj.tanh")], "sigmoid": [_unary("dj.sigmoid")],
    "relu": [_unary("dj.relu")], "sign": [_unary("dj.sign")], "erf": [_unary("ops.erf")],
    "add": [_binary("dj.add")], "sub": [_binary("dj.sub")], "mul": [_binary("dj.mul")],
    "div": [_binary("dj.div")], "maximum": [_binary("dj.maximum")],
    "minimum": [_binary("dj.minimum")], "pow": [_pow], "pow_scalar": [_pow_scalar],
    "tanh_backward": [_tanh_backward], "relu_backward": [_relu_backward],
    "eq": [_compare("dj.eq")], "ne": [_compare("dj.ne")], "lt": [_compare("dj.lt")],
    "le": [_compare("dj.le")], "gt": [_compare("dj.gt")], "ge": [_compare("dj.ge")],
    "logical_and": [_logical("dj.logical_and")], "logical_or": [_logical("dj.logical_or")],
    "logical_not": [lambda p: f"dj.logical_not({p.bool()})"],
    "where": [_where], "clip": [_clip], "cast": [_cast, _cast_back], "clone": [
        lambda p: f"dj.ops.clone({p.any()})"], "fill_like": [_fill_like],
    "stop_gradient": [_stop_gradient],
    "sum": [_reduce("dj.sum")], "amax": [_reduce("dj.amax")], "amin": [_reduce("dj.amin")],
    "argmax": [_arg("dj.argmax")], "argmin": [_arg("dj.argmin")], "count": [_mean],
    "log_softmax": [_softmax], "matmul": [_matmul], "reshape": [_reshape],
    "reshape_like": [_reshape_like], "permute": [_permute, _transpose], "expand": [_expand],
    "broadcast_to_like": [_broadcast_like], "unsqueeze": [_unsqueeze], "squeeze": [_squeeze],
    "concat": [_concat], "getitem": [_getitem], "getitem_grad": [_getitem],  # via gradients
    "unfold2d": [_conv, _fold], "fold2d": [_fold], "one_hot": [_one_hot],
    "conv2d": [_conv_channels], "conv2d_input_grad": [_conv_channels],  # and via gradients
    "conv2d_weight_grad": [_conv_channels],
    "max_pool2d": [_max_pool], "max_pool2d_backward": [_max_pool],  # via gradients
    "cond": [_cond], "while_loop": [_while], "tuple_get": [_while],  # a loop's outputs
    "constant": [_binary("dj.mul")],  # Python numbers become constants
    "sum_to_like": [_binary("dj.add")],  # the gradient of a broadcasting op
}
GENERATORS.update({  # ops/torch_compat_math.py
    "fmod": [_binary("dj.fmod")], "hypot": [_binary("dj.hypot")],
    "logaddexp": [_binary("dj.logaddexp")],
})


EXEMPT = {
    "placeholder": "every program input is one",
    "variable": "state: covered by tests/test_static_* and the jit training tests",
    "assign": "state: covered by tests/test_static_* and the jit training tests",
    "group": "state: covered by tests/test_static_* and the jit training tests",
    "dropout_mask": "random: eager and graph draw different masks by design",
    "uniform_like": "random: eager and graph draw different values by design",
    "all_reduce": "distributed: needs a process group (tests/test_distributed*)",
    "tp_copy": "tensor parallel: needs a process group (tests/test_distributed_tensor_*)",
    "tp_reduce": "tensor parallel: needs a process group (tests/test_distributed_tensor_*)",
    "tp_gather": "tensor parallel: needs a process group (tests/test_distributed_tensor_*)",
    "tp_split": "tensor parallel: needs a process group (tests/test_distributed_tensor_*)",
    "tp_reduce_scatter": "tensor parallel: needs a process group (tests/test_distributed_tensor_*)",
    "tf_random": "random (dongjing.compat.v1): eager and graph draw differently by design",
    "tf_shape": "compat.v1's run-time shape: tests/test_compat_v1_ops.py",
    "tf_reshape_to": "compat.v1's reshape to a run-time shape: tests/test_compat_v1_ops.py",
    "tf_range": "compat.v1's range of run-time length: tests/test_compat_v1_ops.py",
    "tf_unique": "compat.v1's unique: tests/test_compat_v1_ops.py",
    "tf_unique_index": "compat.v1's unique: tests/test_compat_v1_ops.py",
    "tf_iterator_next": "reads a compat.v1 tf.data iterator: tests/test_compat_v1_data.py",
    "tf_iterator_component": "reads a compat.v1 tf.data iterator: tests/test_compat_v1_data.py",
    "tf_iterator_restart": "restarts a compat.v1 tf.data iterator: tests/test_compat_v1_data.py",
    "tf_matrix_inverse": "compat.v1's tf.matrix_inverse: tests/test_compat_v1_more_ops.py",
    "tf_matrix_determinant": "compat.v1's determinant: tests/test_compat_v1_more_ops.py",
    "tf_where_indices": "compat.v1's where(condition): tests/test_compat_v1_more_ops.py",
    "tf_fill": "compat.v1's fill to a run-time shape: tests/test_compat_v1_more_ops.py",
    "tf_placeholder_with_default": "compat.v1's default value: tests/test_compat_v1_more_ops.py",
    "tf_py_func": "runs a Python function: tests/test_compat_v1_more_ops.py",
    "tf_py_func_result": "runs a Python function: tests/test_compat_v1_more_ops.py",
    "tf_tile": "compat.v1's tile by run-time multiples: tests/test_compat_v1_more_ops.py",
    "tf_tile_grad": "compat.v1's tile gradient: tests/test_compat_v1_more_ops.py",
    "tf_slice": "compat.v1's slice at run-time offsets: tests/test_compat_v1_more_ops.py",
    "tf_slice_grad": "compat.v1's slice gradient: tests/test_compat_v1_more_ops.py",
    "tf_log_uniform_candidates": "random (compat.v1's candidate sampler)",
    "tf_case_exclusive": "compat.v1's tf.case check: tests/test_compat_v1_ops.py",
    "tf_print": "an effect (printing): tests/test_compat_v1_ops.py",
    "binary_cross_entropy": "needs probabilities in [0, 1]: tests/op_cases.py and "
                            "tests/test_nn_bce_edges.py",
    "gather": "needs in-range index tensors: tests/op_cases.py and tests/test_ops_more.py",
    "scatter": "needs in-range index tensors: tests/op_cases.py and tests/test_ops_more.py",
    "scatter_add": "needs in-range index tensors: tests/op_cases.py and tests/test_ops_more.py",
    "index_in_range": "needs in-range index tensors: index_select and embedding call it "
                      "(tests/test_reliability_round3_inputs.py, tests/op_cases.py)",
    "einsum": "needs an equation matching the operands: tests/op_cases.py, test_ops_more.py",
    # registered when a graph first differentiates a loop (so the check below may run before
    # they exist); the while_loop and cond generators' programs make them
    "arg": "a sub-graph's argument: made by the cond and while_loop generators",
    "while_record": "a loop's recorded values: made by the while_loop generator's gradients",
    "while_grad": "a loop's gradient: made by the while_loop generator's gradients",
    "slice_assign": "recorded only by eager in-place writes through views (tests/test_views.py "
                    "and its case in tests/op_cases.py)",
}
# the decompositions need square, well-conditioned, symmetric or positive-definite matrices
# (random programs would mostly raise): tests/op_cases_linalg.py and tests/test_linalg.py
EXEMPT.update({name: "linear algebra on matrices a random program rarely makes valid: "
                     "tests/op_cases_linalg.py, tests/test_linalg.py"
               for name in ("linalg_inv", "linalg_det", "linalg_logabsdet", "linalg_det_sign",
                            "linalg_solve", "linalg_cholesky", "linalg_eigvalsh",
                            "linalg_eigh_vectors", "linalg_svdvals", "linalg_svd_u",
                            "linalg_svd_vh", "linalg_qr_q", "linalg_qr_r")})
