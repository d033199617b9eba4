"""A prepared run: what `Session.run` needs per call, worked out once per (fetches, feed keys).

It knows the Program, which feed_dict value goes to which fed node and what that node expects,
and how to rebuild the fetch structure. A feed that is already an exact ndarray of the right
dtype and shape passes without conversion; anything else goes through `feeds.convert`, which
converts it or raises the FeedError naming the placeholder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import feeds

_ndarray = np.ndarray


class _Feed:
    """One fed node: where its value sits in the feed_dict, and a fast check of that value."""

    __slots__ = ("position", "node", "dtype", "shape", "ndim", "known")

    def __init__(self, position: int, node):
        self.position = position
        self.node = node
        self.dtype = node.dtype
        shape = tuple(node.shape)
        self.shape = shape if None not in shape else None  # None: some dims are free
        self.ndim = len(shape)
        self.known = tuple((i, d) for i, d in enumerate(shape) if d is not None)

    def check(self, value) -> np.ndarray:
        """`value` itself if it is an exact ndarray that fits, else `feeds.convert(node, value)`."""
        if value.__class__ is _ndarray and value.dtype is self.dtype:
            shape = value.shape
            if shape == self.shape:
                return value
            if self.shape is None and len(shape) == self.ndim and all(
                shape[i] == d for i, d in self.known
            ):
                return value
        return feeds.convert(self.node, value)


class Runner:
    """`runner(feed_dict)`: check the feeds, run the Program, return values shaped like fetches.

    `version` is the graph version it was prepared for; `keep` holds the objects whose ids the
    session's cache key uses, so those ids stay theirs.
    """

    __slots__ = ("version", "program", "feeds", "unused", "rebuild", "keep")

    def __init__(self, version: int, program, feed_nodes: list, unused: list,
                 positions: dict, rebuild: Callable[[list], Any], keep: list):
        self.version = version
        self.program = program
        self.feeds = tuple(_Feed(positions[n], n) for n in feed_nodes)
        self.unused = tuple(_Feed(positions[n], n) for n in unused)
        self.rebuild = rebuild
        self.keep = keep

    def __call__(self, feed_dict) -> Any:
        values = list(feed_dict.values()) if feed_dict else ()
        arrays = [f.check(values[f.position]) for f in self.feeds]
        for f in self.unused:  # feeds the fetches do not need are still checked
            f.check(values[f.position])
        return self.rebuild(self.program(arrays))
