"""W9's model written once against PyTorch's API: the same code runs on ``torch`` and on
``dongjing`` (passed in as ``lib``), as the seq2seq tutorial writes it (EncoderRNN, a
BahdanauAttention and AttnDecoderRNN with teacher forcing), dropout left out."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems.base import EagerTraining
from bench.workloads import SOS_TOKEN, Seq2SeqData


def build_model(lib: Any, d: Seq2SeqData, device: Any = None) -> Any:
    """The encoder-decoder as ``lib.nn`` modules, loaded with the workload's parameters."""
    nn = lib.nn
    hidden, vocab = d.hidden, d.vocab

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.Wa = nn.Linear(hidden, hidden)
            self.Ua = nn.Linear(hidden, hidden)
            self.Va = nn.Linear(hidden, 1)

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(vocab, hidden)
            self.gru = nn.GRU(hidden, hidden, batch_first=True)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(vocab, hidden)
            self.attention = Attention()
            self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

    class Seq2Seq(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = Encoder()
            self.decoder = Decoder()

    model = Seq2Seq()
    state = {n: lib.tensor(np.array(v, copy=True)) for n, v in zip(d.param_names, d.params)}
    model.load_state_dict(state)
    if device is not None:
        model = model.to(device)
    return model


def seq2seq_loss(lib: Any, model: Any, src: Any, tgt: Any, length: int) -> Any:
    """The summed NLL of one sentence pair: the encoder one token at a time, then the decoder
    with attention over the encoder's outputs, fed the target (teacher forcing)."""
    F = lib.nn.functional
    enc, dec = model.encoder, model.decoder
    hidden_size = enc.embedding.weight.shape[1]
    hidden = lib.zeros(1, 1, hidden_size)
    outputs = []
    for t in range(length):
        embedded = enc.embedding(src[t:t + 1]).view(1, 1, hidden_size)
        output, hidden = enc.gru(embedded, hidden)
        outputs.append(output)
    keys = lib.cat(outputs, dim=1)  # (1, length, hidden)
    token = lib.full((1,), SOS_TOKEN, dtype=lib.int64)
    loss = None
    for t in range(length):
        embedded = dec.embedding(token).view(1, 1, hidden_size)
        query = hidden.permute(1, 0, 2)
        att = dec.attention
        scores = att.Va(lib.tanh(att.Wa(query) + att.Ua(keys)))
        weights = F.softmax(scores.squeeze(2).unsqueeze(1), dim=-1)
        context = lib.bmm(weights, keys)
        output, hidden = dec.gru(lib.cat((embedded, context), dim=2), hidden)
        log_probs = F.log_softmax(dec.out(output[0]), dim=-1)
        step_loss = F.nll_loss(log_probs, tgt[t:t + 1])
        loss = step_loss if loss is None else loss + step_loss
        token = tgt[t:t + 1]
    return loss


class EagerSeq2Seq(EagerTraining):
    """W9 eagerly in ``lib`` (torch or dongjing): forward, ``backward()``, plain SGD under
    ``no_grad``; ``loss_fn`` (default: the loss itself) may be a compiled version of it."""

    note = "the tutorial's modules, plain SGD in no_grad"

    def __init__(self, lib: Any, d: Seq2SeqData, device: Any = None, loss_fn: Any = None):
        self.lib, self.lr, self.length = lib, d.lr, len(d.src)
        self.model = build_model(lib, d, device)
        self.names = d.param_names
        named = dict(self.model.named_parameters())
        self.params = [named[n] for n in self.names]
        self.src = lib.tensor(d.src.astype(np.int64))
        self.tgt = lib.tensor(d.tgt.astype(np.int64))
        if device is not None:
            self.src, self.tgt = self.src.to(device), self.tgt.to(device)
        self.loss_fn = loss_fn or (lambda src, tgt: seq2seq_loss(lib, self.model, src, tgt,
                                                                   self.length))

    def _forward_backward(self) -> Any:
        for p in self.params:
            p.grad = None
        loss = self.loss_fn(self.src, self.tgt)
        loss.backward()
        return loss

    def _update(self) -> None:
        with self.lib.no_grad():
            for p in self.params:
                p -= self.lr * p.grad
