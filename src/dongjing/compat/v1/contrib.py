"""tf.contrib's names that TF1 tutorials use: tf.contrib.rnn (the cells and static_rnn) and
tf.contrib.layers.flatten. The rest of tf.contrib is not provided (NotProvidedError)."""

from __future__ import annotations

from . import layers as _layers
from . import rnn as _rnn
from . import rnn_cell as _cells
from .namespaces import Namespace
from .unsupported import module_getattr

__getattr__ = module_getattr("tf.contrib")

rnn = Namespace(
    "tf.contrib.rnn", BasicLSTMCell=_cells.BasicLSTMCell, BasicRNNCell=_cells.BasicRNNCell,
    DropoutWrapper=_cells.DropoutWrapper, GRUCell=_cells.GRUCell, LSTMCell=_cells.LSTMCell,
    LSTMStateTuple=_cells.LSTMStateTuple, MultiRNNCell=_cells.MultiRNNCell,
    RNNCell=_cells.RNNCell, static_rnn=_rnn.static_rnn,
    static_bidirectional_rnn=_rnn.static_bidirectional_rnn)
layers = Namespace("tf.contrib.layers", flatten=_layers.flatten)
