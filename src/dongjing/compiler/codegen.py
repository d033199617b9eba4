"""Code generation: an optimized graph becomes one Python function, one line per node.

The only place that writes Python source. Variables are generated (`v0`, `v1`, ...: ASCII,
unique, never made from a node's name, which may be any string); each line ends with a comment
naming the node and the user's source line that created it, escaped (`safety.py`). Ops lower to
their NumPy ufunc (with `out=` into a planned buffer) where the op table says so, else to a call
of `op.forward`.
"""

from __future__ import annotations

import functools

import numpy as np

from ..backends import cuda_gemm
from ..core.low_precision import needs_widening, widened
from ..cpu_kernels import parallel
from ..cpu_kernels.kernels import FORMULA_NAMES, compile_kernel, formula_lines
from ..ops.index import Slot
from . import cuda_kernels, loops
from .device_ops import concat_by_copies
from .ir import numel
from .memory import MemoryPlan, kernel_output
from .safety import (
    comment,
    global_base,
    is_plain,
    is_reserved,
    keyword_argument,
    local_name,
    percent_name,
)


class Namespace:
    """The globals of the generated function: helpers, constants, Variables, buffers.
    `_np` is the array namespace the program runs on (NumPy, or a device backend's)."""

    def __init__(self, xp=np):
        self.values: dict = {"_np": xp}
        self._ids: dict = {}

    def bind(self, base: str, value) -> str:
        """A global name for `value` (one name per object); `base` is made an ASCII identifier
        starting with `_` (see `safety.global_base`)."""
        key = id(value)
        name = self._ids.get(key)
        if name is not None:
            return name
        name = self._free(base)
        self.values[name] = value
        self._ids[key] = name
        return name

    def reserve(self, base: str) -> str:
        """A global name not taken yet, for a function the generated source defines."""
        name = self._free(base)
        self.values[name] = None
        return name

    def _free(self, base: str) -> str:
        """`global_base(base)`, or with `_1`, `_2`, ... appended: a name neither bound here
        nor reserved for generated code's own names."""
        name = base = global_base(base)
        i = 1
        while name in self.values or is_reserved(name):
            name = f"{base}_{i}"
            i += 1
        return name


def _literal(value):
    """Python source for a simple attribute value, or None if it must be bound by name. Only
    the exact builtin types: a subclass's `repr` (an enum's, say) need not be a literal."""
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return repr(value)
    if kind is float:
        return repr(value) if np.isfinite(value) else None
    if isinstance(value, np.dtype):  # builtin dtypes only: bfloat16's `str` is "<V2"
        return f"_np.dtype({value.str!r})" if value.kind != "V" else None
    if kind is tuple:
        parts = [_literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return None


def _ufunc_source(ufunc, xp=np) -> str | None:
    name = ufunc.__name__
    if getattr(np, name, None) is not ufunc:
        return None
    return f"_np.{name}" if xp is np or hasattr(xp, name) else None


def forward_out_for(op, xp):
    """`op.forward_out` bound to the array namespace `xp`, or None when it cannot be."""
    fn = op.forward_out
    if fn is None or xp is np:
        return fn
    if isinstance(fn, np.ufunc):
        return getattr(xp, fn.__name__, None)
    if isinstance(fn, functools.partial) and fn.args[:1] == (np,):
        return functools.partial(fn.func, xp, *fn.args[1:], **fn.keywords)
    return None


def _permute_source(gen, x, attrs):
    return f"{x}.transpose({gen.literal('_dims', attrs['dims'])})"


def _reshape_source(gen, x, attrs):
    return f"{x}.reshape({gen.literal('_shape', attrs['shape'])})"


def _getitem_source(node, args) -> str | None:
    """`x[...]` written out for a basic key (ints, slices, None, ..., and 0-d integer index
    tensors, which index like ints): what the op's forward computes, without building the key
    at run time. None for other keys (arrays, masks): the op's forward runs."""
    if any(i.shape != () or i.dtype.kind not in "iu" for i in node.inputs[1:]):
        return None
    key = node.attrs["key"]
    parts = []
    for item in key:
        if type(item) is Slot:
            parts.append(f"int({args[1 + item.i]})")
        elif type(item) is tuple:  # ("slice", start, stop, step)
            parts.append(":".join("" if v is None else str(int(v)) for v in item[1:]))
        elif item is None or item is Ellipsis:
            parts.append(repr(item))
        elif type(item) is int:
            parts.append(str(item))
        else:
            return None
    if len(node.inputs) == 1 and Ellipsis not in key:
        parts.append("...")  # as the forward: an all-int key gives a 0-d view, not a copy
    return f"{args[0]}[{', '.join(parts)},]"


_VIEW_LOWERING = {"permute": _permute_source, "reshape": _reshape_source}


def kernel_source(name: str, body, kinds: list) -> tuple[str, dict]:
    """The scalar loop of a fused group (for numba): each input element loaded once, each
    output written once; every step is the op's own ufunc applied to scalars."""
    ufuncs = {}
    n_in = len(kinds)
    params = [f"in{k}" for k in range(n_in)] + [f"out{k}" for k in range(len(body.outputs))]
    lines = [f"def {name}(n, {', '.join(params)}):", "    for i in range(n):"]
    for k, kind in enumerate(kinds):
        lines.append(f"        a{k} = in{k}[i]" if kind == "array" else f"        a{k} = in{k}")
    for j, (op, step_args) in enumerate(body.steps):
        refs = [f"a{a[1]}" if a[0] == "in" else f"t{a[1]}" for a in step_args]
        inline = formula_lines(op, j, refs[0]) if len(refs) == 1 else None
        if inline is not None:  # a transcendental written so that LLVM vectorizes it
            ufuncs.update(FORMULA_NAMES)
            lines += ["        " + line for line in inline]
            continue
        ufunc = op.ufunc
        fn = f"_u_{ufunc.__name__}"
        if not is_plain(ufunc.__name__) or ufuncs.get(fn, ufunc) is not ufunc:
            fn = f"_u{j}"  # a ufunc made by np.frompyfunc, say: its name is no identifier
        ufuncs[fn] = ufunc
        lines.append(f"        t{j} = {fn}({', '.join(refs)})")
    for k, j in enumerate(body.outputs):
        lines.append(f"        out{k}[i] = t{j}")
    return "\n".join(lines) + "\n", ufuncs


class Generator:
    """Writes the function for one graph, schedule, memory plan and feed/fetch lists."""

    def __init__(self, graph, order, fetches, feeds, plan: MemoryPlan | None,
                 ns: Namespace | None = None, taken: set | None = None, buf_prefix: str = "_buf",
                 backend=None):
        self.graph, self.order, self.fetches, self.feeds = graph, order, fetches, feeds
        self.plan = plan or MemoryPlan()
        # a device backend (CuPy): ops bound to its namespace, constants moved there, fused
        # groups as CUDA kernels; None for NumPy
        self.backend = backend
        self.xp = np if backend is None else backend.xp
        self.ns = ns if ns is not None else Namespace(self.xp)
        self.var: dict = {}
        self.taken: set = taken if taken is not None else set()
        self.buf_prefix = buf_prefix  # a loop body's buffers get names of their own
        self.kernels: dict = {}
        self.kernel_names: dict = {}  # fused node -> its kernel's global name
        self.out_override: dict = {}  # node -> storage a generated loop gives it (loops.py)
        self.loops: dict = {}  # control node -> the name of its generated loop function
        self.loop_sources: dict = {}  # that function's name -> its source
        self.commits: list = []
        refs = [id(n.attrs["ref"]) for n in order if n.op.kind == "effect" and "ref" in n.attrs]
        self.assigned_once = {r for r in refs if refs.count(r) == 1}

    def name(self, node) -> str:
        var = self.var.get(node)
        if var is None:
            var = self.var[node] = local_name(self.taken)
        return var

    def literal(self, base: str, value) -> str:
        """Source for an attribute value: a Python literal (strings escaped by `repr`), else
        a global bound to the value itself."""
        text = _literal(value)
        return self.ns.bind(base, value) if text is None else text

    def attrs_source(self, node) -> str:
        return ", ".join(keyword_argument(key, self.literal(f"_{key}", value))
                         for key, value in node.attrs.items())

    def out_target(self, node) -> str | None:
        """Where `node` writes: a planned buffer, a Variable's array (in place), storage a
        generated loop gives it, or nowhere."""
        target = self.out_override.get(node)
        if target is not None:
            return target
        assign = self.plan.in_place.get(node)
        if assign is not None:
            return self.ns.bind("_" + self.name(assign) + "_ref", assign.attrs["ref"]) + "._data"
        buf = self.plan.buffer_of.get(node)
        return None if buf is None else f"{self.buf_prefix}{buf}"

    def call(self, node) -> str:
        """The right-hand side computing `node`."""
        args = [self.name(i) for i in node.inputs]
        op = node.op
        out = self.out_target(node)
        if op.name in loops.LOOP_OPS:
            call = loops.loop_call(self, node, args)
            if call is not None:
                return call
        if op.kind == "fused":
            return self.kernel_call(node, args)
        if needs_widening(op, [i.dtype for i in node.inputs]):  # 16-bit floats: in float32
            fn = self.ns.bind(f"_{op.name}_widened", widened(self.forward(op), node.dtype))
            extra = self.attrs_source(node)
            call = f"{fn}({', '.join(args + ([extra] if extra else []))})"
            return call if out is None else f"{out}; _np.copyto({out}, {call}, casting='unsafe')"
        if kernel_output(node):
            return f"{args[0]}[{int(node.attrs['index'])}]"
        if op.name == "getitem" and out is None:
            text = _getitem_source(node, args)
            if text is not None:
                return text
        special = _VIEW_LOWERING.get(op.name)
        if special is not None and out is None:
            return special(self, args[0], node.attrs)
        if self.backend is not None and op.name == "concat":  # capturable (device_ops.py)

            fn = self.ns.bind("_concat_copies", concat_by_copies(self.xp))
            extra = f"dim={self.literal('_dim', node.attrs['dim'])}"
            extra += f", out={out}" if out else ""
            return f"{fn}({', '.join(args)}, {extra})"
        if self.backend is not None and op.name == "matmul" and self.gemm() is not None:
            fn = self.ns.bind("_gemm", self.gemm())  # cuBLAS itself: capturable (cuda_gemm.py)
            return f"{fn}({args[0]}, {args[1]}{', ' + out if out else ''})"
        ufunc = None if op.ufunc is None else _ufunc_source(op.ufunc, self.xp)
        if op.name == "sum" and out is not None and node.dtype == node.inputs[0].dtype:
            dim = self.literal("_dim", node.attrs.get("dim"))
            keep = self.literal("_keepdim", node.attrs.get("keepdim", False))
            if self.backend is not None:
                return f"_np.sum({args[0]}, axis={dim}, out={out}, keepdims={keep})"
            return f"_np.add.reduce({args[0]}, {dim}, None, {out}, {keep})"
        if out is not None and self.splits(node):
            fn = self.ns.bind("_split_ufunc", parallel.split_ufunc)
            return f"{fn}({ufunc}, {out}, {', '.join(args)})"
        extra = self.attrs_source(node)
        if out is not None:
            if ufunc and not node.attrs:
                return f"{ufunc}({', '.join(args)}, out={out})"
            write = forward_out_for(op, self.xp)
            if write is None:  # no out= form on this backend: compute, then copy in
                fn = self.ns.bind(f"_{op.name}", self.forward(op))
                call = f"{fn}({', '.join(args + ([extra] if extra else []))})"
                return f"{out}; _np.copyto({out}, {call}, casting='unsafe')"
            fn = self.ns.bind(f"_{op.name}_out", write)
            call = f"{fn}({', '.join(args + [f'out={out}'] + ([extra] if extra else []))})"
            return f"{out}; {call}"  # forward_out fills `out` (its return value is not used)
        if ufunc and not node.attrs:
            return f"{ufunc}({', '.join(args)})"
        fn = self.ns.bind(f"_{op.name}", self.forward(op))
        return f"{fn}({', '.join(args + ([extra] if extra else []))})"

    def gemm(self):
        """The cuBLAS matrix product for this program's device, or None (cuda_gemm.py)."""
        return cuda_gemm.for_backend(self.backend)

    def forward(self, op):
        """`op`'s forward on this program's backend."""
        return op.forward if self.backend is None else op.forward_for(self.xp)

    def generate(self, function_name: str = "program", timed: bool = False) -> str:
        """The function's source. `timed` (for the profiler) also appends `_clk()` to a list
        `_ts` after each node that computes, returned third; `self.ticks` names each tick."""
        self.commits = []
        self.ticks: list = []  # what ran between tick i and i+1: a node, or "outputs"/"commit"
        feed_set = set(self.feeds)
        feed_names = [self.name(n) if n is not None else "_" for n in self.feeds]
        lines = [f"def {function_name}(feeds):"]
        if timed:
            lines.append("    _ts = [_clk()]; _tsa = _ts.append")
        if self.feeds:
            fed = ", ".join(percent_name(n.name) if n is not None else "-" for n in self.feeds)
            lines.append(f"    {', '.join(feed_names)}{',' if len(feed_names) == 1 else ''}"
                         f" = feeds  # {fed}")
        lines.append("    pending = []")
        for node in self.order:
            if node in feed_set:
                continue
            lines.append(self.statement(node))
            if timed and node.op.kind != "source" and not kernel_output(node):
                lines.append("    _tsa(_clk())")
                self.ticks.append(node)
        outs = []
        for node in self.fetches:
            if node.op.kind == "effect":
                outs.append("None")
            elif node.dtype is None:  # a control node's tuple of arrays
                outs.append(f"tuple(_np.array(v) for v in {self.name(node)})")
            elif node in self.plan.fresh and node not in feed_set:
                outs.append(f"_np.asarray({self.name(node)})")
            else:
                outs.append(f"_np.array({self.name(node)})")  # a copy the user may keep
        lines.append(f"    outputs = [{', '.join(outs)}]  # taken before any Variable changes")
        if timed:
            lines.append("    _tsa(_clk())")
            self.ticks.append("outputs")
        if self.commits:
            lines.append("    # every value is computed: commit the assignments")
            lines.extend(self.commits)
            if timed:
                lines.append("    _tsa(_clk())")
                self.ticks.append("commit")
        lines.append("    return outputs, pending" + (", _ts" if timed else ""))
        return "\n".join(lines) + "\n"

    def statement(self, node) -> str:
        op = node.op
        var = self.name(node)
        if op.name == "constant":
            value = node.attrs["value"]
            if self.backend is not None:  # moved to the device once, when the program is built
                value = self.backend.move(value)
            text = f"{var} = {self.ns.bind(f'_{var}_const', value)}"
        elif op.name == "variable":
            text = f"{var} = {self.ns.bind('_' + var + '_ref', node.attrs['ref'])}._data"
        elif op.kind == "source":
            return f"    raise _SourceError({node.name!r}){comment(None, node.source)}"
        elif op.kind == "effect" and "ref" in node.attrs:
            text = self.assignment(node)
        else:
            text = f"{var} = {self.call(node)}"
        return f"    {text}{comment(node.name, node.source)}"

    def splits(self, node) -> bool:
        """A large same-shape ufunc call that runs as two halves on two threads."""
        op = node.op
        n = numel(node.shape)
        if op.kind != "elementwise" or op.ufunc is None or node.attrs or n is None:
            return False
        if self.backend is not None:
            return False
        if not _ufunc_source(op.ufunc):
            return False
        if n < parallel.min_size() or parallel.threads() < 2 or op.ufunc.nout != 1:
            return False
        return all(i.shape == node.shape or numel(i.shape) == 1 for i in node.inputs)

    def kernel_call(self, node, args) -> str:
        """Allocate (or take planned buffers for) a fused kernel's outputs, then call it."""
        body = node.attrs["body"]
        outs = sorted((u for u in self.order if kernel_output(u) and u.inputs[0] is node),
                      key=lambda u: u.attrs["index"])
        if self.backend is not None:
            return self.cuda_kernel_call(node, args, body, outs)
        flat_in, kinds = [], []
        for inp, arg in zip(node.inputs, args):
            if numel(inp.shape) == 1 and (numel(inp.shape) != body.size or not inp.shape):
                flat_in.append(f"{arg}[()]" if not inp.shape else f"{arg}.reshape(-1)[0]")
                kinds.append("scalar")
            else:
                flat_in.append(arg if len(inp.shape) == 1 else f"{arg}.reshape(-1)")
                kinds.append("array")
        storage, flat_out = [], []
        for u in outs:
            target = self.out_target(u)
            if target is None:
                target = f"_np.empty({_literal(tuple(u.shape))}, {_literal(u.dtype)})"
            storage.append(target)
        var = self.name(node)
        for k, u in enumerate(outs):
            flat_out.append(f"{var}[{k}]" if len(u.shape) == 1 else f"{var}[{k}].reshape(-1)")
        kernel_name = self.kernel_name(node)
        source, ufuncs = kernel_source(kernel_name, body, kinds)
        params = tuple((kind, inp.dtype.name) for kind, inp in zip(kinds, node.inputs))
        params += tuple(("out", u.dtype.name) for u in outs)
        kernel = compile_kernel(source, kernel_name, ufuncs, params)
        self.ns.values[kernel_name] = kernel
        self.kernels[kernel_name] = source
        tuple_text = "(" + ", ".join(storage) + ("," if len(storage) == 1 else "") + ")"
        call = f"{kernel_name}({body.size}, {', '.join(flat_in + flat_out)})"
        if body.size >= parallel.min_size() and parallel.threads() > 1:
            fn = self.ns.bind("_split_kernel", parallel.split_kernel)
            flags = tuple(k == "array" for k in kinds) + (True,) * len(flat_out)
            all_args = ", ".join(flat_in + flat_out)
            call = (f"{fn}({kernel_name}, {body.size}, ({all_args},), {_literal(flags)})")
        return f"{tuple_text}; {call}"

    def kernel_name(self, node) -> str:
        """The global naming `node`'s fused kernel: one per node, kept when the source is
        generated again (the profiler's timed variant), unique in the namespace that loop
        bodies share."""
        name = self.kernel_names.get(node)
        if name is None:
            name = self.kernel_names[node] = self.ns.reserve("_kernel_fused")
        return name

    def cuda_kernel_call(self, node, args, body, outs) -> str:
        """A fused group as one CUDA kernel (CuPy `ElementwiseKernel`) writing flat views of
        its outputs; inputs of one element broadcast."""
        storage, flat = [], []
        for inp, arg in zip(node.inputs, args):
            whole = numel(inp.shape) == body.size and inp.shape
            flat.append(f"{arg}.reshape(-1)" if whole else f"{arg}.reshape(1)")
        var = self.name(node)
        for k, u in enumerate(outs):
            target = self.out_target(u)
            if target is None:
                target = f"_np.empty({_literal(tuple(u.shape))}, {_literal(u.dtype)})"
            storage.append(target)
            flat.append(f"{var}[{k}].reshape(-1)")
        kernel, source = cuda_kernels.build(
            self.xp, body, [i.dtype.name for i in node.inputs], [u.dtype.name for u in outs])
        kernel_name = self.kernel_name(node)
        self.ns.values[kernel_name] = kernel
        self.kernels[kernel_name] = source
        tuple_text = "(" + ", ".join(storage) + ("," if len(storage) == 1 else "") + ")"
        return f"{tuple_text}; {kernel_name}({', '.join(flat)})"

    def assignment(self, node) -> str:
        """An `assign`: in place already, committed at the end, or left to commit_assignments."""
        var = self.name(node)
        ref_obj = node.attrs["ref"]
        ref = self.ns.bind("_" + var + "_ref", ref_obj)
        target, value = node.inputs
        plain = value.shape == target.shape and value.dtype == target.dtype
        rhs = self.name(value) if plain else self.call(node)
        if value in self.plan.in_place:
            return f"{var} = {rhs}; {ref}._version[0] += 1  # (written in place)"
        sources = [r for r in self.plan.roots.get(value, {value}) if r.op.kind == "source"]
        if plain and not sources and id(ref_obj) in self.assigned_once and self.plan.roots:
            self.commits.append(f"    _np.copyto({ref}._data, {var}); {ref}._version[0] += 1")
            return f"{var} = {rhs}"
        return f"{var} = {rhs}; pending.append(({ref}, {var}))"

    def buffers(self) -> None:
        empty = np.empty if self.backend is None else self.backend.empty
        for i, (shape, dtype) in enumerate(self.plan.buffers):
            self.ns.values[f"{self.buf_prefix}{i}"] = empty(shape, dtype)
