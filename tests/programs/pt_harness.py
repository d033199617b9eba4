"""Runs a vendored PyTorch program (tests/programs/torch_*.py) on `dongjing` or on `torch`:
the program's import lines name dongjing; for torch they are read back as torch. Stand-ins for
downloads come from pt_standins; `subs` are the named substitutions that keep a run small.

`Shared` makes two runs comparable: the same initial weights (each model's state is taken
from the torch run the first time the model is called, and given to the dongjing run's model
at the same moment) and the same random draws (randn, rand, randint, randperm, normal with
number arguments, multinomial, dropout masks, xavier_uniform_, Categorical samples and
DataLoader order come from one NumPy generator, seeded alike for both runs)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import random
import re
import sys
import types
from pathlib import Path

import numpy as np

PROGRAMS = Path(__file__).parent
_IMPORT = re.compile(r"^(\s*(?:import|from)\s.*)$", re.M)


def source_for(name: str, framework: str, subs: dict | None = None) -> str:
    """The program's text with its import lines naming `framework` and `subs` applied."""
    text = (PROGRAMS / name).read_text()
    for old, new in (subs or {}).items():
        assert old in text, (name, old)
        text = text.replace(old, new)
    if framework == "torch":
        text = _IMPORT.sub(lambda m: m.group(1).replace("dongjing", "torch"), text)
    return text


class Shared:
    """What two runs share: the torch run records each model's first state, the dongjing run
    loads it; both draw their random numbers from `np.random.default_rng(seed)`."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.states: list[tuple[str, dict]] = []

    @contextlib.contextmanager
    def applied(self, fw, recording: bool):
        rng = np.random.default_rng(self.seed)
        patches = _random_patches(fw, rng) + [_first_call_patch(fw, self.states, recording)]
        originals = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patches]
        for owner, attr, value in patches:
            setattr(owner, attr, value)
        try:
            yield
        finally:
            for owner, attr, value in originals:
                setattr(owner, attr, value)


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or (
            len(size) == 1 and type(size[0]).__name__ == "Size"):
        return tuple(size[0])
    return tuple(int(s) for s in size)


def _random_patches(fw, rng):
    def make(array, dtype=None, requires_grad=False, **_):
        t = fw.tensor(array, dtype=dtype if dtype is not None else fw.float32)
        return t.requires_grad_() if requires_grad else t

    def randn(*size, **kw):
        return make(rng.standard_normal(_size(size or (kw["size"],))), **_kw(kw))

    def rand(*size, **kw):
        return make(rng.random(_size(size or (kw["size"],))), **_kw(kw))

    original_normal = fw.normal

    def normal(mean, std=1.0, size=None, **kw):
        if size is None or not all(isinstance(v, (int, float)) for v in (mean, std)):
            sized = {} if size is None else {"size": size}
            return original_normal(mean, std, **sized, **kw)  # tensor means: not drawn here
        return make(rng.normal(mean, std, _size((size,))), **_kw(kw))

    def xavier_uniform_(tensor, gain=1.0, generator=None):
        shape = tuple(tensor.shape)
        receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        bound = gain * np.sqrt(6.0 / (shape[1] * receptive + shape[0] * receptive))
        with fw.no_grad():
            tensor.copy_(fw.tensor(rng.uniform(-bound, bound, shape).astype(np.float32)))
        return tensor

    def like(draw):
        return lambda t, dtype=None, **kw: make(draw(tuple(t.shape)), dtype or t.dtype)

    def randint(low, high=None, size=None, **kw):
        low, high = (0, low) if high is None else (low, high)
        kw.setdefault("dtype", fw.int64)
        return make(rng.integers(low, high, _size(size)), **_kw(kw))

    def randperm(n, **kw):
        kw.setdefault("dtype", fw.int64)
        return make(rng.permutation(int(n)), **_kw(kw))

    def multinomial(probs, num_samples, replacement=False, **kw):
        p = np.asarray(probs.detach().numpy(), np.float64)
        rows = p.reshape(-1, p.shape[-1])
        picks = [rng.choice(len(r), num_samples, replace=replacement, p=r / r.sum()) for r in rows]
        return make(np.array(picks).reshape(*p.shape[:-1], num_samples), dtype=fw.int64)

    def dropout(x, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return x
        keep = (rng.random(tuple(x.shape)) >= p) / (1.0 - p)
        return x * fw.tensor(keep.astype(np.float32))

    def categorical_sample(self, sample_shape=()):
        p = np.asarray(self.probs.detach().numpy(), np.float64)
        u = rng.random(tuple(sample_shape) + p.shape[:-1] + (1,))
        index = (np.cumsum(p, -1) / p.sum(-1, keepdims=True) < u).sum(-1)
        return make(np.minimum(index, p.shape[-1] - 1), dtype=fw.int64)

    loader = fw.utils.data.DataLoader

    class InOrderLoader(loader):  # the order is the one thing a shuffle would change
        def __init__(self, dataset, *args, **kwargs):
            kwargs["shuffle"] = False
            # worker processes change nothing a run computes, and cost seconds (PyTorch's)
            for name in ("num_workers", "prefetch_factor", "persistent_workers"):
                kwargs.pop(name, None)
            super().__init__(dataset, *args, **kwargs)

    rnd = (randn, rand, like(rng.standard_normal), like(rng.random), randint, randperm)
    names = ("randn", "rand", "randn_like", "rand_like", "randint", "randperm")
    patches = [(fw, n, f) for n, f in zip(names, rnd)]
    patches += [(fw, "normal", normal), (fw.nn.init, "xavier_uniform_", xavier_uniform_),
                (fw, "multinomial", multinomial), (fw.nn.functional, "dropout", dropout),
                (fw.distributions.Categorical, "sample", categorical_sample),
                (fw.utils.data, "DataLoader", InOrderLoader)]
    return patches


def _kw(kw: dict) -> dict:
    return {k: v for k, v in kw.items() if k in ("dtype", "requires_grad")}


def _first_call_patch(fw, states: list, recording: bool):
    """Module.__call__ that, the first time a model (a module none of whose parameters was seen
    yet) is called, records its state (torch) or loads the recorded one (dongjing)."""
    original = fw.nn.Module.__call__
    seen: set[int] = set()

    def call(self, *args, **kwargs):
        params = list(self.parameters())
        if params and not any(id(p) in seen for p in params):
            named = dict(self.named_parameters())
            named.update({k: v for k, v in self.named_buffers() if v.dtype != fw.int64})
            if recording:
                states.append((type(self).__name__,
                               {k: v.detach().numpy().copy() for k, v in named.items()}))
            else:
                cls, state = states[sum(1 for _ in seen_roots)]
                assert cls == type(self).__name__ and set(state) == set(named), (
                    cls, sorted(set(state) ^ set(named)))
                with fw.no_grad():
                    for k, v in named.items():
                        v.copy_(fw.tensor(state[k]))
            seen_roots.append(type(self).__name__)
            seen.update(id(p) for p in params)
        return original(self, *args, **kwargs)

    seen_roots: list[str] = []
    return (fw.nn.Module, "__call__", call)


def run(name: str, framework: str = "dongjing", argv=(), subs=None, cwd=None, modules=None,
        shared: Shared | None = None, standins=None, module_subs=None) -> str:
    """Run program `name` as __main__ on `framework`; return what it printed. `modules`: sibling
    program files it imports, {import name: file}; `module_subs`: {import name: subs} for them;
    `standins`: {module name: module}."""
    fw = importlib.import_module(framework)
    installed = dict(standins or {})
    for import_name, file in (modules or {}).items():
        module = types.ModuleType(import_name)
        module.__file__ = str(PROGRAMS / file)
        installed[import_name] = module
    saved = {k: sys.modules.get(k) for k in installed}
    sys.modules.update(installed)
    old_argv, old_cwd = sys.argv, os.getcwd()
    out = io.StringIO()
    random.seed(0)
    np.random.seed(0)
    fw.manual_seed(0)
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [name, *argv]
        context = shared.applied(fw, framework == "torch") if shared else contextlib.nullcontext()
        with context, contextlib.redirect_stdout(out):
            for import_name, file in (modules or {}).items():
                text = source_for(file, framework, (module_subs or {}).get(import_name))
                exec(compile(text, str(PROGRAMS / file), "exec"),
                     installed[import_name].__dict__)
            namespace = {"__name__": "__main__", "__file__": str(PROGRAMS / name)}
            exec(compile(source_for(name, framework, subs), str(PROGRAMS / name), "exec"),
                 namespace)
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
        if "matplotlib.pyplot" in sys.modules:  # the programs' figures, never shown here
            sys.modules["matplotlib.pyplot"].close("all")
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return out.getvalue()


def floats(pattern: str, text: str) -> list[float]:
    """Every number the regex `pattern`'s groups match in `text`, in order (groups of an
    alternative that did not match are left out)."""
    found = re.findall(pattern, text)
    return [float(v) for m in found for v in (m if isinstance(m, tuple) else (m,)) if v]
