"""Namespaces of TF1 that group names defined elsewhere (tf.nn.rnn_cell, tf.contrib.rnn,
tf.contrib.layers): a name they do not hold raises NotProvidedError naming it."""

from __future__ import annotations

from types import SimpleNamespace

from .unsupported import not_provided


class Namespace(SimpleNamespace):
    """Attributes given at creation; any other attribute is reported as not provided."""

    def __init__(self, tf_name: str, **names):
        super().__init__(**names)
        object.__setattr__(self, "_tf_name", tf_name)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        not_provided(f"{self._tf_name}.{name}")

    def __repr__(self) -> str:
        return f"<namespace {self._tf_name}>"
