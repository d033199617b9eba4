"""tf.train.Saver: save and restore a Session's variable values by their graph names, in
dongjing's safe checkpoint format (`prefix.safetensors`, never executes code on load), with
TF's `checkpoint` state file so `tf.train.latest_checkpoint` finds the newest."""

from __future__ import annotations

import os
import re

import numpy as np

from ....errors import CheckpointError
from ....io.checkpoint import load as _dj_load
from ....io.checkpoint import save as _dj_save
from ..errors_namespace import NotFoundError
from ..session_state import FailedPreconditionError
from ..variables import Variable, global_variables

_SUFFIX = ".safetensors"


class Saver:
    """`Saver(var_list=None, max_to_keep=5)`: `save(sess, path, global_step=None)` writes the
    session's values of `var_list` (default: all global variables; a dict maps checkpoint
    names to variables) and returns the checkpoint prefix; `restore(sess, prefix)` sets them
    in `sess` (which initializes them there)."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=2, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        self._var_list = var_list
        self._allow_empty = allow_empty
        self._max_to_keep = max_to_keep
        self._pad = pad_step_number
        self._last: list = []  # prefixes this saver wrote, oldest first
        if not defer_build:  # TF takes the variables that exist now (later ones are not saved)
            self.build()

    def build(self) -> None:
        """Fix the variables to save: `var_list`, or the global variables that exist now."""
        if self._var_list is None:
            self._var_list = global_variables()
        self._named()  # check the list now, as TF does

    def _named(self) -> dict:
        if self._var_list is None:
            self.build()
        var_list = self._var_list
        if isinstance(var_list, dict):
            named = dict(var_list)
        else:
            named = {}
            for var in var_list:
                if not isinstance(var, Variable):
                    raise TypeError(f"Saver: {var!r} is not a tf.Variable")
                if var.var_name in named:
                    raise ValueError(f"At least two variables have the same name: "
                                     f"{var.var_name}")
                named[var.var_name] = var
        if not named and not self._allow_empty:
            raise ValueError("No variables to save")
        return named

    def save(self, sess, save_path: str, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False) -> str:
        """Write the values to `save_path[-global_step]` and return that prefix."""
        prefix = os.fspath(save_path)
        if global_step is not None:
            step = global_step
            if not isinstance(step, (int, np.integer)):
                step = int(np.asarray(sess.run(step)))
            prefix = f"{prefix}-{step:08d}" if self._pad else f"{prefix}-{step}"
        values = {}
        for name, var in self._named().items():
            value = sess.variable_value(var)
            if value is None:
                raise FailedPreconditionError(f"Attempting to use uninitialized value {name} "
                                              "(Saver.save)")
            values[name] = value
        folder = os.path.dirname(prefix)
        if folder:
            os.makedirs(folder, exist_ok=True)
        _dj_save(values, prefix + _SUFFIX)
        if prefix in self._last:
            self._last.remove(prefix)
        self._last.append(prefix)
        while self._max_to_keep and len(self._last) > self._max_to_keep:
            old = self._last.pop(0)
            if os.path.exists(old + _SUFFIX):
                os.remove(old + _SUFFIX)
        if write_state:
            _write_state(folder or ".", prefix, self._last, latest_filename or "checkpoint")
        return prefix

    def restore(self, sess, save_path: str) -> None:
        """Set the session's variables to the values saved at prefix `save_path`."""
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        values = _read(os.fspath(save_path))
        for name, var in self._named().items():
            if name not in values:
                raise NotFoundError(f"Key {name} not found in checkpoint {save_path}")
            value = np.asarray(values[name])
            if tuple(value.shape) != tuple(var.shape):
                raise ValueError(f"Saver.restore: {name} has shape {tuple(value.shape)} in the "
                                 f"checkpoint, {tuple(var.shape)} in the graph")
            sess.load_variable(var, value)

    @property
    def last_checkpoints(self) -> list:
        """The prefixes this saver wrote and kept, oldest first."""
        return list(self._last)

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        """Take over a list of (prefix, time) as the kept checkpoints."""
        self._last = [p for p, _ in last_checkpoints_with_time]


def _read(prefix: str) -> dict:
    path = prefix + _SUFFIX
    if not os.path.exists(path):
        raise NotFoundError(f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                            f"matching files for {prefix} (dongjing writes {path})")
    try:
        loaded = _dj_load(path)
    except CheckpointError:
        raise
    return {k: v.numpy() if hasattr(v, "numpy") else v for k, v in loaded.items()}


def _write_state(folder: str, newest: str, kept: list, filename: str) -> None:
    def rel(p):
        return os.path.relpath(p, folder) if os.path.dirname(p) == folder else p

    lines = [f'model_checkpoint_path: "{rel(newest)}"']
    lines += [f'all_model_checkpoint_paths: "{rel(p)}"' for p in kept]
    with open(os.path.join(folder, filename), "w") as f:
        f.write("\n".join(lines) + "\n")


def latest_checkpoint(checkpoint_dir: str, latest_filename=None) -> str | None:
    """The newest checkpoint prefix recorded in `checkpoint_dir` (None if there is none)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not os.path.exists(state.model_checkpoint_path + _SUFFIX):
        return None
    return state.model_checkpoint_path


class CheckpointState:
    """What TF's `checkpoint` state file says: the newest prefix and all kept ones."""

    def __init__(self, model_checkpoint_path: str, all_model_checkpoint_paths: list):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = all_model_checkpoint_paths

    def __repr__(self) -> str:
        return f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r})"


def get_checkpoint_state(checkpoint_dir: str, latest_filename=None) -> CheckpointState | None:
    """The checkpoint state recorded in `checkpoint_dir` (None if there is none)."""
    folder = os.fspath(checkpoint_dir)
    path = os.path.join(folder, latest_filename or "checkpoint")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read()

    def absolute(p):
        return p if os.path.isabs(p) else os.path.join(folder, p)

    newest = re.search(r'^model_checkpoint_path:\s*"(.*)"\s*$', text, re.M)
    if newest is None:
        return None
    kept = re.findall(r'^all_model_checkpoint_paths:\s*"(.*)"\s*$', text, re.M)
    return CheckpointState(absolute(newest.group(1)), [absolute(p) for p in kept])


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint was saved at this prefix."""
    return os.path.exists(os.fspath(checkpoint_prefix) + _SUFFIX)
