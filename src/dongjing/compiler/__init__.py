"""The graph compiler: passes on the IR, fusion, memory planning and Python code generation."""

from ..cpu_kernels.options import CompilerOptions, get_options, options, set_options
from .ir import PassResult, Rebuilder
from .pipeline import build_program, optimize, register_pass, unregister_pass

__all__ = ["CompilerOptions", "PassResult", "Rebuilder", "build_program", "get_options",
           "optimize", "options", "register_pass", "set_options", "unregister_pass"]
