"""The graph compiler: passes on the IR, fusion, memory planning and Python code generation."""

from .pipeline import build_program, optimize

__all__ = ["build_program", "optimize"]
