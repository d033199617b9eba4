"""Reassigning a submodule, parameter or buffer keeps its place among its kind (PyTorch's
dict semantics), so children(), named_parameters() and state_dict() keep their order."""

from __future__ import annotations

import dongjing as dj
from dongjing import nn


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(4, 2)
        self.scale = nn.Parameter(dj.ones(1))
        self.shift = nn.Parameter(dj.zeros(1))
        self.register_buffer("count", dj.zeros(1))
        self.register_buffer("total", dj.zeros(1))


def test_reassigned_submodule_keeps_its_place():
    net = _Net()
    net.conv1 = nn.Conv2d(1, 4, 3)  # as siamese_network swaps resnet18's first conv
    assert [n for n, _ in net.named_children()] == ["conv1", "relu", "fc"]
    assert list(net.children())[0].in_channels == 1
    net.add_module("relu", nn.Tanh())
    assert [type(m).__name__ for m in net.children()] == ["Conv2d", "Tanh", "Linear"]


def test_reassigned_parameter_and_buffer_keep_their_place():
    net = _Net()
    net.scale = nn.Parameter(dj.full((1,), 2.0))
    net.register_parameter("shift", nn.Parameter(dj.ones(1)))
    net.register_buffer("count", dj.ones(1))
    assert [n for n, _ in net.named_parameters()][:2] == ["scale", "shift"]
    assert [n for n, _ in net.named_buffers()] == ["count", "total"]
    assert list(net.state_dict())[:2] == ["scale", "shift"] and net.scale.item() == 2.0


def test_a_name_moving_between_kinds_leaves_the_old_table():
    net = _Net()
    net.fc = nn.Parameter(dj.ones(2))
    assert "fc" not in dict(net.named_children()) and net.fc.shape == (2,)
    net.fc = nn.Linear(2, 2)
    assert "fc" not in net._parameters and [n for n, _ in net.named_children()][-1] == "fc"
