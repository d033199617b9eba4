# Vendored from d2l-ai/d2l-zh, chapter_multilayer-perceptrons/mlp-scratch.md
# (commit 10b71cd3315ffe467a8e1115632dc16594b2e1e0), "多层感知机的从零开始实现":
#   https://github.com/d2l-ai/d2l-zh/blob/master/chapter_multilayer-perceptrons/mlp-scratch.md
# Licence: the book's sample code is MIT-0 (MIT No Attribution; see d2l-zh LICENSE-SAMPLECODE),
# Copyright (c) d2l.ai authors.
# The chapter's PyTorch code cells (`#@tab pytorch` and `#@tab all`), in order, as published.
# Changes for dongjing: the torch import lines name dongjing instead. `from d2l import torch as
# d2l` is kept: the test gives it d2l_torch.py (d2l's library, vendored) built on the
# framework, with a stand-in torchvision whose FashionMNIST is a few synthetic 28x28 images;
# the test makes the batches smaller. d2l.train_ch3 asserts that the model learned.
from d2l import torch as d2l
import dongjing as torch
from dongjing import nn

batch_size = 256
train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)

num_inputs, num_outputs, num_hiddens = 784, 10, 256

W1 = nn.Parameter(torch.randn(
    num_inputs, num_hiddens, requires_grad=True) * 0.01)
b1 = nn.Parameter(torch.zeros(num_hiddens, requires_grad=True))
W2 = nn.Parameter(torch.randn(
    num_hiddens, num_outputs, requires_grad=True) * 0.01)
b2 = nn.Parameter(torch.zeros(num_outputs, requires_grad=True))

params = [W1, b1, W2, b2]

def relu(X):
    a = torch.zeros_like(X)
    return torch.max(X, a)

def net(X):
    X = d2l.reshape(X, (-1, num_inputs))
    H = relu(X@W1 + b1)  # 这里“@”代表矩阵乘法
    return (H@W2 + b2)

loss = nn.CrossEntropyLoss()

num_epochs, lr = 10, 0.1
updater = torch.optim.SGD(params, lr=lr)
d2l.train_ch3(net, train_iter, test_iter, loss, num_epochs, updater)

d2l.predict_ch3(net, test_iter)
