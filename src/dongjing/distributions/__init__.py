"""`dj.distributions` (PyTorch's `torch.distributions`): Normal, Uniform, Bernoulli,
Categorical, MultivariateNormal, Independent with sample / rsample / log_prob / entropy, and
`kl_divergence`. Written with dongjing ops, so log-densities and reparameterized samples carry
gradients to the parameters."""

from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .multivariate import Independent, MultivariateNormal
from .univariate import Bernoulli, Categorical, Normal, Uniform

__all__ = ["Distribution", "kl_divergence", "register_kl", "Independent", "MultivariateNormal",
           "Bernoulli", "Categorical", "Normal", "Uniform"]
