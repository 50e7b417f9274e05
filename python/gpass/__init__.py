# SPDX-License-Identifier: Apache-2.0
"""gpass: import, optimize, infer and run deep-learning computation graphs.

    import gpass, numpy as np
    g = gpass.load("model.onnx")                 # ONNX, TensorFlow GraphDef (.pb/.pbtxt), text IR (.gir)
    gpass.optimize(g, level=2, inplace=True)     # or passes="fold-constants,cse,dce"
    out = gpass.run(g, {"x": np.ones((1, 3), np.float32)})   # {output name: array}
    g.save("model.opt.onnx")
    print(g)                                     # text IR

Arrays cross without a copy where their layout allows (C-contiguous, aligned, a numeric
dtype); results are NumPy arrays over the executor's own buffers. Errors are `gpass.Error`
(a RuntimeError) whose message names the node, op and pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Union
import os

import numpy as np

from . import _gpass
from ._gpass import Error

__version__: str = _gpass.__version__
#: Whether this module was built with the cuda component (``Session(gpus=N)``).
cuda_available: bool = bool(_gpass.cuda_available)


def cuda_device_count() -> int:
    """The GPUs this process sees (0 where the module has no cuda component)."""
    return int(_gpass.cuda_device_count())

__all__ = [
    "Error", "Graph", "Session", "TensorInfo", "OptimizeReport", "CheckResult", "load", "parse", "optimize",
    "infer_shapes", "run", "check", "list_passes", "read_tensor", "random_inputs", "cuda_available",
    "cuda_device_count", "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]

# gpass dtype names -> NumPy dtypes (bf16 is fed as uint16 bit patterns: NumPy has no bfloat16)
_NUMPY_DTYPES: Dict[str, Any] = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
    "bf16": np.uint16, "f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128,
    "str": np.object_,
}


class TensorInfo(NamedTuple):
    """A graph input: its name, gpass dtype name (``"f32"``, ``"i64"``...), shape (ints,
    symbol names as str, None for unknown dims; None when the rank is unknown) and whether it
    has a default value (an ONNX initializer that is also an input) and may be left unfed."""

    name: str
    dtype: str
    shape: Optional[List[Union[int, str, None]]]
    has_default: bool = False

    @property
    def numpy_dtype(self) -> Optional[np.dtype]:
        """The NumPy dtype that feeds this input (None when gpass knows none)."""
        t = _NUMPY_DTYPES.get(self.dtype)
        return None if t is None else np.dtype(t)


@dataclass
class OptimizeReport:
    """What a pipeline reported: pass statistics and diagnostics (severity, pass, node, message)."""

    statistics: Dict[str, int] = field(default_factory=dict)
    diagnostics: List[tuple] = field(default_factory=list)


class Graph:
    """A gpass graph. Passes and shape inference change it in place; `copy()` makes an
    independent one. `str(g)` is its text IR."""

    __slots__ = ("_g",)

    def __init__(self, handle: "_gpass.Graph") -> None:
        self._g = handle

    # -- reading and writing --
    @classmethod
    def load(cls, path: PathLike, format: Optional[str] = None, *, feeds: Sequence[str] = (),
             fetches: Sequence[str] = (), targets: Sequence[str] = (), signature: str = "serving_default",
             tags: Sequence[str] = ("serve",)) -> "Graph":
        """See `gpass.load`."""
        return cls(_gpass.Graph.load(os.fspath(path), format or "", list(feeds), list(fetches), list(targets),
                                     signature, list(tags)))

    @classmethod
    def parse(cls, text: str, source: str = "<string>") -> "Graph":
        """A graph from its text IR."""
        return cls(_gpass.Graph.parse(text, source))

    def save(self, path: PathLike, format: Optional[str] = None) -> None:
        """Writes the graph: ONNX for ``.onnx`` paths (or format="onnx"), text IR otherwise."""
        self._g.save(os.fspath(path), format or "")

    def text(self, elide_large_constants: bool = False) -> str:
        """The text IR; with `elide_large_constants`, tensors of over 64 elements are elided
        (for reading; such text does not parse back to the same graph)."""
        return self._g.text(64 if elide_large_constants else -1)

    def __str__(self) -> str:
        return self._g.text(-1)

    def __repr__(self) -> str:
        ins = ", ".join(i.name for i in self.inputs)
        outs = ", ".join(self.outputs)
        return f"<gpass.Graph: {self._g.num_nodes} nodes, inputs ({ins}), outputs ({outs})>"

    # -- what it is --
    @property
    def inputs(self) -> List[TensorInfo]:
        """The inputs, in order, with their declared types."""
        return [TensorInfo(n, d, s, h) for n, d, s, h in self._g.inputs]

    @property
    def outputs(self) -> List[str]:
        """The output names."""
        return list(self._g.outputs)

    @property
    def num_nodes(self) -> int:
        return self._g.num_nodes

    def op_counts(self) -> Dict[str, int]:
        """Nodes per op type (``domain::op`` outside the default domain), functions included."""
        return dict(self._g.op_counts())

    def copy(self) -> "Graph":
        return Graph(self._g.copy())

    def __copy__(self) -> "Graph":
        return self.copy()

    def __deepcopy__(self, memo: Any) -> "Graph":
        return self.copy()

    # -- passes --
    def optimize(self, level: int = 2, passes: Optional[str] = None, verify_each: bool = False) -> OptimizeReport:
        """Runs the `O<level>` pipeline (0: none), then `passes` (a pipeline such as
        ``"fold-constants,cse,dce"``), in place."""
        stats, diags = self._g.optimize(passes or "", int(level), bool(verify_each))
        return OptimizeReport(dict(stats), [tuple(d) for d in diags])

    def infer_shapes(self) -> "Graph":
        """Infers element types and (symbolic) shapes in place; returns self."""
        self._g.infer_shapes()
        return self

    def verify(self) -> None:
        """Checks the graph (edges, op schemas, types); raises gpass.Error naming the node."""
        self._g.verify()

    # -- running --
    def run(self, feeds: Mapping[str, Any], threads: int = 1) -> Dict[str, Any]:
        """See `gpass.run`."""
        return self._g.run(feeds if type(feeds) is dict else dict(feeds), threads)

    def plan_stats(self, threads: int = 1) -> Dict[str, int]:
        """The compiled plan's figures: steps, pruned nodes, planned buffers and peak bytes."""
        return dict(self._g.plan_stats(int(threads)))


def load(path: PathLike, format: Optional[str] = None, *, feeds: Sequence[str] = (), fetches: Sequence[str] = (),
         targets: Sequence[str] = (), signature: str = "serving_default", tags: Sequence[str] = ("serve",)) -> Graph:
    """Reads a graph: ONNX (``.onnx``; ``.pb`` holding a ModelProto), TensorFlow GraphDef
    (``.pb`` binary, ``.pbtxt`` text), a TensorFlow SavedModel (a directory) or text IR
    (anything else); `format` ("onnx", "tf", "saved_model", "gir") overrides the guess. For a
    GraphDef, `feeds`/`fetches`/`targets` (TensorFlow tensor names ``node:port``) bind one
    Session.run signature: feeds become the graph's inputs and fetches its outputs, as `run`
    needs. A SavedModel is read with its variables (the checkpoint in ``variables/``), bound
    to `signature` of the MetaGraphDef tagged `tags` (inputs and outputs named by the
    signature's keys) and run through ``tf-frontend``: ready to run."""
    return Graph.load(path, format, feeds=feeds, fetches=fetches, targets=targets, signature=signature, tags=tags)


def parse(text: str) -> Graph:
    """A graph from text IR."""
    return Graph.parse(text)


def optimize(g: Graph, level: int = 2, passes: Optional[str] = None, *, inplace: bool = False,
             verify_each: bool = False) -> Graph:
    """The optimized graph: the `O<level>` pipeline, then `passes`. -O1: cleanup (constant
    and shape folding, identities, CSE, DCE); -O2: standard-ONNX rewrites (batch norms folded,
    MatMul+Add to Gemm...); -O3: gpass's fused ops. A copy unless `inplace`."""
    target = g if inplace else g.copy()
    target.optimize(level, passes, verify_each)
    return target


def infer_shapes(g: Graph) -> Graph:
    """Infers types and symbolic shapes of `g` in place; returns `g`."""
    return g.infer_shapes()


def run(g: Graph, feeds: Mapping[str, Any], threads: int = 1) -> Dict[str, Any]:
    """Runs `g` on the Eigen CPU executor: `feeds` maps input names to arrays (anything
    `numpy.asarray` takes; ndarrays are shared, not copied, when C-contiguous), the result
    maps output names to NumPy arrays (a list for a sequence, None for an absent optional).
    The graph is compiled on the first call and again only after it changes."""
    return g.run(feeds, threads)


class Session:
    """A gpass session (TensorFlow's DirectSession): the graph placed on `devices` CPU
    devices, and first on up to `gpus` GPUs where the module has the cuda component
    (`cuda_available`; a machine without a GPU has the CPU devices alone), partitioned, one
    executor per device; signatures compiled on first use. `allow_tf32` lets the GPUs'
    products and convolutions use TF32."""

    def __init__(self, g: Graph, devices: int = 1, *, threads: int = 1, place: str = "first",
                 allow_soft_placement: bool = False, log_device_placement: bool = False,
                 passes: Optional[str] = None, gpus: int = 0, allow_tf32: bool = False) -> None:
        self._s = _gpass.Session(g._g, int(devices), int(threads), place, bool(allow_soft_placement),
                                 bool(log_device_placement), passes or "", int(gpus), bool(allow_tf32))

    def run(self, fetches: Union[str, Sequence[str], None] = None, feeds: Optional[Mapping[str, Any]] = None,
            targets: Sequence[str] = ()) -> Any:
        """Fetches by name (``node:port`` tensors, ONNX output names); one name gives one
        result, a list gives a list; None fetches every graph output and gives a dict.
        `targets` are nodes run for their effects (a training op)."""
        feeds = dict(feeds or {})
        if fetches is None:
            names = list(self._s.outputs)
            return dict(zip(names, self._s.run(names, feeds, list(targets))))
        if isinstance(fetches, str):
            return self._s.run([fetches], feeds, list(targets))[0]
        return self._s.run(list(fetches), feeds, list(targets))

    @property
    def devices(self) -> List[str]:
        return list(self._s.devices)

    def placement(self) -> Dict[str, str]:
        """The device of each node of the last signature compiled."""
        return dict(self._s.placement())

    def compilations(self) -> int:
        return self._s.compilations()


def list_passes() -> List[tuple]:
    """(name, description, option descriptions) of every registered pass and pipeline."""
    return [(n, d, list(o)) for n, d, o in _gpass.list_passes()]


def read_tensor(path: PathLike, format: str = "onnx") -> np.ndarray:
    """A serialized TensorProto (ONNX's, or TensorFlow's with format="tf") as an array."""
    return _gpass.read_tensor(os.fspath(path), format)


def random_inputs(g: Graph, seed: int = 0) -> Dict[str, np.ndarray]:
    """Seeded random feeds for every input without a default (unknown dims become 1):
    floats uniform in [-1, 1), integers in [0, 10), booleans fair."""
    rng = np.random.default_rng(seed)
    feeds: Dict[str, np.ndarray] = {}
    for info in g.inputs:
        if info.has_default:
            continue
        if info.shape is None or info.dtype not in _NUMPY_DTYPES or info.dtype in ("str", "bf16"):
            raise Error(f"random_inputs: input '{info.name}' has type {info.dtype} {info.shape}: "
                        "no random value for it (feed it yourself)")
        dims = [d if isinstance(d, int) else 1 for d in info.shape]
        t = np.dtype(_NUMPY_DTYPES[info.dtype])
        if t.kind == "f" or t.kind == "c":
            feeds[info.name] = rng.uniform(-1.0, 1.0, dims).astype(t)
        elif t.kind == "b":
            feeds[info.name] = rng.integers(0, 2, dims).astype(t)
        else:
            feeds[info.name] = rng.integers(0, 10, dims).astype(t)
    return feeds


@dataclass
class CheckResult:
    """`check`'s verdict: runs made, the largest difference and where, and whether every
    output matched within tolerance."""

    runs: int
    max_abs_diff: float
    where: str
    ok: bool


def check(original: Graph, optimized: Graph, runs: int = 3, seed: int = 0, rtol: float = 1e-4,
          atol: float = 1e-4) -> CheckResult:
    """Runs both graphs on `runs` seeded random inputs and compares their outputs (NaN
    matches NaN; integers exactly), as onnxsim's --check does."""
    if [i.name for i in original.inputs] != [i.name for i in optimized.inputs] or \
            len(original.outputs) != len(optimized.outputs):
        raise Error("check: the optimized graph's inputs or outputs differ from the original's")
    worst, where, ok = 0.0, "-", True
    for r in range(runs):
        feeds = random_inputs(original, seed + r)
        a = original.run(feeds)
        b = optimized.run(feeds)
        for (name, x), y in zip(a.items(), b.values()):
            x, y = np.asarray(x), np.asarray(y)
            if x.shape != y.shape or x.dtype != y.dtype:
                return CheckResult(r + 1, float("inf"), f"output '{name}', run {r}", False)
            if x.dtype.kind in "fc":
                d = float(np.nanmax(np.abs(x - y), initial=0.0)) if x.size else 0.0
                fine = bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))
            elif x.dtype.kind in "OUS":
                d, fine = 0.0, bool(np.array_equal(x, y))
            else:
                d = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)), initial=0.0)) if x.size else 0.0
                fine = d == 0.0
            if d > worst or (not fine and ok):
                worst, where = max(worst, d), f"output '{name}', run {r}"
            ok = ok and fine
    return CheckResult(runs, worst, where, ok)
