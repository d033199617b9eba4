"""The graph compiler: passes on the IR, fusion, memory planning and Python code generation."""

from .ir import PassResult, Rebuilder
from .pipeline import build_program, optimize, register_pass, unregister_pass

__all__ = ["PassResult", "Rebuilder", "build_program", "optimize", "register_pass",
           "unregister_pass"]
