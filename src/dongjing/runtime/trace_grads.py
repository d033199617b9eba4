"""The gradients of a dj.jit trace: `loss.backward()` on a symbolic loss and `.grad` of eager
parameters, kept in a mapping of the trace (never on the parameters) while the function traces."""

from __future__ import annotations

from ..graph.builder import placeholder
from ..graph.gradients import gradients
from ..tensor import Tensor, grad_scope


class TraceGrads:
    """Symbolic `.grad` of eager tensors during one trace (installed as `grad_scope.current`).

    A parameter's gradient starts as its eager `.grad` at call time: None (a guard) or a
    placeholder fed with that value on every call (a guard too). `backward()` accumulates
    `dj.gradients` onto it; setting `.grad` (as `zero_grad()` does) replaces it.
    """

    def __init__(self, graph):
        self.graph = graph
        self.grads: dict[int, tuple] = {}  # id(tensor) -> (tensor, grad Tensor or None)
        self.written: dict[int, Tensor] = {}  # id -> tensor whose grad the trace set
        self.guards: list[tuple] = []  # (tensor, grad was None at trace time)
        self.inputs: list[tuple] = []  # (tensor, placeholder fed with its eager .grad)

    # --- installed as the grad scope ----------------------------------------------------------
    def __enter__(self) -> TraceGrads:
        self._outer = grad_scope.current
        grad_scope.enter(self)
        return self

    def __exit__(self, *exc) -> bool:
        grad_scope.leave(self._outer)
        return False

    def get_grad(self, t: Tensor):
        entry = self.grads.get(id(t))
        if entry is not None:
            return entry[1]
        eager = t._grad
        self.guards.append((t, eager is None))
        grad = None
        if eager is not None:
            with self.graph.as_default():
                grad = placeholder(eager.shape, eager.dtype, name="grad_in")
            self.inputs.append((t, grad))
        self.grads[id(t)] = (t, grad)
        return grad

    def set_grad(self, t: Tensor, value) -> None:
        self.grads[id(t)] = (t, value)
        self.written[id(t)] = t

    # --- loss.backward() ------------------------------------------------------------------------
    def backward(self, tensors, grad_tensors) -> None:
        """Accumulate d(sum of tensors)/d(p) onto the symbolic grad of every trainable variable
        the tensors depend on."""
        graph = next(t._node.graph for t in tensors if t._node is not None)
        while graph.parent is not None:
            graph = graph.parent
        params = [n.attrs["ref"] for n in graph.variables() if _trainable(n.attrs["ref"])]
        grad_ys = None if all(g is None for g in grad_tensors) else list(grad_tensors)
        with self.graph.as_default():
            grads = gradients(list(tensors), params, grad_ys)
            for p, g in zip(params, grads):
                if g is None:
                    continue
                old = self.get_grad(p)
                self.set_grad(p, g if old is None else old + g)

    def results(self) -> list[tuple]:
        """(tensor, final grad) for every tensor whose grad the trace set."""
        return [(t, self.grads[key][1]) for key, t in self.written.items()]


def _trainable(ref) -> bool:
    return bool(ref.requires_grad) and getattr(ref, "trainable", True)


def guards_hold(guards: list[tuple]) -> bool:
    """Whether each guarded tensor's `.grad` is still None / not None as when traced."""
    for t, was_none in guards:
        if (t._grad is None) != was_none:
            return False
    return True


def describe_guard_change(guards: list[tuple]) -> list[str]:
    """Why the guards of a trace fail now, one string per changed tensor."""
    reasons = []
    for t, was_none in guards:
        if (t._grad is None) != was_none:
            name = getattr(t, "var_name", None) or type(t).__name__
            before, after = ("None", "a tensor") if was_none else ("a tensor", "None")
            reasons.append(f".grad of {name} {_shape(t.shape)}: {before} -> {after}")
    if len(reasons) > 2:
        reasons[2:] = [f"and {len(reasons) - 2} more"]
    return reasons


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
