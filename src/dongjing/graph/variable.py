"""Variable: state that holds its own value, in both modes (eager: a leaf tensor)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..devices.device import device as as_device
from ..devices.device import move_array
from ..dtypes import is_floating
from ..errors import GraphError
from ..tensor import Tensor
from ..tensor.conversion import to_array

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike, TensorLike


class Variable(Tensor):
    """A tensor that owns its value across graph runs.

    Eagerly it is a leaf tensor with `requires_grad=trainable`. Used inside a graph it is
    captured by reference: the graph reads its current value at run time, and `dj.assign`
    (or `optimizer.minimize`) updates it in place. `device="cuda"` keeps its value on the GPU:
    a graph reading it runs there.
    """

    __slots__ = ("var_name", "trainable")

    def __init__(self, initial_value: TensorLike, name: str | None = None,
                 trainable: bool = True, dtype: DTypeLike | None = None,
                 device: DeviceLike | None = None) -> None:
        if isinstance(initial_value, Tensor) and initial_value._node is not None:
            raise GraphError(
                "dj.Variable needs a concrete initial value, not the symbolic tensor "
                f"{initial_value.name!r}"
            )
        array = to_array(initial_value, dtype)
        if device is not None:  # a GPU Variable: graphs reading it run on that GPU

            array = move_array(array, as_device(device))
        super().__init__(array)
        self.var_name = name
        self.trainable = bool(trainable)
        if self.trainable and is_floating(array.dtype):
            self.requires_grad = True

    @property
    def name(self) -> str | None:
        return self.var_name if self._node is None else self._node.name

    def __repr__(self) -> str:
        body = super().__repr__()
        label = f"name={self.var_name!r}, " if self.var_name else ""
        return f"Variable({label}{body})"
