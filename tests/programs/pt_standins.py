"""Small stand-ins for what the vendored PyTorch programs download or import besides torch
(torchvision's datasets, transforms and image saving; gym's CartPole; torchtext's WikiText-2),
built for one framework module (`dongjing` or `torch`), so a program sees the same data
whichever it runs on. Data is synthetic, drawn from NumPy with fixed seeds, and tiny."""

from __future__ import annotations

import math
import types

import numpy as np

SAVED_IMAGES: list[tuple[str, tuple]] = []  # (path, shape) of every save_image call


def digit_images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n 28x28 uint8 "digits" of the 10 classes in turn, shuffled: class k is a bright 6x6
    square at a place set by k, on noise."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 10)  # every class n // 10 times or more
    images = rng.integers(0, 60, (n, 28, 28))
    for i, k in enumerate(labels):
        r, c = 2 + 8 * (k // 4), 2 + 6 * (k % 4)
        images[i, r:r + 6, c:c + 6] += 180
    return images.astype(np.uint8), labels.astype(np.int64)


def torchvision(fw, mnist_sizes=(64, 32), fake_size=12,
                resnet_widths=(64, 128, 256, 512)) -> dict[str, types.ModuleType]:
    """`torchvision` with datasets.MNIST and FashionMNIST (`mnist_sizes` train/test images),
    FakeData (`fake_size` images unless told), transforms, utils.save_image and
    models.resnet18 (see resnet_models)."""
    datasets = types.ModuleType("torchvision.datasets")
    transforms = types.ModuleType("torchvision.transforms")
    utils = types.ModuleType("torchvision.utils")

    class ToTensor:
        def __call__(self, image):
            arr = np.asarray(image, dtype=np.float32) / 255.0
            arr = arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1)
            return fw.tensor(np.ascontiguousarray(arr))

    class Normalize:
        def __init__(self, mean, std):
            self.mean = np.asarray(mean, np.float32).reshape(-1, 1, 1)
            self.std = np.asarray(std, np.float32).reshape(-1, 1, 1)

        def __call__(self, tensor):
            return (tensor - fw.tensor(self.mean)) / fw.tensor(self.std)

    class Compose:
        def __init__(self, steps):
            self.steps = list(steps)

        def __call__(self, value):
            for step in self.steps:
                value = step(value)
            return value

    class _Images:
        def __init__(self, images, labels, transform):
            self.images, self.labels, self.transform = images, labels, transform

        def __len__(self):
            return len(self.images)

        def __getitem__(self, index):
            image = self.images[index]
            if self.transform is not None:
                image = self.transform(image)
            return image, int(self.labels[index])

    class MNIST(_Images):
        def __init__(self, root, train=True, download=False, transform=None):
            images, labels = digit_images(mnist_sizes[0 if train else 1], 0 if train else 1)
            super().__init__(images, labels, transform)
            self.data, self.targets = fw.tensor(images), fw.tensor(labels)

    class FakeData(_Images):
        def __init__(self, size=None, image_size=(3, 224, 224), num_classes=10, transform=None):
            size = fake_size if size is None else size
            rng = np.random.default_rng(2)
            c, h, w = image_size
            images = rng.integers(0, 256, (size, h, w, c)).astype(np.uint8)
            super().__init__(images, rng.integers(0, num_classes, size), transform)

    def save_image(tensor, fp, nrow=8, normalize=False, **kwargs):
        if tensor.ndim not in (3, 4):
            raise ValueError(f"save_image: a 3-d or 4-d image tensor, got {tuple(tensor.shape)}")
        SAVED_IMAGES.append((str(fp), tuple(tensor.shape)))

    datasets.MNIST, datasets.FashionMNIST, datasets.FakeData = MNIST, MNIST, FakeData
    transforms.ToTensor, transforms.Normalize, transforms.Compose = ToTensor, Normalize, Compose
    utils.save_image = save_image
    models = resnet_models(fw, resnet_widths)
    top = types.ModuleType("torchvision")
    top.datasets, top.transforms, top.utils, top.models = datasets, transforms, utils, models
    return {"torchvision": top, "torchvision.datasets": datasets,
            "torchvision.transforms": transforms, "torchvision.utils": utils,
            "torchvision.models": models}


def resnet_models(fw, widths=(64, 128, 256, 512)) -> types.ModuleType:
    """`torchvision.models` with resnet18, untrained: torchvision's layout and layer names (so
    a program may take its children apart) and its initialisation, built from `fw.nn`.
    `widths`: the channels of layer1..layer4 (torchvision's are the default; a test may make
    them narrower, as an 11M-parameter network trains too slowly for it on NumPy)."""
    nn = fw.nn

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self, layers, num_classes=1000):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._layer(widths[0], layers[0], 1)
            self.layer2 = self._layer(widths[1], layers[1], 2)
            self.layer3 = self._layer(widths[2], layers[2], 2)
            self.layer4 = self._layer(widths[3], layers[3], 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(widths[3], num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

        def _layer(self, planes, blocks, stride):
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                           nn.BatchNorm2d(planes))
            layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes
            layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(fw.flatten(self.avgpool(x), 1))

    def resnet18(pretrained=False, weights=None, progress=True, **kwargs):
        if pretrained or weights is not None:
            raise ValueError("stand-in torchvision: no pretrained weights (nothing is downloaded)")
        return ResNet([2, 2, 2, 2], **kwargs)

    models = types.ModuleType("torchvision.models")
    models.resnet18 = resnet18
    return models



class CartPole:
    """gym's CartPole-v1 dynamics (Barto, Sutton & Anderson), the gym>=0.26 API; an episode
    ends (terminated, as the programs read only that flag) at `max_steps`, and
    `spec.reward_threshold` is set by the test, to stay short."""

    def __init__(self, max_steps: int, reward_threshold: float):
        self.max_steps = max_steps
        self.spec = types.SimpleNamespace(reward_threshold=reward_threshold)
        self.rng = np.random.default_rng(0)
        self.state, self.steps = None, 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.steps = 0
        return self.state.astype(np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if int(action) == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        tau = 0.02
        self.state = np.array([x + tau * x_dot, x_dot + tau * x_acc,
                               theta + tau * theta_dot, theta_dot + tau * theta_acc])
        self.steps += 1
        fell = abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * 2 * math.pi / 360
        done = bool(fell) or self.steps >= self.max_steps
        return self.state.astype(np.float32), 1.0, done, False, {}

    def render(self):
        pass


class OldCartPole(CartPole):
    """The same, with gym's API before 0.26: seed(), reset() -> state, step() -> 4-tuple."""

    def seed(self, seed=None):
        self.rng = np.random.default_rng(seed)
        return [seed]

    def reset(self):
        return super().reset()[0]

    def step(self, action):
        state, reward, done, _, info = super().step(action)
        return state, reward, done, info


def gym(max_steps: int = 60, reward_threshold: float = 15.0,
        old_api: bool = False) -> dict[str, types.ModuleType]:
    """`gym` whose make('CartPole-v0' or 'CartPole-v1') is the stand-in above (`old_api`: the
    pre-0.26 one)."""
    module = types.ModuleType("gym")
    env = OldCartPole if old_api else CartPole
    module.make = lambda name, **kwargs: env(max_steps, reward_threshold)
    return {"gym": module}


_SYLLABLES = {"Italian": ["ro", "ti", "lo", "ni", "ca", "no", "ri"],
              "Russian": ["ov", "ko", "va", "sky", "in", "ev", "ra"],
              "German": ["sch", "mann", "berg", "er", "ei", "stein", "ko"],
              "Spanish": ["ez", "ar", "do", "ma", "ri", "go", "lo"],
              "Chinese": ["chan", "li", "wang", "zh", "ng", "hu", "ao"]}


def write_names(path) -> None:
    """data/names/<Language>.txt as the char-RNN tutorials read them: 30 synthetic names per
    language, made from syllables typical of it (so the language can be learned)."""
    folder = path / "data" / "names"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    for language, syllables in _SYLLABLES.items():
        names = ["".join(rng.choice(syllables, rng.integers(2, 4))).capitalize()
                 for _ in range(30)]
        (folder / f"{language}.txt").write_text("\n".join(names) + "\n", encoding="utf-8")


_ENG_FRA = """I am too cold.\tJe suis trop froid.
She is five years younger than me.\tElle a cinq ans de moins que moi.
She is too short.\tElle est trop petit.
I am not scared of dying.\tJe ne crains pas de mourir.
He is a talented young director.\tC'est un jeune directeur plein de talent.
I am cold.\tJ'ai froid.
You are late.\tTu es en retard.
We are happy.\tNous sommes heureux.
They are here.\tIls sont ici.
He is tall.\tIl est grand.
She is a teacher.\tElle est professeur.
I am tired.\tJe suis fatigue.
You are too young.\tTu es trop jeune.
He is not here.\tIl n'est pas ici.
We are not scared.\tNous n'avons pas peur.
It is raining.\tIl pleut."""


def write_eng_fra(path) -> None:
    """data/eng-fra.txt as the seq2seq tutorial reads it: tab-separated English-French pairs,
    a few, holding every French word the tutorial translates at its end (and one pair its
    filter drops)."""
    (path / "data").mkdir(parents=True, exist_ok=True)
    (path / "data" / "eng-fra.txt").write_text(_ENG_FRA + "\n", encoding="utf-8")


def _sentences(n: int, seed: int) -> list[str]:
    """Lines of a tiny regular language (so a language model can learn it), WikiText-style."""
    rng = np.random.default_rng(seed)
    subjects, verbs = ["the cat", "a dog", "the bird", "my friend"], ["sees", "likes", "eats"]
    objects = ["the fish", "a ball", "the seed", "some bread"]
    lines = []
    for i in range(n):
        if i % 5 == 0:
            lines.append("")
        lines.append(f" {rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} . ")
    return lines


def torchtext(sizes=(120, 30, 30)) -> dict[str, types.ModuleType]:
    """`torchtext` with datasets.WikiText2 (synthetic lines), data.utils.get_tokenizer
    ('basic_english') and vocab.build_vocab_from_iterator, as the transformer tutorial uses."""
    datasets = types.ModuleType("torchtext.datasets")
    data = types.ModuleType("torchtext.data")
    data_utils = types.ModuleType("torchtext.data.utils")
    vocab_module = types.ModuleType("torchtext.vocab")
    splits = {"train": 0, "valid": 1, "test": 2}

    def wikitext2(root=".data", split=("train", "valid", "test")):
        if isinstance(split, str):
            return iter(_sentences(sizes[splits[split]], splits[split]))
        return tuple(iter(_sentences(sizes[splits[s]], splits[s])) for s in split)

    def get_tokenizer(name, language="en"):
        if name != "basic_english":
            raise ValueError(f"stand-in torchtext: only 'basic_english', got {name!r}")
        return lambda line: line.lower().split()

    class Vocab:
        def __init__(self, tokens):
            self.itos = list(tokens)
            self.stoi = {t: i for i, t in enumerate(self.itos)}
            self.default = None

        def set_default_index(self, index):
            self.default = index

        def __getitem__(self, token):
            if token in self.stoi:
                return self.stoi[token]
            if self.default is None:
                raise RuntimeError(f"Token {token} not found and default index is not set")
            return self.default

        def __call__(self, tokens):
            return [self[t] for t in tokens]

        def __len__(self):
            return len(self.itos)

    def build_vocab_from_iterator(iterator, min_freq=1, specials=None, special_first=True):
        counts: dict[str, int] = {}
        for tokens in iterator:
            for t in tokens:
                counts[t] = counts.get(t, 0) + 1
        words = sorted((t for t, c in counts.items() if c >= min_freq),
                       key=lambda t: (-counts[t], t))
        specials = list(specials or [])
        words = [w for w in words if w not in specials]
        return Vocab(specials + words if special_first else words + specials)

    datasets.WikiText2 = wikitext2
    data_utils.get_tokenizer = get_tokenizer
    data.utils = data_utils
    vocab_module.build_vocab_from_iterator = build_vocab_from_iterator
    top = types.ModuleType("torchtext")
    top.datasets, top.data, top.vocab = datasets, data, vocab_module
    return {"torchtext": top, "torchtext.datasets": datasets, "torchtext.data": data,
            "torchtext.data.utils": data_utils, "torchtext.vocab": vocab_module}


def write_wikitext2(path, sizes=(120, 30, 30)) -> None:
    """data/wikitext-2/{train,valid,test}.txt as the word language model reads them: lines of
    the tiny regular language above."""
    folder = path / "data" / "wikitext-2"
    folder.mkdir(parents=True, exist_ok=True)
    for seed, (split, n) in enumerate(zip(("train", "valid", "test"), sizes)):
        (folder / f"{split}.txt").write_text("\n".join(_sentences(n, seed)) + "\n",
                                             encoding="utf-8")


DISPLAYED: list[str] = []  # what the d2l programs show: IPython display calls, figure formats


def d2l_support(fw, mnist_sizes=(64, 32)) -> dict[str, types.ModuleType]:
    """What `from d2l import torch as d2l` needs besides the vendored library (d2l_torch.py,
    which the test installs as `d2l.torch`): the `d2l` package, IPython.display (display and
    clear_output record what they are given), matplotlib_inline.backend_inline and torchvision
    (FashionMNIST: `mnist_sizes` synthetic 28x28 images)."""
    package = types.ModuleType("d2l")
    package.__path__ = []
    display = types.ModuleType("IPython.display")
    display.display = lambda *objects, **kwargs: DISPLAYED.extend(
        type(o).__name__ for o in objects)
    display.clear_output = lambda wait=False: None
    ipython = types.ModuleType("IPython")
    ipython.display = display
    # what matplotlib asks an imported IPython: no shell is running, and a version whose
    # backend names it need not fix
    ipython.get_ipython = lambda: None
    ipython.version_info = (8, 24, 0, "final")
    backend_inline = types.ModuleType("matplotlib_inline.backend_inline")
    backend_inline.set_matplotlib_formats = lambda *formats, **kwargs: DISPLAYED.extend(formats)
    inline = types.ModuleType("matplotlib_inline")
    inline.backend_inline = backend_inline
    return {"d2l": package, "IPython": ipython, "IPython.display": display,
            "matplotlib_inline": inline, "matplotlib_inline.backend_inline": backend_inline,
            **torchvision(fw, mnist_sizes=mnist_sizes)}
