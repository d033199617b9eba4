"""Session: runs fetches of a static graph with feeds, through a cached Program per fetch set."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..backends import for_device_type
from ..compiler import build_program
from ..core.validation import check_choice
from ..devices.device import device as as_device
from ..errors import DongjingError, FeedError, GraphError, IndexOutOfRangeError
from ..graph import builder
from ..graph.graph import Graph, Node
from ..tensor import Tensor
from . import feeds, interpreter, partitioned, pipelined, placement
from .auto_distribute import AutoDistribute
from .check_numerics import checked_program
from .fetch_structure import flatten, identified, rebuilder, run_key
from .runner import Runner

if TYPE_CHECKING:
    from ..distributed.cost_model import CostModel
    from ..types import DeviceLike

_CACHE_LIMIT = 256  # cached runners (and programs) per session before the cache starts over


def _index_error(exc: IndexError, runner: Runner) -> IndexOutOfRangeError:
    """The error for an index that was valid when the graph was built but not at run time."""
    fed = [spec[1].name for spec in runner.feeds if spec[2].kind in "iu"]
    hint = f" (integer feeds: {', '.join(map(repr, fed))})" if fed else ""
    return IndexOutOfRangeError(f"Session.run: an index is out of range at run time{hint}: {exc}")


class Session:
    """Runs a graph: `sess.run(fetches, feed_dict)` returns NumPy values shaped like `fetches`.

    `optimize`: 0 runs the plain interpreter; 1 (cleanup) and 2 (all passes) compile with
    `dongjing.compiler` (`build_program`). Programs are cached per fetch set and graph
    version. Also a context manager (`with dj.Session(g) as sess:`).

    `check_numerics=True` runs the graph node by node, unoptimized, and raises
    `dj.AnomalyError` at the first node whose output holds NaN or inf, naming the node, its
    inputs' shapes and ranges, and the line that built it (slow: for debugging).

    One Session may be run from many threads at once: each run owns its intermediate buffers
    (docs/debugging.md, "Threads").

    Programs run where the graph's Variables live (a GPU when they were created with
    ``device="cuda"``), else where the feeds live; fetched values come back as arrays of that
    device. `device=` fixes the device instead (host feeds are copied to it). See
    docs/backends.md.

    `distribute="auto"` lets the planner choose, at the first run of each set of fetches, how
    the graph runs over the MPI world (data parallel, a pipeline of stages, or replicated),
    from a cost model (`cost_model=`, a `dj.distributed.CostModel`; measured when not given)
    and a memory limit per rank (`max_memory=`, bytes or e.g. "64 MiB"); `session.plan` is the
    plan of the latest run. See docs/distributed.md.

    `pipeline_chunks=M` runs each step in M micro-batches: the rows fed to the batch inputs
    (placeholders whose first dim is None) split M ways, every rank running the forward and
    backward of each micro-batch of its stage (a graph placed with `dj.device("rank:N")`) in
    the order of `pipeline_schedule` ("gpipe", the default, or "1f1b"), the gradients summed
    over the micro-batches and the update applied once; losses must be means over the rows.
    With `distribute="auto"` they fix the chunks and schedule of a pipeline plan (else the
    planner chooses them). Unplaced, or in one process, it is gradient accumulation.
    """

    def __init__(self, graph: Graph | None = None, optimize: int = 2,
                 check_numerics: bool = False, device: DeviceLike | None = None,
                 distribute: str | None = None, max_memory: float | str | None = None,
                 cost_model: CostModel | None = None, pipeline_chunks: int | None = None,
                 pipeline_schedule: str | None = None) -> None:
        graph = graph if graph is not None else builder.get_default_graph()
        if graph is None:
            raise GraphError("dj.Session needs a graph: dj.Session(g), or create it inside "
                             "`with g.as_default():`")
        self.graph = graph
        self.optimize = check_choice("dj.Session", "optimize", optimize, (0, 1, 2))
        self.check_numerics = bool(check_numerics)
        self._programs: dict = {}
        self._runs: dict = {}  # run_key(fetches, feed_dict) -> Runner
        self._closed = False
        self.device = None if device is None else _placement_of(device)
        check_choice("dj.Session", "distribute", distribute, (None, "auto"))
        if distribute is None and (max_memory is not None or cost_model is not None):
            raise DongjingError("dj.Session: max_memory= and cost_model= plan a distributed "
                                "run; pass distribute='auto' with them")
        if pipeline_chunks is not None and (isinstance(pipeline_chunks, bool) or not isinstance(
                pipeline_chunks, int) or pipeline_chunks < 1):
            raise DongjingError(f"dj.Session: pipeline_chunks must be a positive integer (the "
                                f"micro-batches per step), got {pipeline_chunks!r}")
        check_choice("dj.Session", "pipeline_schedule", pipeline_schedule,
                     (None, "gpipe", "1f1b"))
        self.pipeline_chunks, self.pipeline_schedule = pipeline_chunks, pipeline_schedule
        self._auto = (None if distribute is None
                      else AutoDistribute(self, max_memory, cost_model))

    @property
    def plan(self):
        """The distribution plan of the latest run (`distribute="auto"`; None before a run
        or without it): print it, or draw it with `dj.viz.render(session.plan, "plan.svg")`."""
        return None if self._auto is None else self._auto.plan

    # --- context manager ---------------------------------------------------------------------
    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """Drop the compiled programs; the session cannot run afterwards."""
        self._programs.clear()
        self._runs.clear()
        self._closed = True

    # --- running -----------------------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None) -> Any:
        """Compute `fetches` (a tensor, Variable, op, or a list/tuple/dict nest of them).

        Fetched assign/group ops give None, Variables their value. Assignments commit together
        at the end of a successful run.
        """
        if self._closed:
            raise GraphError("this Session is closed")
        key = run_key(fetches, feed_dict)
        if self._auto is not None:  # the planner's choice, made at the first run of `key`
            handled, values = self._auto.run(fetches, feed_dict, key, Session)
            if handled:
                return values
        elif self.pipeline_chunks is not None:  # micro-batches, where the fetches read rows
            runner = self._runs.get(key)
            if runner is None or runner.version != self.graph.version:
                runner = None
                if pipelined.reads_batch(self, fetches):
                    runner = self._runs[key] = pipelined.MicroBatchedRun(
                        self, fetches, feed_dict, Session, self.pipeline_chunks,
                        self.pipeline_schedule or "gpipe")
            if isinstance(runner, pipelined.MicroBatchedRun):
                return runner(feed_dict)
        if self._auto is None and partitioned.placed(self):  # nodes on ranks: its partition
            runner = self._runs.get(key)
            if not isinstance(runner, partitioned.PartitionedRun) or (
                    runner.version != self.graph.version):
                runner = self._runs[key] = partitioned.PartitionedRun(
                    self, fetches, feed_dict, Session)
            return runner(feed_dict)
        runner = self._runs.get(key)
        if runner is None or runner.version != self.graph.version:
            runner = self._prepare(fetches, feed_dict, key)
        elif runner.floating and runner.where.backend is not None and (
                (_feeds_placement(feed_dict) or placement.CPU) != runner.where):
            runner = self._prepare(fetches, feed_dict, key)  # host feeds now: back to the CPU
        try:
            return runner(feed_dict)
        except IndexError as exc:
            if isinstance(exc, DongjingError):
                raise
            raise _index_error(exc, runner).with_traceback(exc.__traceback__) from None
        except placement.DeviceFeedError:  # a device feed: run there if no Variable objects
            if self.device is not None or self._state_of(runner) is not None:
                raise
        except (TypeError, ValueError, AttributeError):  # state moved to a device since?
            if self._where(runner, feed_dict) == runner.where:
                raise
        return self._prepare(fetches, feed_dict, key)(feed_dict)

    def _state_of(self, runner):
        return placement.of_state(runner.program.graph.nodes, "Session.run")

    def _where(self, runner, feed_dict) -> placement.Placement:
        """Where a run of `runner`'s fetches would be placed now."""
        if self.device is not None:
            return self.device
        return placement.decide(self._state_of(runner), _feeds_placement(feed_dict),
                                "Session.run")

    def _prepare(self, fetches, feed_dict, key) -> Runner:
        """Resolve fetches and feed keys, plan and compile (or find) the program; cache a Runner.

        Raises the fetch / feed-key / missing-placeholder errors; feed values are checked later.
        """
        leaves: list = []
        rebuild = rebuilder(fetches, leaves)
        fetch_nodes = [self._fetch_node(f) for f in leaves]
        positions: dict = {}  # fed node -> position of its (last) value in feed_dict
        for i, k in enumerate(feed_dict or ()):
            positions[feeds.resolve_key(self.graph, k)] = i
        feed_nodes, missing = self._plan(fetch_nodes, positions)
        if missing:
            raise FeedError(feeds.missing_message(missing))
        unused = [n for n in positions if n not in feed_nodes]
        needed = interpreter.needed_nodes(fetch_nodes, set(feed_nodes))
        state = placement.of_state(needed, "Session.run")
        if self.device is not None:
            where = placement.decide(state, self.device, "Session.run")
        else:
            where = placement.decide(state, _feeds_placement(feed_dict), "Session.run")
        program = self._program(fetch_nodes, feed_nodes, where)
        if len(self._runs) >= _CACHE_LIMIT:  # fetch structures that keep changing
            self._runs.clear()
        keep = identified(fetches, list(feed_dict or ()))
        runner = Runner(self.graph.version, program, feed_nodes, unused, positions, rebuild, keep,
                        where)
        runner.floating = state is None and self.device is None
        self._runs[key] = runner
        return runner

    def _fetch_node(self, fetch):
        if isinstance(fetch, Tensor):
            if fetch._node is None:
                return builder.to_node(self.graph, fetch)  # a Variable or captured tensor
            if fetch._node.graph is not self.graph:
                raise GraphError(f"fetch {fetch._node.name!r} belongs to graph "
                                 f"{fetch._node.graph.name!r}, not this session's graph")
            return fetch._node
        if isinstance(fetch, Node) and fetch.graph is self.graph:
            return fetch
        if isinstance(fetch, str):
            return self.graph.get_node(fetch[:-2] if fetch.endswith(":0") else fetch)
        raise GraphError(f"cannot fetch {fetch!r}: fetches are tensors of the graph, "
                         "Variables, ops, or node names")

    def _plan(self, fetch_nodes, fed: dict):
        """(fed nodes the fetches need, in graph order; placeholders they need but lack)."""
        needed = interpreter.needed_nodes(fetch_nodes, set(fed))
        feed_nodes = [n for n in needed if n in fed]
        missing = [n for n in needed if n.op.name == "placeholder" and n not in fed]
        return feed_nodes, missing

    def _program(self, fetch_nodes, feed_nodes, where: placement.Placement | None = None):
        """The (cached) program computing `fetch_nodes` from `feed_nodes` on device `where`
        (the session's device, else the CPU, when None)."""
        where = where or self.device or placement.CPU
        key = (self.graph.version, tuple(n.id for n in fetch_nodes),
               tuple(n.id for n in feed_nodes), where)
        program = self._programs.get(key)
        if program is None:
            builder = build_program if self.optimize >= 1 else None
            backend = where.backend
            if self.check_numerics:
                if backend is not None:
                    raise DongjingError(f"check_numerics runs graphs on the CPU; this one is "
                                        f"placed on {where}")

                program = checked_program(self.graph, fetch_nodes, feed_nodes)
            elif builder is None:
                program = interpreter.build_interpreter(self.graph, fetch_nodes, feed_nodes,
                                                        backend)
            else:
                program = builder(self.graph, fetch_nodes, feed_nodes, self.optimize,
                                  backend=backend)
            if len(self._programs) >= _CACHE_LIMIT:  # a graph that keeps growing between runs
                self._programs.clear()
            self._programs[key] = program
        return program

    # --- inspecting ----------------------------------------------------------------------------
    def program(self, fetches: Any) -> Any:
        """The Program (graph/program.py) for `fetches`: called with one array per placeholder
        the fetches need, in the order `interpreter.needed_nodes` finds them, and without
        Session.run's feed checks, for callers that guarantee valid feeds (dj.jit)."""
        return self._program_for(fetches)

    def _program_for(self, fetches):
        leaves: list = []
        flatten(fetches, leaves)
        fetch_nodes = [self._fetch_node(f) for f in leaves]
        needed = interpreter.needed_nodes(fetch_nodes, set())
        placeholders = [n for n in needed if n.op.name == "placeholder"]
        where = self.device or placement.of_state(needed, "Session.program")  # GPU Variables
        return self._program(fetch_nodes, placeholders, where)

    def optimized_graph(self, fetches: Any) -> Graph:
        """The graph that runs for `fetches` (after the compiler's passes)."""
        return self._program_for(fetches).graph

    def source(self, fetches: Any) -> str | None:
        """The generated Python source for `fetches` (None under the plain interpreter)."""
        return self._program_for(fetches).source

    def stats(self, fetches: Any) -> list[dict[str, Any]]:
        """What each compiler pass changed for `fetches` (a list of dicts; [] if none ran)."""
        return self._program_for(fetches).stats


def _feeds_placement(feed_dict) -> placement.Placement | None:
    """The device the feed values live on (None: the host)."""
    if not feed_dict:
        return None

    values = [v._data if isinstance(v, Tensor) and v._node is None else v
              for v in feed_dict.values()]
    return placement.of_arrays(values, "Session.run")


def _placement_of(device) -> placement.Placement:
    """A `Session(device=...)` argument ("cpu", "cuda", "cuda:1", a dj.device) as a
    Placement."""
    if isinstance(device, placement.Placement):
        return device
    d = as_device(device)
    if d.type == "cpu":
        return placement.CPU
    backend = for_device_type(d.type)
    if backend is None:
        raise DongjingError(f"Session(device={str(d)!r}): no backend for {d.type!r}")
    index = d.index if d.index is not None else backend.current_index()
    return placement.Placement(backend, index)
