"""A prepared run: what `Session.run` needs per call, worked out once per (fetches, feed keys).

It knows the Program, which feed_dict value goes to which fed node and what that node expects,
and how to rebuild the fetch structure. A feed that is already an exact ndarray of the right
dtype and shape passes as it is; anything else goes through `feeds.convert`, which converts it
or raises the FeedError naming the placeholder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends import default_backend
from . import feeds, placement

_ndarray = default_backend().array_types[0]  # programs run on the default backend


def _fits(value, node, array_type=_ndarray) -> bool:
    """Whether `value` is an exact array of the program's type, `node`'s dtype and (partly
    known) shape."""
    if value.__class__ is not array_type or value.dtype is not node.dtype:
        return False
    shape = value.shape
    return len(shape) == len(node.shape) and all(
        d is None or d == g for d, g in zip(node.shape, shape)
    )


class Runner:
    """`runner(feed_dict)`: check the feeds, run the Program, return values shaped like fetches.

    `version` is the graph version it was prepared for; `keep` holds the objects whose ids the
    session's cache key uses, so those ids stay theirs.
    """

    __slots__ = ("version", "program", "feeds", "unused", "rebuild", "keep", "where",
                 "array_type", "floating")

    def __init__(self, version: int, program, feed_nodes: list, unused: list,
                 positions: dict, rebuild: Callable[[list], Any], keep: list,
                 where: placement.Placement = placement.CPU):
        self.version = version
        self.program = program
        self.where = where  # the device the program runs on
        self.floating = False  # no Variables decide `where`: the feeds do (Session sets it)
        backend = where.backend
        # feeds of this exact type pass unconverted (on one device of a single-device backend)
        self.array_type = (_ndarray if backend is None else
                           None if backend.multi_device else backend.array_types[0])
        # (position in feed_dict, node, dtype, shape or None where some dims are free)
        self.feeds = tuple(_feed(positions[n], n) for n in feed_nodes)
        self.unused = tuple(_feed(positions[n], n) for n in unused)
        self.rebuild = rebuild
        self.keep = keep

    def __call__(self, feed_dict) -> Any:
        values = list(feed_dict.values()) if feed_dict else ()
        arrays = _checked(values, self.feeds, self.where, self.array_type)
        if self.unused:  # feeds the fetches do not need are still checked
            _checked(values, self.unused, self.where, self.array_type)
        if self.where.backend is not None and self.where.backend.multi_device:
            with self.where.backend.using(self.where.index):
                return self.rebuild(self.program(arrays))
        return self.rebuild(self.program(arrays))


def _checked(values: list, specs: tuple, where=placement.CPU, array_type=_ndarray) -> list:
    """The value for each (position, node, dtype, shape) spec: as given when it is an exact
    array of the program's device that fits, else `feeds.convert`ed (which raises a FeedError
    if it cannot fit, and copies host data to the program's device)."""
    arrays = []
    for position, node, dtype, shape in specs:
        value = values[position]
        if value.__class__ is not array_type or value.dtype is not dtype or (
            value.shape != shape and not _fits(value, node, array_type)
        ):
            value = feeds.convert(node, value, where)
        arrays.append(value)
    return arrays


def _feed(position: int, node) -> tuple:
    shape = tuple(node.shape)
    return position, node, node.dtype, (shape if None not in shape else None)
