"""tf.train: TF 1.15's optimizers (their exact update rules), the global step, learning-rate
schedules and the Saver."""

from __future__ import annotations

import numpy as np

from ..graph_collections import GraphKeys, add_to_collection
from ..graph_state import state_of
from ..graphs import get_default_graph
from ..scopes import name_scope
from ..unsupported import module_getattr
from ..variables import Variable
from .decay import (
    cosine_decay,
    exponential_decay,
    inverse_time_decay,
    natural_exp_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from .optimizers import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    AdamOptimizer,
    FtrlOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
    RMSPropOptimizer,
)
from .saver import (
    CheckpointState,
    Saver,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
)

__getattr__ = module_getattr("tf.train")


def get_or_create_global_step(graph=None):
    """The graph's global step: a non-trainable int64 Variable `global_step` starting at 0
    (in the GLOBAL_STEP collection)."""
    graph = graph or get_default_graph()
    state = state_of(graph)
    if state.global_step is None:
        with graph.as_default(), name_scope(None):
            state.global_step = Variable(np.int64(0), trainable=False, name="global_step")
        add_to_collection(GraphKeys.GLOBAL_STEP, state.global_step, graph)
    return state.global_step


def get_global_step(graph=None):
    """The graph's global step, or None if none was created."""
    return state_of(graph or get_default_graph()).global_step


def global_step(sess, global_step_tensor) -> int:
    """The global step's value in `sess`."""
    return int(sess.run(global_step_tensor))


create_global_step = get_or_create_global_step

__all__ = [
    "AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "CheckpointState", "FtrlOptimizer",
    "get_checkpoint_state",
    "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer", "RMSPropOptimizer", "Saver",
    "checkpoint_exists", "cosine_decay", "create_global_step", "exponential_decay",
    "get_global_step", "get_or_create_global_step", "global_step", "inverse_time_decay",
    "latest_checkpoint", "natural_exp_decay", "piecewise_constant", "piecewise_constant_decay",
    "polynomial_decay",
]
