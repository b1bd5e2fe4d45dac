"""InferType: fill `checked_type` of every expression of every function of a module.

Parameters take their type annotation; op calls are typed by the op's
registered `infer`; calls of global functions by the callee's return type
(callees are inferred first); calls of composite Functions by typing the
composite's body with its parameters bound to the argument types. Errors name
the op, the argument, what was expected and found, and where the call is.

Iterative over each graph (post_order), so 100,000-node chains type-check.
"""
from __future__ import annotations

from ..errors import ByocError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.printer import _Printer
from ..ir.types import TupleType, Type
from ..ir.visitor import graph_order, post_order
from ..op.registry import OpError, OpTypeError, get_op_def
from ..op.typecheck import tensor_type, type_text


class TypeInferenceError(ByocError, TypeError):
    """A model whose types do not check; the message names the op, the argument and where.
    A ByocError: the tools print it as one message."""

    def __init__(self, message: str, op: str | None = None, argument: str | None = None,
                 expected: str | None = None, found: str | None = None, where: str | None = None):
        super().__init__(message)
        self.op, self.argument, self.expected, self.found, self.where = op, argument, expected, found, where


def _constant_type(node: Constant) -> Type:
    try:
        return tensor_type(node.data.shape, str(node.data.dtype))
    except ValueError as exc:
        raise TypeInferenceError(f"constant of shape {node.data.shape}: {exc}") from None


def _short(line: str, limit: int = 160) -> str:
    line = line.strip().rstrip(";")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _locate(call: Expr, fname: str, func: Function | None) -> str:
    """Where `call` is: its span when parsed from text, else its line in the printed function."""
    if call.span is not None:
        return f"at {call.span}"
    if func is not None:
        try:  # the printer numbers values the way the user sees them; any failure just loses detail
            printer = _Printer(False)
            printer._start_def()
            text = printer._function(f"def @{fname}", func, "")
            name = printer.names.get(id(call))
            lines = text.splitlines()
            if name is not None:
                for line in lines:
                    if line.strip().startswith(name + " = "):
                        return f"in @{fname}, at `{_short(line)}`"
            elif call is func.body and len(lines) >= 2:
                return f"in @{fname}, at `{_short(lines[-2])}` (the result)"
        except Exception:  # noqa: BLE001 - locating is best effort
            pass
    what = call.op.name if isinstance(call, Call) and isinstance(call.op, Op) else type(call).__name__
    return f"in @{fname}, at a {what} call"


def _inputs(node: Expr) -> tuple[Expr, ...]:
    """What a node's type is computed from (a composite call: its arguments; the body is its own)."""
    return node.args if type(node) is Call else node.children()


class _Inferer:
    def __init__(self, mod: IRModule):
        self.mod = mod
        self.ret_types: dict[str, Type] = {}
        self.in_progress: set[str] = set()
        self.op_entries: dict[Op, tuple] = {}

    # ---- module level -------------------------------------------------------------------------
    def function_type(self, name: str) -> Type:
        """The return type of global function `name`, inferring it on demand."""
        ty = self.ret_types.get(name)
        if ty is None:
            self.infer_global(name)
            ty = self.ret_types[name]
        return ty

    def infer_global(self, name: str) -> None:
        # Callees are typed on demand when their first call is reached; the depth of that
        # recursion is the depth of the call graph (main -> external functions), not of the dataflow.
        if name in self.in_progress:
            raise TypeInferenceError(f"@{name} calls itself (directly or through other functions); "
                                     "recursion is not supported")
        self.in_progress.add(name)
        func = self.mod[name]
        for param in func.params:
            if param.type_annotation is None:
                raise TypeInferenceError(
                    f"parameter %{param.name_hint} of @{name} has no type annotation; "
                    f"give it one, e.g. Var({param.name_hint!r}, TensorType(shape, 'float32'))")
        env = {id(p): p.type_annotation for p in func.params}
        ty = self.infer_body(func.body, env, name, func, graph_order(func.body))
        if func.ret_type is not None and func.ret_type != ty:
            raise TypeInferenceError(f"@{name} declares return type {func.ret_type} but its body has type {ty}")
        self.ret_types[name] = ty
        self.in_progress.discard(name)

    # ---- one graph ----------------------------------------------------------------------------
    def infer_body(self, body: Expr, env: dict[int, Type], fname: str, func: Function,
                   order: list[Expr] | None = None) -> Type:
        """Type every node of `body` (not entering nested Functions); params are typed by `env`.

        A node typed already keeps its type unless an input's type changed in this run: a type is a
        pure function of the node's structure (ir/expr.py), so a pipeline types its unchanged nodes
        once and a pass that rebuilt a node with its type (annotations, PartitionGraph) is not undone.
        Vars (their env) and calls of global functions (the callee may differ) are typed every time.
        `order`: post_order(body), when the caller has it."""
        for p in func.params:
            if id(p) in env:  # a composite body is typed with its own params' env
                p.checked_type = env[id(p)]
        changed: set[int] = set()       # nodes whose type is new in this run: their users are typed again
        for node in order if order is not None else post_order(body):
            cls = type(node)
            old = node.checked_type
            if old is not None and cls is not Var and not (cls is Call and type(node.op) is GlobalVar) and \
                    not (changed and any(id(k) in changed for k in _inputs(node))):
                continue
            if cls is Function:
                # Only reachable as a call target (handled in call_type) or as a value, which we do not type.
                continue
            ty = self.call_type(node, fname, func) if cls is Call else self.node_type(node, cls, env, fname, func)
            node.checked_type = ty
            if old is None or ty != old:
                changed.add(id(node))
        return body.checked_type

    def node_type(self, node: Expr, cls: type, env: dict[int, Type], fname: str, func: Function) -> Type:
        """The type of one node (not a call) whose inputs are typed."""
        if cls is Var:
            ty = env.get(id(node))
            if ty is None:
                raise TypeInferenceError(
                    f"%{node.name_hint} is used in @{fname} but is not a parameter of it (a free variable)")
            return ty
        if cls is Constant:
            return _constant_type(node)
        if cls is TupleGetItem:
            tup = node.tuple_value.checked_type
            if not isinstance(tup, TupleType):
                raise TypeInferenceError(
                    f"TupleGetItem .{node.index} {_locate(node, fname, func)}: expected a tuple, "
                    f"found {type_text(tup)}", expected="a tuple", found=type_text(tup))
            if not 0 <= node.index < len(tup.fields):
                raise TypeInferenceError(
                    f"TupleGetItem .{node.index} {_locate(node, fname, func)}: index out of range for a tuple "
                    f"of {len(tup.fields)} fields (valid: 0..{len(tup.fields) - 1})",
                    expected=f"index in [0, {len(tup.fields) - 1}]", found=str(node.index))
            return tup.fields[node.index]
        if cls is Tuple:
            return TupleType(tuple(f.checked_type for f in node.fields))
        raise TypeInferenceError(f"@{node.name_hint} is used as a value in @{fname}; global functions can "
                                 "only be called")

    def _op_entry(self, call: Call, fname: str, func: Function):
        """(infer, argument count, input names) of the op of `call`, cached per Op."""
        try:
            opdef = get_op_def(call.op.name)
        except OpError as exc:
            raise TypeInferenceError(f"{exc} ({_locate(call, fname, func)})", op=call.op.name) from None
        entry = (opdef.infer, 1 if opdef.tuple_input else len(opdef.inputs), opdef.inputs)
        self.op_entries[call.op] = entry
        return entry

    def call_type(self, call: Call, fname: str, func: Function) -> Type:
        target = call.op
        if type(target) is Op:
            entry = self.op_entries.get(target) or self._op_entry(call, fname, func)
            infer, count, inputs = entry
            args = call.args
            if len(args) != count:
                raise TypeInferenceError(
                    f"{target.name} {_locate(call, fname, func)}: expected {count} arguments "
                    f"({', '.join(inputs)}), found {len(args)}", op=target.name)
            try:                # (typed for every call of a model: one argument without a list comprehension)
                return infer([args[0].checked_type] if count == 1 else [a.checked_type for a in args], call.attrs)
            except OpTypeError as exc:
                where = _locate(call, fname, func)
                raise TypeInferenceError(
                    f"{exc.op} {where}: argument {exc.argument!r} expected {exc.expected}, found {exc.found}",
                    exc.op, exc.argument, exc.expected, exc.found, where) from None
            except ValueError as exc:  # the result type cannot exist (types.shape_problem: past int64, too big)
                raise TypeInferenceError(f"{target.name} {_locate(call, fname, func)}: its result is too large: "
                                         f"{exc}; check the op's attributes", op=target.name) from None
        arg_types = [a.checked_type for a in call.args]
        if isinstance(target, GlobalVar):
            if target.name_hint not in self.mod:
                raise TypeInferenceError(
                    f"@{fname} calls @{target.name_hint}, which the module does not define "
                    f"(it has: {', '.join(self.mod) or 'none'})")
            callee = self.mod[target]
            self._check_args(call, callee, arg_types, f"@{target.name_hint}", fname, func)
            return self.function_type(target.name_hint)
        if isinstance(target, Function):
            label = target.attrs.get("Composite") or "fn"
            self._check_args(call, target, arg_types, str(label), fname, func, annotations_optional=True)
            env = {id(p): t for p, t in zip(target.params, arg_types)}
            ty = self.infer_body(target.body, env, fname, func)
            if target.ret_type is not None and target.ret_type != ty:
                raise TypeInferenceError(f"{label} {_locate(call, fname, func)}: declares return type "
                                         f"{target.ret_type} but its body has type {ty}")
            return ty
        raise TypeInferenceError(f"a call of {type(target).__name__} in @{fname} cannot be typed")

    def _check_args(self, call, callee: Function, arg_types, label, fname, func, annotations_optional=False):
        if len(arg_types) != len(callee.params):
            raise TypeInferenceError(f"{label} {_locate(call, fname, func)}: expected {len(callee.params)} arguments, "
                                     f"found {len(arg_types)}", op=label)
        for param, ty in zip(callee.params, arg_types):
            want = param.type_annotation
            if want is None and not annotations_optional:
                raise TypeInferenceError(f"parameter %{param.name_hint} of {label} has no type annotation")
            if want is not None and want != ty:
                where = _locate(call, fname, func)
                raise TypeInferenceError(
                    f"{label} {where}: argument {param.name_hint!r} expected {type_text(want)}, found {type_text(ty)}",
                    label, param.name_hint, type_text(want), type_text(ty), where)


def infer_type(mod: IRModule) -> IRModule:
    """A module whose every expression has `checked_type` set and every function a `ret_type`."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"infer_type expects an IRModule, got {type(mod).__name__}; wrap an expression with "
                        "IRModule.from_expr(expr)")
    inferer = _Inferer(mod)
    functions = {}
    for name, func in mod.items():
        ret = inferer.function_type(name)
        functions[name] = func if func.ret_type is not None else Function(
            func.params, func.body, ret, func.attrs, func.span)
    return IRModule(functions)


def InferType():  # noqa: N802 - TVM's spelling: InferType() returns the pass
    """The InferType pass: a callable IRModule -> IRModule."""
    return infer_type


__all__ = ["InferType", "infer_type", "TypeInferenceError"]
