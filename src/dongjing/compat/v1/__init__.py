"""The TensorFlow 1.x API over dongjing's static graphs: `import dongjing.compat.v1 as tf`.

An implicit default graph, `tf.placeholder` (also of unknown rank), `tf.Variable`,
`tf.Session().run`, `tf.global_variables_initializer()`, `tf.train.*Optimizer(...).minimize`,
the common math / reduction / nn functions, `tf.while_loop`, `tf.cond` and `Tensor.eval`.
A TF1 name that is not provided raises `NotProvidedError` naming it.
See docs/coming-from-tensorflow.md for what maps and what does not.
"""

from ...graph import Graph
from ...tensor import Tensor
from . import contrib, data, layers, losses, nn, summary, train
from . import errors_namespace as errors
from . import initializer_names as initializers
from .array_ops import (
    arg_max,
    arg_min,
    boolean_mask,
    cumsum,
    diag,
    diag_part,
    einsum,
    gather,
    pad,
    placeholder_with_default,
    rank,
    sequence_mask,
    shape,
    size,
    split,
    tensordot,
    tile,
    unique,
    unstack,
)
from .array_ops import slice as slice  # noqa: A004
from .clip_ops import clip_by_global_norm, clip_by_norm, global_norm
from .config import ConfigProto, GPUOptions, GraphOptions
from .control import (
    cond,
    gradients,
    group,
    no_op,
    placeholder,
    while_loop,
)
from .control_more import Print, case, device, foldl, foldr, map_fn, scan
from .control_more import print_ as print  # noqa: A004
from .dtypes import (
    as_dtype,
    bool,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from .graph_collections import (
    GraphKeys,
    add_to_collection,
    add_to_collections,
    get_collection,
    get_collection_ref,
)
from .graphs import get_default_graph, reset_default_graph
from .initializers import (
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from .linalg_ops import matrix_determinant, matrix_inverse
from .math_ops import (
    abs,
    add,
    argmax,
    argmin,
    cast,
    clip_by_value,
    concat,
    constant,
    div,
    divide,
    equal,
    exp,
    expand_dims,
    fill,
    greater,
    greater_equal,
    identity,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    one_hot,
    ones,
    ones_like,
    pow,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    reshape,
    sigmoid,
    sign,
    sqrt,
    square,
    squeeze,
    stack,
    stop_gradient,
    subtract,
    tanh,
    to_float,
    to_int32,
    to_int64,
    transpose,
    truediv,
    where,
    zeros,
    zeros_like,
)
from .math_ops import range_ as range  # noqa: A004
from .py_function import numpy_function, py_func
from .random_ops import (
    get_seed,
    random_normal,
    random_uniform,
    set_random_seed,
    truncated_normal,
)
from .scopes import (
    AUTO_REUSE,
    VariableScope,
    get_variable,
    get_variable_scope,
    name_scope,
    variable_scope,
)
from .session import (
    InteractiveSession,
    Operation,
    Session,
    TensorShape,
    get_default_session,
    set_session_optimize,
)
from .session import eval_tensor as _eval_tensor
from .session import get_shape as _get_shape
from .unsupported import NotProvidedError, module_getattr
from .variables import (
    Variable,
    assign,
    assign_add,
    assign_sub,
    global_variables,
    global_variables_initializer,
    initialize_all_variables,
    is_variable_initialized,
    local_variables,
    local_variables_initializer,
    model_variables,
    trainable_variables,
    variables_initializer,
)

# TF1 tensors have .eval() and .get_shape(); dongjing's graph tensors get them with this module.
Tensor.eval = _eval_tensor
Tensor.get_shape = _get_shape

__getattr__ = module_getattr("tf")

__all__ = [name for name in dir() if not name.startswith("_")]
