"""What TF1 keeps per graph beside the nodes (`state_of(graph)`): its variables, seeds,
collections, scopes and the specializations of its unknown-rank placeholders."""

from __future__ import annotations

from ...graph import Graph


class GraphState:
    """What TF1 keeps per graph beside the nodes: its variables (in creation order) and the
    specializations of its unknown-rank placeholders (rank signature -> materialized values)."""

    def __init__(self):
        self.variables: list = []
        self.specializations: dict = {}
        self.global_step = None
        self.seed = None  # tf.set_random_seed's graph-level seed
        self.variable_names: set = set()  # op names of the graph's variables (TF unique names)
        self.collections: dict = {}  # tf.add_to_collection's lists, by key
        self.guards: dict = {}  # id(guard node) -> (guard, the read it makes only if initialized)
        self.name_scope = ""  # the current tf.name_scope prefix ("outer/inner/")
        self.variable_scopes: list = []  # the tf.variable_scope stack (innermost last)


def state_of(graph: Graph) -> GraphState:
    """The TF state of `graph`, kept on the graph itself so that both go together (a table
    keyed by graph would keep every graph alive: the state refers back to it)."""
    state = graph.__dict__.get("_tf1_state")
    if state is None:
        state = graph._tf1_state = GraphState()
    return state
