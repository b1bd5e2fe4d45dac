"""What a step of a build computes, in the words of the model: reference values and node names.

A build runs a list of steps (BuildResult.program.steps): host kernels and regions' functions.
For each step this module gives

  - its reference outputs: the numpy reference interpreter run on the build's own (partitioned)
    module, whose steps are nodes of `main`; partitioning keeps the values of the unpartitioned
    model (same ops, same numpy references), which `check_partition_kept_values` verifies;
  - the node(s) of the UNPARTITIONED model it stands for, found by value: every node of the
    unpartitioned model is fingerprinted (dtype, shape, bytes of its reference value) and a step
    output is the node with the same fingerprint. Passes that change arithmetic (FoldBatchNorm
    folds a batch norm into the conv before it) leave values equal only up to rounding: then the
    node of the same dtype and shape whose value is closest, within the check's tolerance, is it. Names are those of the model's text form
    (`mod.astext()`: `%0, %1, ...` in graph order, `%x` for inputs, `result` for main's body).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from ..ir.visitor import post_order
from ..testing.error_bound import node_errors
from ..testing.reference import node_values
from ..testing.tolerance import allowed_error
from .error import error_of


def flatten_value(value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [a for v in value for a in flatten_value(v)]
    return [np.asarray(value)]


def value_names(func: Function) -> dict[int, str]:
    """id(node) -> its name in `astext()` of a module with this function (the printer's numbering)."""
    names = {id(p): f"%{p.name_hint}" for p in func.params}
    counter = 0
    for node in post_order(func.body):
        if id(node) in names or not isinstance(node, (Call, Tuple, TupleGetItem, Function)):
            continue
        if node is func.body:
            break
        names[id(node)] = f"%{counter}"
        counter += 1
    names.setdefault(id(func.body), "result")
    return names


def describe_call(call: Call) -> str:
    """`nn.conv2d`, or a composite's name with its ops: `ccompiler.conv2d_bias_relu(nn.conv2d+nn.bias_add+...)`."""
    if isinstance(call.op, Op):
        return call.op.name
    if isinstance(call.op, Function):
        name = str(call.op.attrs.get("Composite", "fn"))
        ops = [n.op.name for n in post_order(call.op.body) if isinstance(n, Call) and isinstance(n.op, Op)]
        return f"{name}({'+'.join(ops)})"
    if isinstance(call.op, GlobalVar):
        return f"@{call.op.name_hint}"
    return type(call.op).__name__


def fingerprint(arr: np.ndarray) -> tuple:
    a = np.ascontiguousarray(arr)
    return (a.dtype.str, a.shape, hashlib.blake2b(a.tobytes(), digest_size=16).hexdigest())


@dataclass
class ModelNodes:
    """The unpartitioned model's nodes: names, ops and reference values, indexed by fingerprint."""
    func: Function
    env: dict
    names: dict
    by_print: dict                 # fingerprint -> [(name, op description)] in graph order
    by_name: dict = None           # name -> node
    by_shape: dict = None          # (dtype, shape) -> [(name, op description, value)] in graph order
    bounds: dict = None            # name -> (float64 value, error estimate, magnitude shadow) (testing/error_bound.py)

    @classmethod
    def of(cls, mod, inputs) -> "ModelNodes":
        func, env = node_values(mod, inputs)
        names = value_names(func)
        by_print: dict = {}
        by_shape: dict = {}
        for node in post_order(func.body):
            if isinstance(node, (Var, Constant)) or id(node) not in env:
                continue
            value = env[id(node)]
            if isinstance(value, tuple):
                continue
            what = describe_call(node) if isinstance(node, Call) else type(node).__name__
            by_print.setdefault(fingerprint(value), []).append((names.get(id(node), "?"), what))
            by_shape.setdefault((value.dtype.str, value.shape), []).append((names.get(id(node), "?"), what, value))
        by_name = {name: node for node in post_order(func.body) if (name := names.get(id(node)))}
        _, errors = node_errors(mod, inputs)
        bounds = {names[k]: v for k, v in errors.items() if k in names}
        return cls(func, env, names, by_print, by_name, by_shape, bounds)

    def error(self, got: np.ndarray, name: str, want32: np.ndarray):
        """error.Error of `got` as the value of node `name`: against its float64 reference with the
        check's allowance (testing.tolerance.allowed_error); rtol/atol against `want32` for unknown nodes."""
        bound = (self.bounds or {}).get(name)
        if bound is None or np.shape(bound[0]) != np.shape(got):
            return error_of(got, want32)
        value, error, magnitude = bound
        if np.asarray(got).dtype.kind != "f":
            return error_of(got, want32)          # integers are exact either way
        return error_of(got, value, allowed=allowed_error(error, magnitude, value))

    def chain(self, name: str, length: int) -> list[str]:
        """`name` and the nodes before it along first arguments: what a composite of `length` ops covers."""
        out = [name]
        node = self.by_name.get(name)
        while node is not None and len(out) < length and isinstance(node, Call) and node.args:
            node = node.args[0]
            if not isinstance(node, Call) or id(node) not in self.names:
                break
            out.append(self.names[id(node)])
        return out

    def name_of(self, value: np.ndarray, op: str | None = None) -> str:
        """The unpartitioned node computing `value` ('?' when none does); prefers a node of op `op`."""
        found = self.by_print.get(fingerprint(value), [])
        if not found:
            return self._closest(value, op)
        if op is not None:
            same = [n for n, w in found if w == op]
            if same:
                return same[-1]
        return found[-1][0]

    def _closest(self, value: np.ndarray, op: str | None) -> str:
        candidates = self.by_shape.get((value.dtype.str, value.shape), [])
        if op is not None and any(w == op for _, w, _ in candidates):
            candidates = [c for c in candidates if c[1] == op]
        best, best_margin = "?", 1.0
        for name, _, want in candidates:
            margin = error_of(value, want).margin
            if margin <= best_margin:
                best, best_margin = name, margin
        return best

    def outputs(self) -> list[np.ndarray]:
        return flatten_value(self.env[id(self.func.body)])


def step_references(lib, inputs) -> tuple[list[list[np.ndarray]], dict]:
    """Reference outputs of every step of `lib` (a BuildResult) on `inputs`, in step order, and the
    value of every node of the build's main by id (for step_inputs)."""
    _, env = node_values(lib.mod, inputs)
    return [flatten_value(env[id(step.call)]) for step in lib.program.steps], env


def step_inputs(lib, env, step) -> list[np.ndarray]:
    """Reference values of a step's inputs (its call's arguments, flattened), from node_values' env."""
    return [a for arg in step.call.args for a in flatten_value(env[id(arg)])]
