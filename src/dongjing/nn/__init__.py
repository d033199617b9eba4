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
from .activation_more import (
    CELU,
    GLU,
    SELU,
    AlphaDropout,
    Dropout1d,
    Dropout3d,
    FeatureAlphaDropout,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    RReLU,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .container import ModuleDict, ModuleList, Sequential
from .container_params import Container, ParameterDict, ParameterList
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d, Upsample
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, Fold, Unfold
from .distance import CosineSimilarity, PairwiseDistance
from .embedding_bag import EmbeddingBag
from .group_norm import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .layers_more import (
    Bilinear,
    ChannelShuffle,
    CrossMapLRN2d,
    DataParallel,
    LocalResponseNorm,
    RMSNorm,
    Unflatten,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
)
from .linear import Embedding, Flatten, Identity, Linear
from .losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from .losses_regression import CosineEmbeddingLoss, HuberLoss, KLDivLoss, SmoothL1Loss
from .module import IncompatibleKeys, Module
from .modules_loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
)
from .modules_loss_margin import (
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss2d,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm
from .padding import *  # noqa: F403  (ReflectionPad1d/2d/3d, ZeroPad2d, ConstantPad1d, ...)
from .parallel import SyncBatchNorm
from .parameter import Parameter
from .pixel_shuffle import PixelShuffle, PixelUnshuffle
from .pooling1d import AvgPool1d, MaxPool1d
from .pooling_modules import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer
from .updates import update_ops
