"""The numpy reference interpreter: runs a module's `main` on numpy arrays.

It is the oracle every build is compared with, so it is deliberately plain:
each op's registered numpy reference, applied node by node in graph order
(iterative, memoized). Partitioned modules run too: a call of a GlobalVar runs
that global function, a call of a Function (a composite) runs its body.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TensorType, Type
from ..ir.visitor import post_order
from ..op.registry import get_op_def
from ..transform.infer_type import infer_type


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, tuple):
        out: list[np.ndarray] = []
        for field in value:
            out.extend(_flatten(field))
        return out
    return [value]


def _check_against_type(value: Any, ty: Type | None, what: str) -> None:
    """Catch an op reference that disagrees with the op's own type inference (a bug in the op)."""
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray) or value.shape != ty.shape or str(value.dtype) != ty.dtype:
            got = f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
            raise AssertionError(f"reference of {what} produced {got}, its type is {ty}")


def _bind_inputs(func: Function, inputs: Mapping[str, Any] | Sequence[Any]) -> list[np.ndarray]:
    """The arrays for `func`'s params, checked against their annotations."""
    params = func.params
    names = [p.name_hint for p in params]
    if isinstance(inputs, np.ndarray):      # iterating it would bind its rows to the parameters
        raise ValueError(f"inputs must be a list of arrays in parameter order ({', '.join(names)}) or a dict "
                         "by name, not one array; wrap it: run_reference(mod, [x])")
    if isinstance(inputs, Mapping):
        if len(set(names)) != len(names):
            raise ValueError("main has several parameters with the same name; pass the inputs as a list in "
                             f"parameter order ({', '.join(names)})")
        missing = [n for n in names if n not in inputs]
        extra = [n for n in inputs if n not in names]
        if missing:
            raise ValueError(f"missing input {missing[0]!r}; main takes {', '.join(names)}")
        if extra:
            raise ValueError(f"unknown input {extra[0]!r}; main takes {', '.join(names)}")
        values = [inputs[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(params):
            raise ValueError(f"main takes {len(params)} inputs ({', '.join(names)}), got {len(values)}")
    out = []
    for param, value in zip(params, values):
        ty = param.type_annotation
        if not isinstance(value, np.ndarray):
            value = np.asarray(value, dtype=ty.dtype if isinstance(ty, TensorType) else None)
        if isinstance(ty, TensorType) and (value.shape != ty.shape or str(value.dtype) != ty.dtype):
            raise ValueError(f"input {param.name_hint!r}: expected {ty.dtype} of shape {ty.shape}, "
                             f"given {value.dtype} of shape {value.shape}")
        out.append(value)
    return out


def _operands(node) -> list:
    cls = type(node)
    if cls is Call:
        return list(node.args)
    if cls is Tuple:
        return list(node.fields)
    if cls is TupleGetItem:
        return [node.tuple_value]
    return []


def use_counts(order: list) -> dict[int, int]:
    """How many operand slots of the nodes in `order` (a post order) read each node, by id."""
    counts: dict[int, int] = {}
    for node in order:
        for operand in _operands(node):
            counts[id(operand)] = counts.get(id(operand), 0) + 1
    return counts


def release_operands(node, users: dict[int, int], envs: tuple, keep: int) -> None:
    """`node` ran: its operands lose one use each; one without users left (except `keep`, the result)
    leaves every dict of `envs`, so an interpreter holds only the values still to be read."""
    for operand in _operands(node):
        key = id(operand)
        users[key] -= 1
        if users[key] == 0 and key != keep:
            for env in envs:
                env.pop(key, None)


class _Interpreter:
    def __init__(self, mod: IRModule, overrides: Mapping[int, Any] | None = None):
        self.mod = mod
        self.overrides = overrides or {}

    def run(self, func: Function, args: list[Any], where: str, env: dict | None = None) -> Any:
        """The value of `func` on `args`; `env`, when given, is filled with every node's value by id.
        Without it a value is dropped once its last user ran (only live values are held)."""
        order = post_order(func.body)
        users = use_counts(order) if env is None else None
        if env is None:
            env = {}
        env.update({id(p): a for p, a in zip(func.params, args)})
        for node in order:
            if id(node) in env:
                continue
            cls = type(node)
            if cls is Call:
                value = self.call(node, [env[id(a)] for a in node.args], where)
            elif cls is Constant:
                value = node.data
            elif cls is Tuple:
                value = tuple(env[id(f)] for f in node.fields)
            elif cls is TupleGetItem:
                value = env[id(node.tuple_value)][node.index]
            elif cls is Function:
                continue  # a composite: run when its call is reached
            elif cls is Var:
                raise ValueError(f"%{node.name_hint} is free in {where}: it is not a parameter")
            else:
                raise ValueError(f"cannot evaluate a {cls.__name__} in {where}")
            env[id(node)] = value
            if users is not None:
                release_operands(node, users, (env,), keep=id(func.body))
        return env[id(func.body)]

    def call(self, call: Call, args: list[Any], where: str) -> Any:
        target = call.op
        if isinstance(target, Op):
            ref = get_op_def(target.name).ref
            override = self.overrides.get(id(call))
            value = override(args, call.attrs, ref) if override else ref(args, call.attrs)
            if isinstance(value, tuple):
                value = tuple(np.asarray(v) for v in value)
            else:
                value = np.asarray(value)
            _check_against_type(value, call.checked_type, f"{target.name} in {where}")
            return value
        if isinstance(target, GlobalVar):
            return self.run(self.mod[target], args, f"@{target.name_hint}")
        if isinstance(target, Function):
            return self.run(target, args, f"{target.attrs.get('Composite', 'fn')} in {where}")
        raise ValueError(f"cannot call a {type(target).__name__} in {where}")


def run_reference(mod: IRModule | Function, inputs: Mapping[str, Any] | Sequence[Any],
                  overrides: Mapping[Call, Any] | None = None) -> list[np.ndarray]:
    """Outputs of `mod["main"]` on `inputs` (by parameter name, or a list in parameter order).

    Tuple outputs are flattened in order. The module is type-checked first, so
    a malformed model fails with InferType's message rather than a numpy error.
    overrides -- call node -> fn(args, attrs, ref) computing that call instead of its op's reference
    (what a kernel with a known defect would give: the tolerance tests inject bugs this way).
    """
    if isinstance(mod, Function):
        mod = IRModule({"main": mod})
    mod = infer_type(mod)
    main = mod["main"]
    args = _bind_inputs(main, inputs)
    by_id = {id(call): fn for call, fn in (overrides or {}).items()}
    return _flatten(_Interpreter(mod, by_id).run(main, args, "@main"))


def node_values(mod: IRModule | Function, inputs: Mapping[str, Any] | Sequence[Any],
                func_name: str = "main") -> tuple[Function, dict[int, Any]]:
    """Every node's value in `mod[func_name]` (type-checked first) on `inputs`, by id(node).

    Returns the type-checked function whose nodes the ids refer to. Values of calls inside other
    functions (regions, composites) are not included: run those functions with node_values too.
    Tuple-valued nodes hold tuples."""
    if isinstance(mod, Function):
        mod = IRModule({"main": mod})
    mod = infer_type(mod)
    func = mod[func_name]
    env: dict[int, Any] = {}
    _Interpreter(mod).run(func, _bind_inputs(func, inputs), f"@{func_name}", env)
    return func, env
