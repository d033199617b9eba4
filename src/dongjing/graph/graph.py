"""The static IR: a Graph is a flat, ordered list of named, typed Nodes in SSA form."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..backends import backend_of, is_array
from ..core.placement_scope import current_rank
from ..core.user_code import user_source_line
from ..errors import GraphError
from .builder import pop, push
from .printing import format_graph
from .verify import verify

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..core.registry import Op
    from ..tensor import Tensor
    from ..types import DTypeLike


class Node:
    """One value of a graph: an op applied to input nodes, with attributes and a static type."""

    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "name", "source", "graph", "id",
                 "rank")

    _ids = itertools.count()

    def __init__(self, op, inputs, attrs, shape, dtype, name, graph, source=None):
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.shape = tuple(shape)
        self.dtype = (dtype if dtype is None or dtypes.is_dtype(dtype)
                      else dtypes.as_dtype(dtype))
        self.name = name
        self.graph = graph
        self.source = source
        self.id = next(Node._ids)
        self.rank = current_rank()  # the MPI rank `with dj.device("rank:N")` placed it on

    @property
    def type_str(self) -> str:
        if self.dtype is None:
            return "()"
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{dtypes.short_name(self.dtype)}[{dims}]"

    def __repr__(self) -> str:
        return f"<Node %{self.name} = {self.op.name}(...) : {self.type_str}>"


class Graph:
    """A static graph. Inside `with g.as_default():` (or `with dj.Graph() as g:`) every dj op
    adds a node here instead of computing."""

    def __init__(self, name: str = "graph", parent: Graph | None = None):
        self.name = name
        self.parent = parent
        self.nodes: list[Node] = []
        self._names: Counter = Counter()
        self._by_name: dict[str, Node] = {}
        self._captured: dict[int, tuple] = {}  # id(eager tensor) -> (tensor, node)
        self.version = 0  # bumped on every change; sessions cache compiled code per version
        self.name_prefix = ""  # prefixed to new node names (compat.v1's tf.name_scope sets it)
        # the device type ("cpu", "cuda") of the state or traced arguments it reads, as seen at
        # build time (autocast picks its op lists by it; a device beats the CPU); None: none
        self.device_type: str | None = None
        # what dj.gradients built, for the distributed planner: gradient node -> the Variable
        # node it is the gradient of, and backward node -> the forward node it differentiates
        self.gradient_of: dict[Node, Node] = {}
        self.backward_of: dict[Node, Node] = {}

    # --- building ---------------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        """`base_N` with the first N not yet taken in this graph."""
        while True:
            n = self._names[base]
            self._names[base] += 1
            name = f"{base}_{n}"
            if name not in self._by_name:
                return name

    def add_node(self, op: Op, inputs: Sequence[Node], attrs: dict[str, Any],
                 shape: Sequence[int | None], dtype: DTypeLike | None,
                 name: str | None = None) -> Node:
        if self.name_prefix and op.name != "variable":  # a Variable keeps its own full name
            name = self.name_prefix + (name or op.name)
        if name is not None and name in self._by_name:
            name = self.unique_name(name)
        node = Node(op, inputs, attrs, shape, dtype, name or self.unique_name(op.name), self,
                    user_source_line())
        self.nodes.append(node)
        self._by_name[node.name] = node
        self.version += 1
        return node

    def note_array(self, array: object) -> None:
        """Remember the device type of `array`, a value the graph reads (state or a traced
        argument)."""
        root = self
        while root.parent is not None:
            root = root.parent
        if root.device_type in (None, "cpu"):
            if type(array) is np.ndarray or not is_array(array):
                root.device_type = "cpu"
            else:
                root.device_type = backend_of(array).device_type

    def as_default(self) -> _DefaultGraph:
        """Context manager: dj ops called inside add nodes to this graph."""
        return _DefaultGraph(self)

    def __enter__(self) -> Graph:
        push(self)
        return self

    def __exit__(self, *exc) -> bool:
        pop(self)
        return False

    # --- inspecting -------------------------------------------------------------------------
    def get_node(self, name: str) -> Node:
        try:
            return self._by_name[name]
        except KeyError:
            raise GraphError(f"graph has no node named {name!r}") from None

    def captured(self, tensor: Tensor) -> Node | None:
        """The node of an eager tensor (Variable, Parameter, constant) captured here, if any."""
        entry = self._captured.get(id(tensor))
        return entry[1] if entry is not None and entry[0] is tensor else None

    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.op.name == "placeholder"]

    def variables(self) -> list[Node]:
        return [n for n in self.nodes if n.op.name == "variable"]

    def trainable_variables(self) -> list[Tensor]:
        """The trainable Variables (and nn.Parameters) this graph reads, as eager objects."""
        refs = [n.attrs["ref"] for n in self.variables()]
        return [r for r in refs if getattr(r, "trainable", r.requires_grad)]

    def verify(self) -> None:
        """Check the invariants (SSA order, names, inferred types); raise GraphError if broken."""
        verify(self)

    def __str__(self) -> str:
        return format_graph(self)

    def __repr__(self) -> str:
        return f"<dj.Graph {self.name!r} with {len(self.nodes)} nodes>"


class _DefaultGraph:
    def __init__(self, graph: Graph):
        self.graph = graph

    def __enter__(self) -> Graph:
        push(self.graph)
        return self.graph

    def __exit__(self, *exc) -> bool:
        pop(self.graph)
        return False
