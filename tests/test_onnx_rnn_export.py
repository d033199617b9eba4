"""nn.RNN / LSTM / GRU export as ONNX RNN / LSTM / GRU nodes (one per layer) with a dynamic
sequence length: one exported model gives dongjing's outputs in onnxruntime at two sequence
lengths, and imports back (dj.onnx.to_module) with the same outputs."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class Tagger(nn.Module):
    """A recurrent layer inside a model, its outputs used further on."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn, self.head = rnn, nn.Linear(rnn.hidden_size * (1 + rnn.bidirectional), 2)

    def forward(self, x, h0):
        y, h = self.rnn(x, h0)
        return self.head(y), h


def _flat(out) -> list:
    items = []
    for o in out if isinstance(out, tuple) else (out,):
        items.extend(_flat(o) if isinstance(o, tuple) else [o])
    return items


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("build, kind", [
    (lambda: nn.LSTM(3, 4, num_layers=2), "LSTM"),
    (lambda: nn.GRU(3, 4, bidirectional=True, batch_first=True), "GRU"),
    (lambda: nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True), "RNN"),
    (lambda: nn.RNN(3, 4, bias=False), "RNN"),
])
def test_recurrent_layers_export_as_one_node_per_layer_with_any_length(build, kind):
    dj.manual_seed(0)
    model = build().eval()
    seq_axis = 1 if model.batch_first else 0
    shape = lambda t: (2, t, 3) if model.batch_first else (t, 2, 3)  # noqa: E731
    proto = dj.onnx.export(model, dj.tensor(_rand(shape(5), 0)),
                           dynamic_axes={"input": {seq_axis: "seq"}})
    counts = collections.Counter(n.op_type for n in proto.graph.node)
    assert counts[kind] == model.num_layers, counts
    longer = dj.onnx.export(model, dj.tensor(_rand(shape(9), 0)),
                            dynamic_axes={"input": {seq_axis: "seq"}})
    assert len(longer.graph.node) == len(proto.graph.node)  # nothing unrolled
    assert "forward" not in model.__dict__  # the module's own forward is back
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    imported = dj.onnx.to_module(proto)
    for steps in (3, 8):
        x = _rand(shape(steps), steps)
        want = _flat(model(dj.tensor(x)))
        got = session.run(None, {"input": x})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)
        for g, w in zip(_flat(imported(x)), want):  # the round trip is exact
            np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("rnn", [lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True),
                                 lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True,
                                                batch_first=True)])
def test_inside_a_model_with_initial_state(rnn):
    dj.manual_seed(1)
    model = Tagger(rnn()).eval()
    layers = model.rnn.num_layers * (2 if model.rnn.bidirectional else 1)
    lstm = isinstance(model.rnn, nn.LSTM)

    def state(seed):
        h = _rand((layers, 2, 4), seed)
        return (h, _rand((layers, 2, 4), seed + 1)) if lstm else h

    h0 = state(9)
    h0_t = tuple(map(dj.tensor, h0)) if lstm else dj.tensor(h0)
    proto = dj.onnx.export(model, (dj.tensor(_rand((2, 5, 3), 0)), h0_t),
                           dynamic_axes={"x": {1: "seq"}})
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for steps in (2, 6):
        x = _rand((2, steps, 3), steps)
        want = _flat(model(dj.tensor(x), h0_t))
        feeds = dict(zip(names, [x] + (list(h0) if lstm else [h0])))
        for g, w in zip(session.run(None, feeds), want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def test_unbatched_input():
    dj.manual_seed(2)
    model = nn.LSTM(3, 4).eval()
    proto = dj.onnx.export(model, dj.tensor(_rand((5, 3), 0)),
                           dynamic_axes={"input": {0: "seq"}})
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for steps in (1, 4):
        x = _rand((steps, 3), steps)
        for g, w in zip(session.run(None, {"input": x}), _flat(model(dj.tensor(x)))):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)
