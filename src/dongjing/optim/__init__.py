"""`dj.optim`: optimizers (one update rule each, eager `step()` and static `minimize()`) and
`dj.optim.lr_scheduler`."""

from . import lr_scheduler
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rules import SGD, Adadelta, Adagrad, Adam, AdamW, RMSprop
from .rules_adaptive import ASGD, Adafactor, Adamax, Muon, NAdam, RAdam, Rprop, SparseAdam
