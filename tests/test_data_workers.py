"""DataLoader with worker processes: the same batches as in-process loading, real processes,
seeds per worker, IterableDataset shares, errors and dead or slow workers named."""

import os
import random
import time

import numpy as np
import pytest

import dongjing as dj
from dongjing.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
)
from dongjing.errors import ArgumentError, DataLoaderError


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return dj.tensor([float(i)]), i * i


class WhoAmI(Dataset):
    """Each example says which process and worker made it, and one random draw of each kind."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"pid": os.getpid(), "worker": -1 if info is None else info.id,
                "py": random.random(), "np": float(np.random.rand()),
                "dj": float(dj.rand(1).item())}


class Stream(IterableDataset):
    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def batches_as_lists(loader):
    out = []
    for x, y in loader:
        out.append((x.numpy().ravel().tolist(), y.numpy().tolist()))
    return out


def test_workers_give_the_batches_of_in_process_loading_in_order():
    ds = Squares(11)
    plain = batches_as_lists(DataLoader(ds, batch_size=3))
    for workers in (1, 2, 3):
        assert batches_as_lists(DataLoader(ds, batch_size=3, num_workers=workers)) == plain


def test_shuffled_order_is_the_generators_with_or_without_workers():
    ds = TensorDataset(np.arange(20.0), np.arange(20))
    a = batches_as_lists(DataLoader(ds, batch_size=4, shuffle=True,
                                    generator=np.random.default_rng(5)))
    b = batches_as_lists(DataLoader(ds, batch_size=4, shuffle=True, num_workers=2,
                                    generator=np.random.default_rng(5)))
    assert [y for _, y in a] == [y for _, y in b]
    assert sorted(sum((y for _, y in a), [])) == list(range(20))


def test_workers_are_separate_processes_with_their_own_seeds():
    dj.manual_seed(0)
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2)
    batches = list(loader)
    pids = {int(p) for b in batches for p in b["pid"].numpy()}
    assert os.getpid() not in pids and len(pids) == 2
    assert sorted({int(w) for b in batches for w in b["worker"].numpy()}) == [0, 1]
    # every generator differs between the workers (no repeated "random" augmentations)
    for kind in ("py", "np", "dj"):
        first = {int(b["worker"].numpy()[0]): float(b[kind].numpy()[0]) for b in batches[:2]}
        assert first[0] != first[1], kind
    assert get_worker_info() is None


def test_worker_init_fn_runs_in_each_worker_first(tmp_path):
    def init(worker_id):
        (tmp_path / f"w{worker_id}-{os.getpid()}").write_text("x")

    list(DataLoader(Squares(6), batch_size=2, num_workers=2, worker_init_fn=init))
    names = sorted(p.name.split("-")[0] for p in tmp_path.iterdir())
    assert names == ["w0", "w1"]
    assert all(int(p.name.split("-")[1]) != os.getpid() for p in tmp_path.iterdir())


def test_persistent_workers_live_across_epochs_and_others_do_not():
    keep = DataLoader(WhoAmI(), batch_size=4, num_workers=2, persistent_workers=True)
    first = {int(p) for b in keep for p in b["pid"].numpy()}
    second = {int(p) for b in keep for p in b["pid"].numpy()}
    assert first == second
    fresh = DataLoader(WhoAmI(), batch_size=4, num_workers=2)
    one = {int(p) for b in fresh for p in b["pid"].numpy()}
    two = {int(p) for b in fresh for p in b["pid"].numpy()}
    assert one.isdisjoint(two)


def test_an_epoch_left_early_does_not_leak_into_the_next():
    loader = DataLoader(Squares(12), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    next(it)
    del it
    assert batches_as_lists(loader) == batches_as_lists(DataLoader(Squares(12), batch_size=2))


def test_iterable_dataset_shares_by_worker_info_and_repeats_without():
    shared = DataLoader(Stream(10), batch_size=3, num_workers=2)
    values = sorted(int(v) for b in shared for v in b.numpy())
    assert values == list(range(10))
    # each worker iterates its own copy: without sharding every value comes twice (PyTorch)
    copies = DataLoader(Stream(5, shard=False), batch_size=None, num_workers=2)
    assert sorted(int(v) for v in copies) == sorted(list(range(5)) * 2)
    in_process = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.numpy().tolist() for b in in_process] == [[0, 1, 2], [3, 4, 5]]


def test_persistent_iterable_workers_start_the_stream_over():
    loader = DataLoader(Stream(6), batch_size=2, num_workers=2, persistent_workers=True)
    assert sorted(int(v) for b in loader for v in b.numpy()) == list(range(6))
    assert sorted(int(v) for b in loader for v in b.numpy()) == list(range(6))


class Fails(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise ValueError("example 3 is bad")
        return i


def test_a_worker_error_is_raised_again_with_its_traceback():
    with pytest.raises(ValueError, match="DataLoader worker process") as info:
        list(DataLoader(Fails(), batch_size=1, num_workers=2))
    assert "example 3 is bad" in str(info.value) and "__getitem__" in str(info.value)


class Dies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            os._exit(3)
        return i


def test_a_dead_worker_is_named_not_waited_for():
    started = time.monotonic()
    with pytest.raises(DataLoaderError, match=r"worker 1 \(exit code 3\) exited"):
        list(DataLoader(Dies(), batch_size=2, num_workers=2))
    assert time.monotonic() - started < 10


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(30)
        return i


def test_timeout_bounds_the_wait_for_a_batch():
    started = time.monotonic()
    with pytest.raises(DataLoaderError, match="timed out after 0.3 s"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.3))
    assert time.monotonic() - started < 10


def test_batch_size_none_collate_fn_and_batch_sampler():
    ds = Squares(5)
    singles = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert [int(y) for _, y in singles] == [0, 1, 4, 9, 16]
    joined = list(DataLoader(ds, batch_size=2, collate_fn=lambda ex: [y for _, y in ex],
                             num_workers=2))
    assert joined == [[0, 1], [4, 9], [16]]
    sampler = BatchSampler(SequentialSampler(ds), 4, drop_last=True)
    assert [b[1].numpy().tolist() for b in DataLoader(ds, batch_sampler=sampler)] == [[0, 1, 4, 9]]
    weighted = WeightedRandomSampler([0.0, 1.0, 0.0], 6, generator=np.random.default_rng(0))
    assert list(weighted) == [1] * 6


def test_dict_and_string_fields_collate_as_in_pytorch():
    class Named(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": np.full(2, i, dtype=np.float32), "name": f"n{i}"}

    (batch,) = list(DataLoader(Named(), batch_size=3, num_workers=1))
    assert batch["x"].shape == (3, 2) and batch["name"] == ["n0", "n1", "n2"]


@pytest.mark.parametrize("kwargs", [
    {"num_workers": -1}, {"num_workers": 1.5}, {"prefetch_factor": 2},
    {"persistent_workers": True}, {"num_workers": 1, "prefetch_factor": 0},
    {"timeout": -1}, {"batch_size": 0}, {"shuffle": True, "sampler": [0, 1]},
])
def test_bad_arguments_are_refused_by_name(kwargs):
    with pytest.raises(ArgumentError, match="DataLoader"):
        DataLoader(Squares(4), **kwargs)
