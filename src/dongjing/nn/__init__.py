"""`dj.nn`: Module, Parameter and the layers; `dj.nn.functional` as F; `dj.nn.init`."""

from . import functional, init, parallel, utils
from .activation import (
    ELU,
    GELU,
    Dropout,
    Dropout2d,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .container import ModuleDict, ModuleList, Sequential
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d, Upsample
from .linear import Embedding, Flatten, Identity, Linear
from .losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from .module import IncompatibleKeys, Module
from .modules_loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
)
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .parallel import SyncBatchNorm
from .parameter import Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .updates import update_ops
