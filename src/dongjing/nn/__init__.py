"""`dj.nn`: Module, Parameter and the layers; `dj.nn.functional` as F; `dj.nn.init`."""

from . import functional, init
from .activation import GELU, Dropout, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import AvgPool2d, Conv2d, MaxPool2d
from .linear import Embedding, Flatten, Identity, Linear
from .losses import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from .module import IncompatibleKeys, Module
from .modules_loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .parameter import Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .updates import update_ops
