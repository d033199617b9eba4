"""The static IR: Graph, Node, placeholders, constants, Variables."""

from . import python_control_flow  # noqa: F401  (installs the error of bool(symbolic))
from .graph import Graph, Node
from .variable import Variable
