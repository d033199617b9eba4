# Vendored from d2l-ai/d2l-zh, chapter_linear-networks/linear-regression-scratch.md
# (commit 078ab0db39ca0f35d64cd9bdd0d72f5f9a3a913c), "线性回归的从零开始实现":
#   https://github.com/d2l-ai/d2l-zh/blob/master/chapter_linear-networks/linear-regression-scratch.md
# Licence: the book's sample code is MIT-0 (MIT No Attribution; see d2l-zh LICENSE-SAMPLECODE),
# Copyright (c) d2l.ai authors.
# The chapter's PyTorch code cells (`#@tab pytorch` and `#@tab all`), in order, as published.
# Changes for dongjing: the torch import line names dongjing instead; the notebook magic
# `%matplotlib inline` (IPython syntax, not Python) is left out. `from d2l import torch as d2l`
# is kept: the test gives it d2l_torch.py (d2l's library, vendored) built on the framework.
from d2l import torch as d2l
import dongjing as torch
import random

def synthetic_data(w, b, num_examples):  #@save
    """生成 y = Xw + b + 噪声。"""
    X = d2l.normal(0, 1, (num_examples, len(w)))
    y = d2l.matmul(X, w) + b
    y += d2l.normal(0, 0.01, y.shape)
    return X, d2l.reshape(y, (-1, 1))

true_w = d2l.tensor([2, -3.4])
true_b = 4.2
features, labels = synthetic_data(true_w, true_b, 1000)

print('features:', features[0],'\nlabel:', labels[0])

d2l.set_figsize()
d2l.plt.scatter(d2l.numpy(features[:, 1]), d2l.numpy(labels), 1);

def data_iter(batch_size, features, labels):
    num_examples = len(features)
    indices = list(range(num_examples))
    # 这些样本是随机读取的，没有特定的顺序
    random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        batch_indices = d2l.tensor(
            indices[i: min(i + batch_size, num_examples)])
        yield features[batch_indices], labels[batch_indices]

batch_size = 10

for X, y in data_iter(batch_size, features, labels):
    print(X, '\n', y)
    break

w = torch.normal(0, 0.01, size=(2,1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)

def linreg(X, w, b):  #@save
    """线性回归模型。"""
    return d2l.matmul(X, w) + b

def squared_loss(y_hat, y):  #@save
    """均方损失。"""
    return (y_hat - d2l.reshape(y, y_hat.shape)) ** 2 / 2

def sgd(params, lr, batch_size):  #@save
    """小批量随机梯度下降。"""
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()

lr = 0.03
num_epochs = 3
net = linreg
loss = squared_loss

for epoch in range(num_epochs):
    for X, y in data_iter(batch_size, features, labels):
        l = loss(net(X, w, b), y)  # `X`和`y`的小批量损失
        # 因为`l`形状是(`batch_size`, 1)，而不是一个标量。`l`中的所有元素被加到一起，
        # 并以此计算关于[`w`, `b`]的梯度
        l.sum().backward()
        sgd([w, b], lr, batch_size)  # 使用参数的梯度更新参数
    with torch.no_grad():
        train_l = loss(net(features, w, b), labels)
        print(f'epoch {epoch + 1}, loss {float(train_l.mean()):f}')

print(f'w的估计误差: {true_w - d2l.reshape(w, true_w.shape)}')
print(f'b的估计误差: {true_b - b}')
