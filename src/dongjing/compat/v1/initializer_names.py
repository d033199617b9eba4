"""`tf.initializers`: the initializer classes under their short names, and the variable
initializer ops."""

from .initializers import (
    Constant as constant,
)
from .initializers import (
    GlorotNormal as glorot_normal,
)
from .initializers import (
    GlorotUniform as glorot_uniform,
)
from .initializers import (
    Ones as ones,
)
from .initializers import (
    RandomNormal as random_normal,
)
from .initializers import (
    RandomUniform as random_uniform,
)
from .initializers import (
    TruncatedNormal as truncated_normal,
)
from .initializers import (
    VarianceScaling as variance_scaling,
)
from .initializers import (
    Zeros as zeros,
)
from .initializers import (
    he_normal,
    he_uniform,
    lecun_normal,
    lecun_uniform,
)
from .unsupported import module_getattr
from .variables import global_variables_initializer as global_variables
from .variables import local_variables_initializer as local_variables
from .variables import variables_initializer as variables

__getattr__ = module_getattr("tf.initializers")

__all__ = ["constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "ones", "random_normal", "random_uniform",
           "truncated_normal", "variance_scaling", "zeros", "global_variables",
           "local_variables", "variables"]
