"""`dj.nn.utils.rnn` (PyTorch's `torch.nn.utils.rnn`): batches of sequences of different
lengths, padded (`pad_sequence`) or packed (`PackedSequence`, time-major rows of the sequences
still running at each step, longest first). Packing and unpacking are gathers, so gradients
flow through them; `nn.RNN`/`LSTM`/`GRU` take a `PackedSequence` and stop each sequence at its
own length."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ... import ops
from ...errors import ShapeError
from ...ops.convert import as_tensor
from ...tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...types import TensorLike


class PackedSequence(NamedTuple):
    """`data`: (sum of lengths, *) rows, time step by time step; `batch_sizes`: how many
    sequences run at each step; `sorted_indices` / `unsorted_indices`: the order of the
    sequences by decreasing length and its inverse (None when the batch came sorted)."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        return self._replace(data=self.data.to(*args, **kwargs))

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"


def _lengths(lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths._node is not None:
            raise ShapeError("pack_padded_sequence: lengths must be known (an eager tensor or a "
                             "list)")
        lengths = lengths.numpy()
    out = np.asarray(lengths, np.int64).reshape(-1)
    if out.size and out.min() < 1:
        raise ValueError(f"pack_padded_sequence: every length must be at least 1, got "
                         f"{out.tolist()}")
    return out


def _batch_sizes(sorted_lengths: np.ndarray) -> np.ndarray:
    steps = int(sorted_lengths[0]) if sorted_lengths.size else 0
    return np.array([(sorted_lengths > t).sum() for t in range(steps)], np.int64)


def _long(values) -> Tensor:
    return Tensor._make(np.asarray(values, np.int64))


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L, B, *) ((B, max L, *) with
    `batch_first`), filling the missing steps with `padding_value`."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got "
                         f"{padding_side!r}")
    seqs = [as_tensor(s) for s in sequences]
    if not seqs:
        raise ValueError("pad_sequence: expects at least one sequence")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        missing = longest - s.shape[0]
        if missing:
            fill = ops.full_like(s[:1], padding_value)
            block = ops.concat([fill] * missing, 0) if missing > 1 else fill
            s = ops.concat([s, block] if padding_side == "right" else [block, s], 0)
        padded.append(s)
    return ops.stack(padded, 0 if batch_first else 1)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) batch ((B, T, *) with `batch_first`) whose sequence b has
    length `lengths[b]`. With `enforce_sorted` the lengths must already decrease."""
    x = as_tensor(input)
    if batch_first:
        x = ops.transpose(x, 0, 1)
    lengths = _lengths(lengths)
    if x.ndim < 2 or x.shape[1] != lengths.size:
        raise ShapeError(f"pack_padded_sequence: {lengths.size} lengths for an input of shape "
                         f"{tuple(input.shape)}")
    if lengths.size and lengths.max() > x.shape[0]:
        raise ValueError(f"pack_padded_sequence: a length {lengths.max()} exceeds the "
                         f"{x.shape[0]} steps of the input")
    if enforce_sorted:
        if (np.diff(lengths) > 0).any():
            raise RuntimeError("pack_padded_sequence: lengths must be sorted in decreasing "
                               "order with enforce_sorted=True, or pass enforce_sorted=False")
        order = None
    else:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        x = x[:, order]
    data = pack_sorted(x, lengths)
    sizes = _batch_sizes(lengths)
    if order is None:
        return PackedSequence(data, _long(sizes))
    return PackedSequence(data, _long(sizes), _long(order), _long(np.argsort(order)))


def pack_sorted(x: Tensor, sorted_lengths: np.ndarray) -> Tensor:
    """The packed rows of a time-major (T, B, *) batch already sorted by decreasing length."""
    steps, batch = x.shape[0], x.shape[1]
    rows = [t * batch + b for t in range(int(sorted_lengths[0]))
            for b in range(batch) if sorted_lengths[b] > t]
    flat = ops.reshape(x, (steps * batch,) + tuple(x.shape[2:]))
    return flat[np.asarray(rows, np.int64)]


def unpack_sorted(sequence: PackedSequence, padding_value: float = 0.0,
                  total_length: int | None = None) -> tuple[Tensor, np.ndarray]:
    """(T, B, *) padded batch in the packed (sorted) order, and the sorted lengths."""
    sizes = np.asarray(sequence.batch_sizes.numpy(), np.int64)
    batch = int(sizes[0])
    steps = len(sizes) if total_length is None else int(total_length)
    if steps < len(sizes):
        raise ValueError(f"pad_packed_sequence: total_length {total_length} is shorter than "
                         f"the longest sequence ({len(sizes)})")
    lengths = np.array([(sizes > b).sum() for b in range(batch)], np.int64)
    data = as_tensor(sequence.data)
    position = np.full((steps, batch), data.shape[0], np.int64)  # the padding row by default
    start = 0
    for t, n in enumerate(sizes):
        position[t, :n] = np.arange(start, start + n)
        start += n
    fill = ops.full_like(data[:1], padding_value)
    padded = ops.concat([data, fill], 0)[position.reshape(-1)]
    return ops.reshape(padded, (steps, batch) + tuple(data.shape[1:])), lengths


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of `pack_padded_sequence`: (padded batch in the original order, lengths)."""
    padded, lengths = unpack_sorted(sequence, padding_value, total_length)
    if sequence.unsorted_indices is not None:
        back = np.asarray(sequence.unsorted_indices.numpy(), np.int64)
        padded, lengths = padded[:, back], lengths[back]
    if batch_first:
        padded = ops.transpose(padded, 0, 1)
    return padded, _long(lengths)


def pack_sequence(sequences: Sequence[TensorLike], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) sequences (`pad_sequence` then `pack_padded_sequence`)."""
    lengths = [as_tensor(s).shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of sequences, each cut to its length, from a padded batch."""
    x = as_tensor(padded_sequences)
    if not batch_first:
        x = ops.transpose(x, 0, 1)
    return [x[b, :int(n)] for b, n in enumerate(_lengths(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences, in their original order, from a PackedSequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def sequence_masks(sorted_lengths: np.ndarray, steps: int) -> np.ndarray:
    """(T, B, 1) bools: whether sequence b is still running at step t."""
    return (np.arange(steps)[:, None] < sorted_lengths[None, :])[..., None]
