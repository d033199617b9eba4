# Vendored from pytorch/examples, time_sequence_prediction/generate_sine_wave.py
#   (commit a78ba324e3c4b05d93f170a3e033008a2de250f8),
#   https://github.com/pytorch/examples/blob/main/time_sequence_prediction/generate_sine_wave.py
# Licence: BSD 3-Clause, Copyright (c) 2017, Pytorch contributors (see pytorch/examples LICENSE).
# Changes for dongjing: the torch import line names dongjing instead. The test runs it before
# torch_time_sequence_train.py, with shorter and fewer waves (substitutions on L and N).
import numpy as np
import dongjing as torch

np.random.seed(2)

T = 20
L = 1000
N = 100

x = np.empty((N, L), 'int64')
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype('float64')
torch.save(data, open('traindata.pt', 'wb'))
