"""Pictures of graphs: DOT text of eager tapes and static graphs, rendered with Graphviz."""

from .dot import graph_to_dot, tape_to_dot, to_dot
from .render import GraphvizMissing, render
