"""Fetch structures: flatten a nest of fetches to leaves, rebuild values in that nest, and a cheap
hashable key saying "same nest, same leaves" so a Session can reuse what it prepared."""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable
from operator import itemgetter
from typing import Any

_NESTS = (list, tuple, dict)


def flatten(fetches, out: list, is_leaf: Callable[[Any], bool] | None = None
            ) -> Callable[[list], Any]:
    """Append the leaves of `fetches` to `out`; return a function that rebuilds the structure.

    With `is_leaf`, values that are neither nests nor leaves (None, numbers) are kept as they
    are in the rebuilt structure instead of becoming leaves."""
    if isinstance(fetches, dict):
        keys = list(fetches)
        parts = [flatten(fetches[k], out, is_leaf) for k in keys]
        kind = type(fetches)
        if kind is dict or kind is OrderedDict:
            return lambda vals: kind((k, p(vals)) for k, p in zip(keys, parts))
        return lambda vals: _refilled(fetches, zip(keys, (p(vals) for p in parts)))
    if isinstance(fetches, (list, tuple)):
        parts = [flatten(f, out, is_leaf) for f in fetches]
        kind = type(fetches)
        if kind in (list, tuple):
            return lambda vals: kind(p(vals) for p in parts)
        return lambda vals: kind(*(p(vals) for p in parts))  # a namedtuple
    if is_leaf is not None and not is_leaf(fetches):
        return lambda vals: fetches
    index = len(out)
    out.append(fetches)
    return lambda vals: vals[index]


def _refilled(template: dict, items):
    """A dict of `template`'s own type and settings (a defaultdict's factory, say) holding
    `items`: dict subclasses need not take pairs in their constructor."""
    new = copy.copy(template)
    new.clear()
    new.update(items)
    return new


def rebuilder(fetches, out: list) -> Callable[[list], Any]:
    """Like `flatten`, but a flat list, tuple or dict, or a single leaf, rebuilds in one call."""
    rebuild = flatten(fetches, out)
    kind = type(fetches)
    if not isinstance(fetches, _NESTS):
        return itemgetter(0)
    values = fetches.values() if kind is dict else fetches
    if any(isinstance(f, _NESTS) for f in values):
        return rebuild
    if kind is list or kind is tuple:
        return kind
    if kind is dict:
        keys = tuple(fetches)
        return lambda vals: dict(zip(keys, vals))
    return rebuild


def structure_key(fetches) -> Any:
    """A hashable key: equal keys mean the same nest of the same leaves.

    Leaves count by identity (`id`), strings by value; the caller keeps the identified objects
    alive (see `identified`) for as long as it keeps the key, so no id is reused meanwhile.
    """
    kind = type(fetches)
    if kind is list or kind is tuple:
        return (kind, *[f if type(f) is str else (structure_key(f) if isinstance(f, _NESTS)
                                                  else id(f)) for f in fetches])
    if isinstance(fetches, dict):
        return (kind, *[(k if type(k) is str else id(k), structure_key(v))
                        for k, v in fetches.items()])
    if isinstance(fetches, (list, tuple)):
        return (kind, *[structure_key(f) for f in fetches])
    return fetches if kind is str else id(fetches)


def run_key(fetches, feed_dict) -> tuple:
    """`structure_key(fetches)` followed by the feed_dict's keys in order (identity, strings by
    value): one hashable key per prepared run."""
    if not feed_dict:
        return (structure_key(fetches),)
    return (structure_key(fetches), *[k if type(k) is str else id(k) for k in feed_dict])


def identified(fetches, out: list) -> list:
    """Append to `out` every object whose `id` `structure_key(fetches)` uses; return `out`."""
    if isinstance(fetches, dict):
        for k, v in fetches.items():
            if type(k) is not str:
                out.append(k)
            identified(v, out)
    elif isinstance(fetches, (list, tuple)):
        for f in fetches:
            identified(f, out)
    elif type(fetches) is not str:
        out.append(fetches)
    return out
