"""JAX with ``jax.jit`` (optional: skipped if jax is missing). Functional: a training step
returns new parameters and velocities. ``device`` (a ``jax.Device``; None: JAX's default) is
where the arrays are put, and so where the compiled step runs."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems import jax_models
from bench.systems.base import Probe, Unavailable
from bench.workloads import GELU_C, GELU_K, ChainData, MlpData, OpData, RnnData


def _jax() -> tuple[Any, Any]:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        raise Unavailable(f"jax not importable ({e})") from e
    return jax, jnp


def _put(x: np.ndarray, device: Any = None) -> Any:
    """``x`` as a JAX array: on JAX's default device, or committed to ``device``."""
    jax, jnp = _jax()
    return jnp.asarray(x) if device is None else jax.device_put(x, device)


class _Jit:
    note = "XLA's own CPU thread pool"

    def __init__(self, fn: Any, args: tuple[Any, ...], names: list[str]) -> None:
        jax, _ = _jax()
        self.jax, self.fn, self.args, self.names = jax, fn, args, names

    def step(self) -> None:
        self.jax.block_until_ready(self.fn(*self.args))

    def probe(self) -> Probe:
        loss, grads = self.jax.block_until_ready(self.fn(*self.args))
        return Probe(float(loss), {n: np.asarray(g) for n, g in zip(self.names, grads)})


class Mlp:
    note = "value_and_grad + momentum SGD in one jit"

    def __init__(self, d: MlpData, device: Any = None) -> None:
        jax, jnp = _jax()
        self.jax, self.names = jax, d.param_names
        lr, mom = d.lr, d.momentum

        def loss_fn(params: list[Any], x: Any, y: Any) -> Any:
            h = x
            for i in range(0, len(params), 2):
                h = h @ params[i] + params[i + 1]
                if i + 2 < len(params):
                    h = jax.nn.relu(h)
            lse = jax.nn.logsumexp(h, axis=1)
            return jnp.mean(lse - jnp.take_along_axis(h, y[:, None], axis=1)[:, 0])

        def train(params: list[Any], vels: list[Any], x: Any, y: Any) -> Any:
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            vels = [mom * v + g for v, g in zip(vels, grads)]
            params = [p - lr * v for p, v in zip(params, vels)]
            return params, vels, loss, grads

        self.train = jax.jit(train)
        self.params = [_put(p, device) for p in d.params]
        self.vels = [_put(np.zeros_like(p), device) for p in d.params]
        self.x, self.y = _put(d.x, device), _put(d.y, device)

    def _run(self) -> tuple[Any, Any]:
        out = self.jax.block_until_ready(self.train(self.params, self.vels, self.x, self.y))
        self.params, self.vels, loss, grads = out
        return loss, grads

    def step(self) -> None:
        self._run()

    def probe(self) -> Probe:
        loss, grads = self._run()
        return Probe(
            float(loss),
            {n: np.asarray(g) for n, g in zip(self.names, grads)},
            {n: np.asarray(p) for n, p in zip(self.names, self.params)},
        )


def _op(d: OpData, device: Any = None) -> _Jit:
    jax, _ = _jax()
    fn = jax.jit(jax.value_and_grad(lambda x, y: (x * y + x).sum(), argnums=(0, 1)))
    return _Jit(fn, (_put(d.x, device), _put(d.y, device)), ["x", "y"])


def _chain(d: ChainData, device: Any = None) -> _Jit:
    jax, jnp = _jax()

    def loss(x: Any) -> Any:
        return (0.5 * x * (1 + jnp.tanh(GELU_K * (x + GELU_C * x**3)))).sum()

    fn = jax.jit(jax.value_and_grad(lambda x: loss(x), argnums=(0,)))
    return _Jit(fn, (_put(d.x, device),), ["x"])


def _rnn(d: RnnData, device: Any = None) -> _Jit:
    jax, jnp = _jax()
    steps, batch, hidden = d.x.shape[0], d.x.shape[1], d.w_hh.shape[0]

    def loss(w_xh: Any, w_hh: Any, b: Any, x: Any) -> Any:
        h = jnp.zeros((batch, hidden), jnp.float32)
        for t in range(steps):  # unrolled at trace time
            h = jnp.tanh(x[t] @ w_xh + h @ w_hh + b)
        return h.sum()

    fn = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
    args = tuple(_put(a, device) for a in (d.w_xh, d.w_hh, d.b, d.x))
    return _Jit(fn, args, d.param_names)


def build(kind: str, data: Any, device: Any = None) -> Any:
    """A jax.jit runner for a workload kind, its arrays on ``device`` (None: the default)."""
    jax, jnp = _jax()
    if kind == "conv":
        raise Unavailable("W7 (convnet) is not written for JAX")
    if kind in ("seq2seq", "transformer"):
        make = jax_models.seq2seq if kind == "seq2seq" else jax_models.transformer
        return make(jax, jnp, data, lambda x: _put(x, device))
    runner = {"mlp": Mlp, "op": _op, "chain": _chain, "rnn": _rnn, "rnn_while": _rnn}[kind]
    return runner(data, device)
