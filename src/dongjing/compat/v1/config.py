"""tf.ConfigProto, tf.GPUOptions, tf.RunOptions' cousins: accepted so TF1 programs run; they
do not change results (threads, placement and memory growth are dongjing's own)."""

from __future__ import annotations


class _Options:
    """Keyword arguments kept as attributes (unknown ones too: TF's protos have many)."""

    def __init__(self, **fields):
        for key, value in fields.items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({body})"


class GPUOptions(_Options):
    """Accepted (`allow_growth`, `per_process_gpu_memory_fraction`, ...); no effect."""

    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=0.0, **fields):
        super().__init__(allow_growth=allow_growth,
                         per_process_gpu_memory_fraction=per_process_gpu_memory_fraction,
                         **fields)


class GraphOptions(_Options):
    """Accepted; no effect."""


class ConfigProto(_Options):
    """A session config (`allow_soft_placement`, `log_device_placement`, `gpu_options`,
    `device_count`, thread counts, ...): accepted by tf.Session, no effect on results."""

    def __init__(self, allow_soft_placement=False, log_device_placement=False,
                 gpu_options=None, **fields):
        super().__init__(allow_soft_placement=allow_soft_placement,
                         log_device_placement=log_device_placement,
                         gpu_options=gpu_options if gpu_options is not None else GPUOptions(),
                         **fields)
