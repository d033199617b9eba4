"""The static IR: Graph, Node, placeholders, constants, Variables."""

from .graph import Graph, Node
from .variable import Variable
