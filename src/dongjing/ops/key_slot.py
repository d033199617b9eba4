"""`Slot`: where an index tensor goes in a `getitem` key template (shared by indexing and its
ONNX rule, which ops.index is built on)."""

from __future__ import annotations


class Slot:
    """Place of the i-th index tensor in a key template."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i

    def __repr__(self) -> str:
        return f"%{self.i}"

    def __eq__(self, other):
        return isinstance(other, Slot) and other.i == self.i

    def __hash__(self):
        return hash(("slot", self.i))
