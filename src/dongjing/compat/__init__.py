"""Compatibility surfaces of other frameworks over dongjing's machinery.

`import dongjing.compat.v1 as tf` gives the classic TensorFlow 1.x API (graphs, placeholders,
sessions, optimizers' `minimize`) over dongjing's static graphs.
"""
