"""dongjing (动静): one model's code on a dynamic graph (eager autograd) or a static graph.

The public API, re-exported; nothing is defined here.
"""

from .core import blas_start as _blas_start  # noqa: F401  (first: before NumPy loads)

# isort: split
from . import (
    accelerator,
    amp,
    autograd,
    backends,
    data,
    distributed,
    distributions,
    dtypes,
    fft,
    func,
    io,
    linalg,
    nn,
    onnx,
    ops,
    optim,
    profiler,
    special,
    utils,
    viz,
)
from .amp import autocast, get_autocast_dtype, is_autocast_enabled
from .autograd import enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .autograd.inference import inference_mode
from .backends import default_namespace as backend
from .backends.buffer_pool import empty_cache, memory_stats, set_memory_cache_limit
from .core.memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    memory_format,
    preserve_format,
    strided,
)
from .devices import cuda
from .devices.device import device, get_default_device, set_default_device
from .devices.random import manual_seed
from .dtypes import bfloat16, float16, float32, float64, int16, int32, int64, uint8
from .dtypes import bool_ as bool
from .errors import (
    AnomalyError,
    AutogradError,
    CheckError,
    DongjingError,
    DTypeError,
    FeedError,
    GraphError,
    JitError,
    ShapeError,
    SideEffectError,
)
from .graph import Graph, Node, Variable
from .graph.builder import constant, get_default_graph, placeholder
from .graph.gradients import gradients
from .io import load, save
from .nn.distance import cdist
from .nn.torch_functions import *  # noqa: F403  (torch.conv1d, torch.dropout, torch.inverse, ...)
from .ops import *  # noqa: F403  (every published op name, and the compositions)  # noqa: F403  (every published op name, and the compositions)  # noqa: F403  (every published op name, and the compositions)
from .ops import Cost, Kind, Op, Spec, bind, binds, define
from .ops.control import cond, while_loop
from .ops.sampling import multinomial
from .ops.state import assign, group
from .runtime.check_mode import check
from .runtime.compile import compile
from .runtime.jit import jit
from .runtime.session import Session
from .tensor import Tensor
from .tensor import methods as _tensor_methods  # noqa: F401  (attaches the Tensor methods)
from .tensor.creation import (
    BoolTensor,
    ByteTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    arange,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .tensor.dlpack import from_dlpack
from .tensor.torch_functions import (
    as_tensor,
    bernoulli,
    clone,
    empty_like,
    is_floating_point,
    is_tensor,
    normal,
    numel,
)
from .utils.float_warnings import install as _install_float_warning_filter
from .utils.tracebacks import install as _install_traceback_filter
from .utils.tracebacks import set_traceback_filtering, traceback_filtering

_install_traceback_filter()
_install_float_warning_filter()

# PyTorch's dtype aliases (last, so the builtins stay usable above in this module)
float = float32
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
uint8 = uint8

if bfloat16 is None:  # no ml_dtypes: `dj.bfloat16` raises a DTypeError saying how to get it
    del bfloat16
    from .dtypes import missing_attribute as __getattr__

__version__ = "0.1.0"
