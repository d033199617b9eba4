"""Eager views: basic indexing shares memory and the version counter with its base, and an
in-place write through a view rewrites the base's history (PyTorch's view + CopySlices).

A view `v = base[key]` records `(base, key)` in `v._view_of`; the base keeps weak references
to its views in a list (`base._views`, pruned as it grows; cheaper than a WeakSet, whose
per-view callback costs as much as the indexing). A recorded in-place op on `t` (a view or not):

1. rebuilds the current history of `t` from its root base through `getitem` links,
2. computes the new value out of place from a private copy (so saved values stay intact),
3. threads it back up the chain with `slice_assign` (the functional CopySlices), gives the
   root that history, writes the value into the shared memory and bumps the shared version,
4. regenerates the history of every live view of the root, so views made earlier see it.
"""

from __future__ import annotations

from weakref import ref as _ref

from .. import dtypes
from ..core import late
from ..errors import DongjingError, DTypeError, ShapeError
from ..tensor import Tensor
from .grad_mode import state as _grad_state
from .provenance import note_modified


class InplaceError(DongjingError, RuntimeError):
    """An in-place operation autograd cannot record correctly (as PyTorch refuses it)."""


def mark_view(out, base, key: tuple) -> None:
    """Make the eager tensor `out` (= `base[key]`, sharing memory) a view of `base`."""
    out._version = base._version
    out._view_of = (base, key)
    views = getattr(base, "_views", None)
    if views is None:
        base._views = [_ref(out)]
        return
    views.append(_ref(out))
    n = len(views)
    if n >= 32 and not n & (n - 1):  # at each power of two: drop the dead (amortised O(1))
        views[:] = [r for r in views if r() is not None]


def live_views(t) -> list:
    """The views of `t` still alive."""
    refs = getattr(t, "_views", None)
    if not refs:
        return []
    found = [r() for r in refs]
    return [v for v in found if v is not None]


def chain_of(t) -> list:
    """`[root, ..., t]`: the bases `t` is a view of, outermost first."""
    links = [t]
    while True:
        link = links[-1]._view_of
        if link is None:
            break
        links.append(link[0])
    links.reverse()
    return links


def check_inplace(t, name: str) -> None:
    """Refuse, as PyTorch does, an in-place op on a leaf that requires grad or a view of one
    (only while gradients are recorded)."""
    if not _grad_state.grad_enabled:
        return
    root = chain_of(t)[0]
    if not (root.requires_grad and root.grad_fn is None):
        return
    if root is t:
        raise InplaceError(
            f"a leaf tensor that requires grad (shape {t.shape}) is being used in an in-place "
            f"operation ({name}); wrap it in `with dj.no_grad():` or use its .data"
        )
    raise InplaceError(
        f"a view of a leaf tensor that requires grad (base shape {root.shape}, view shape "
        f"{t.shape}) is being used in an in-place operation ({name}); wrap it in "
        "`with dj.no_grad():` or use the base's .data"
    )


def tracked(t, *operands) -> bool:
    """Whether an in-place op on `t` with `operands` must be recorded for backward."""
    if not _grad_state.grad_enabled:
        return False
    if t.requires_grad or any(getattr(o, "requires_grad", False) for o in operands):
        return True
    return t._view_of is not None and chain_of(t)[0].requires_grad


def write_recorded(t, name: str, compute) -> None:
    """Set `t` to `compute(current)` in place, recording the history (see module docstring).

    `compute` gets a tensor holding a private copy of `t`'s value with `t`'s current history
    and returns the new value as a tensor of `t`'s shape.
    """
    chain = chain_of(t)
    handles = [_handle(chain[0])]
    for link in chain[1:]:
        handles.append(_index(handles[-1], link._view_of[1]))
    own = handles[-1]
    shadow = Tensor._make(t._data.copy(), own.requires_grad)
    shadow.grad_fn = own.grad_fn
    result = compute(shadow)
    if result.shape != t.shape:
        raise ShapeError(
            f"{name}: result of shape {result.shape} does not fit in place into a tensor of "
            f"shape {t.shape}"
        )
    if result.dtype != t.dtype:
        if not dtypes.can_cast(result.dtype, t.dtype, "same_kind"):
            raise DTypeError(
                f"{name}: result type {result.dtype} can't be cast to the tensor's dtype "
                f"{t.dtype} (shape {t.shape})"
            )
        result = late.cast(result, t.dtype)  # ops sit above the tape: a late slot
    new = result
    for parent, link in zip(reversed(handles[:-1]), reversed(chain[1:])):
        new = _slice_assign(parent, new, link._view_of[1])
    t._data[...] = result._data
    root = chain[0]
    root.grad_fn = new.grad_fn
    root.requires_grad = new.requires_grad
    root._version[0] += 1
    note_modified(root, name)
    refresh_views(root)


def write_symbolic(t, new) -> None:
    """The graph form of an in-place write to `t` (a symbolic view, or a base of views): the
    new value is threaded up to the root with `slice_assign` and every live view of the root
    reads its part again, so a traced function sees what the eager one does."""
    if new.dtype != t.dtype:
        new = late.cast(new, t.dtype)  # ops sit above the tape: a late slot
    chain = chain_of(t)
    for parent, link in zip(reversed(chain[:-1]), reversed(chain[1:])):
        new = _slice_assign(parent, new, link._view_of[1])
    chain[0]._node = new._node
    _refresh_symbolic(chain[0])


def _refresh_symbolic(t) -> None:
    for v in live_views(t):
        v._node = _index(t, v._view_of[1])._node
        _refresh_symbolic(v)


def refresh_views(t) -> None:
    """Give every live view of `t` (recursively) a history starting at `t`'s current one."""
    views = live_views(t)
    if not views:
        return
    handle = _handle(t)
    for v in views:
        h = _index(handle, v._view_of[1])
        v.grad_fn = h.grad_fn
        v.requires_grad = h.requires_grad
        refresh_views(v)


def _handle(t):
    """`t`'s value and history under a private version counter (a leaf is itself, so that
    gradients reach its own accumulator)."""
    if t.grad_fn is None:
        if t.requires_grad:
            return t

    h = Tensor._make(t._data, t.requires_grad)
    h.grad_fn = t.grad_fn
    return h


def _index(x, key):
    return late.apply(late.getitem, x, key=key)  # ops and dispatch sit above the tape


def _slice_assign(x, v, key):
    return late.slice_assign(x, v, key)
