"""TF1's graph collections: `tf.add_to_collection`, `tf.get_collection`, `tf.GraphKeys`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .graph_state import state_of
from .graphs import get_default_graph

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ...graph.graph import Graph


class GraphKeys:
    """The standard collection names of TF 1.x."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    LOSSES = "losses"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    TRAIN_OP = "train_op"
    GLOBAL_STEP = "global_step"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    SUMMARY_OP = "summary_op"
    EVAL_STEP = "eval_step"


def get_collection_ref(key: str, graph: Graph | None = None) -> list[Any]:
    """The list kept under `key` in the default graph (changes to it change the collection)."""
    return state_of(graph or get_default_graph()).collections.setdefault(key, [])


def get_collection(key: str, scope: str | None = None, graph: Graph | None = None
                   ) -> list[Any]:
    """A copy of the collection `key` (only items whose name matches `scope` from its start,
    as TF filters with `re.match`, when `scope` is given)."""
    items = list(state_of(graph or get_default_graph()).collections.get(key, ()))
    if scope is None:
        return items
    pattern = re.compile(scope)
    return [item for item in items
            if isinstance(getattr(item, "name", None), str) and pattern.match(item.name)]


def add_to_collection(name: str, value: object, graph: Graph | None = None) -> None:
    """Append `value` to the collection `name` of the default graph."""
    get_collection_ref(name, graph).append(value)


def add_to_collections(names: str | Iterable[str], value: object, graph: Graph | None = None
                       ) -> None:
    """Append `value` to each collection of `names` (a name or a list of names)."""
    for name in ([names] if isinstance(names, str) else list(dict.fromkeys(names))):
        add_to_collection(name, value, graph)


def get_all_collection_keys(graph=None) -> list:
    """The keys of the default graph's collections."""
    return list(state_of(graph or get_default_graph()).collections)


def clear_collection(name, graph=None) -> None:
    """Empty the collection `name`."""
    state_of(graph or get_default_graph()).collections.pop(name, None)


def register_variable(graph, var, collections, trainable: bool) -> None:
    """Put a new Variable in its collections: `collections` (default GLOBAL_VARIABLES), and
    TRAINABLE_VARIABLES when trainable, as tf.Variable does."""
    names = [GraphKeys.GLOBAL_VARIABLES] if collections is None else list(collections)
    if trainable and GraphKeys.TRAINABLE_VARIABLES not in names:
        names.append(GraphKeys.TRAINABLE_VARIABLES)
    add_to_collections(names, var, graph)
