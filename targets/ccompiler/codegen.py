"""The ccompiler codegen: one region (external function) -> one C file calling the kernel library.

    artifact = ccompiler_codegen(func, "tvmgen_default_ccompiler_main_0")

The file holds, in this order: the region's small constants as `static const` arrays, and an
`extern` declaration (shape, dtype and size in its comment) for each large one, whose bytes the
build links from byoc_constants.bin (backend.constants: weights never pass through the C parser); the
core `<symbol>_(const float* in0, ..., float* out0[, void* workspace])` that calls the kernels in topological order,
one commented call per op or composite; and the entry point `<symbol>` in both interfaces
(vendor.entry_points). Identifiers in the C text are our own (in0, c0, t0, out0); names
from the model appear only in comments, scrubbed (vendor.comment). Every literal, array and name is
written by the vendor API's C text writers (byoc_compiler.ctext), like the host's.

Passes: `_Lowering` walks the region into steps over abstract buffers (reshape is a view, a
composite whose body is a fusable chain is one fused call, any other composite is its body op by
op); `_assign_outputs` lets results be computed straight into the output arrays; `_prepack_weights`
packs constant weights of conv2d, and of dense/matmul/batch_matmul with more than one row (prepack.py);
`fuse_residual_adds` (fuse_residual.py) moves a residual add (and the relu after it) into the preceding
conv's epilogue; `_run_in_place` lets elementwise-like kernels overwrite a dead input; `_plan` packs what is left
into one workspace by lifetime (backend.memory_plan; sizes from the tensor types and the kernels' size
formulas, nothing allocated at run time); `_render` writes the text. The workspace is not the region's
own: its size is the artifact's workspace_bytes and the model instance that calls the region passes it,
so the file keeps no mutable static state and two instances run concurrently.
"""
from __future__ import annotations

from dataclasses import dataclass

from byoc_compiler.vendor import (ByocError, Call, Constant, CSourceArtifact, Function, GlobalVar, Op, TensorType, Tuple,
                                  TupleGetItem, Var, c_type, comment, constant_array, core_signature, entry_points,
                                  extern_declaration, WORKSPACE_ALIGNMENT, flat_value, flatten_type, is_identifier,
                                  is_large, peak_live_bytes, plan_offsets, post_order, sanitize_identifier, shape_text, wrap_list)

from . import kernels
from . import rules_qnn
from .fuse_residual import fuse_residual_adds
from .prepack import PREPACK
from .rules import FUSIONS, PASS_THROUGH, RULES, VIEWS

ALIGNMENT = WORKSPACE_ALIGNMENT   # every workspace buffer starts on a cache line, as the workspace does
WORKSPACE = "region_workspace"


@dataclass(eq=False)
class _Buffer:
    kind: str                    # "input" | "const" | "temp" | "output" | "scratch"
    nbytes: int
    index: int = 0               # inN / outN / cN number
    data: object = None          # the ndarray of a constant
    cname: str = ""
    first: int | None = None     # lifetime in steps (temps, scratch)
    last: int | None = None
    offset: int = 0              # bytes into the workspace (temps, scratch)
    merged: "_Buffer | None" = None  # an in-place result lives in this (earlier) buffer instead
    note: str = ""               # what a constant is, when it is not a tensor of the model (packed weights)
    source: "_Buffer | None" = None  # the constant a packed one was made from
    ctype: str = "float"         # C element type of a temp

    def root(self) -> "_Buffer":
        buf = self
        while buf.merged is not None:
            buf = buf.merged
        return buf


@dataclass(eq=False)
class _Value:
    type: TensorType
    raw: _Buffer

    @property
    def buffer(self) -> _Buffer:
        return self.raw.root()

    @property
    def ptr(self) -> str:
        return self.buffer.cname

    def label(self) -> str:
        return f"{self.buffer.cname} {shape_text(self.type.shape)}"


@dataclass(eq=False)
class _Step:
    op: str                      # a RULES key, or a view op (no call)
    attrs: dict
    ins: list
    outs: list
    title: str                   # what the comment names: the op or composite
    activation: str | None = None
    scratch: _Buffer | None = None

    @property
    def scratch_ptr(self) -> str:
        return self.scratch.cname if self.scratch is not None else "NULL"

    @property
    def is_call(self) -> bool:
        return self.op in RULES


DTYPES = ("float32", "int8", "uint8", "int32")     # what the kernel library computes on (int32: biases)


def _tensor_types(ty, what: str) -> list[TensorType]:
    if ty is None:
        raise ByocError(f"{what} has no type; run transform.InferType() on the module before the codegen")
    types = flatten_type(ty)
    for t in types:
        if t.dtype not in DTYPES:
            raise ByocError(f"{what} has dtype {t.dtype}; the ccompiler kernel library takes {', '.join(DTYPES)}")
    return types


class _Lowering:
    """Region body -> steps over buffers, in topological order."""

    def __init__(self, func: Function):
        self.func = func
        self.steps: list[_Step] = []
        self.inputs: list[_Buffer] = []
        self.input_names: list[str] = []
        self.input_types: list[TensorType] = []
        self.consts: dict[int, _Buffer] = {}
        self.temps: list[_Buffer] = []

    def run(self) -> list[_Value]:
        values: dict[int, list[_Value]] = {}
        for param in self.func.params:
            what = f"region parameter {param.name_hint!r}"
            for ty in _tensor_types(param.checked_type or param.type_annotation, what):
                buf = _Buffer("input", ty.nbytes, index=len(self.inputs))
                self.inputs.append(buf)
                self.input_names.append(param.name_hint)
                self.input_types.append(ty)
                values.setdefault(id(param), []).append(_Value(ty, buf))
        return self.walk(self.func.body, values)

    def walk(self, root, values: dict[int, list[_Value]]) -> list[_Value]:
        for node in post_order(root):
            if id(node) in values or isinstance(node, Function):
                continue          # parameters bound by the caller; composite bodies are walked at their call
            if isinstance(node, Var):
                raise ByocError(f"variable {node.name_hint!r} is used in the region but is not its parameter")
            if isinstance(node, Constant):
                values[id(node)] = [self.constant(node)]
            elif isinstance(node, (Tuple, TupleGetItem)):
                values[id(node)] = flat_value(node, values)
            elif isinstance(node, Call) and isinstance(node.op, Op):
                ins = [v for a in node.args for v in values[id(a)]]
                out_types = _tensor_types(node.checked_type, f"the result of {node.op.name}")
                values[id(node)] = self.op(node.op.name, dict(node.attrs), ins, out_types, node.op.name)
            elif isinstance(node, Call) and isinstance(node.op, Function):
                values[id(node)] = self.composite(node, [values[id(a)] for a in node.args])
            elif isinstance(node, (Call, GlobalVar)):
                raise ByocError("a region of ccompiler cannot call other functions; partition the model again")
            else:
                raise ByocError(f"unexpected {type(node).__name__} in a ccompiler region")
        return values[id(root)]

    def constant(self, node: Constant) -> _Value:
        ty = node.tensor_type
        if ty.dtype not in DTYPES:
            raise ByocError(f"a constant of dtype {ty.dtype} reached a ccompiler region ({', '.join(DTYPES)} only)")
        buf = self.consts.get(id(node))
        if buf is None:
            buf = _Buffer("const", ty.nbytes, index=len(self.consts), data=node.data)
            self.consts[id(node)] = buf
        return _Value(ty, buf)

    def derived_constant(self, data, note: str) -> _Value:
        """A constant the codegen computed (a packed weight, a folded bias), not a tensor of the model."""
        buf = _Buffer("const", data.nbytes, index=len(self.consts), data=data, note=note)
        self.consts[id(buf)] = buf
        return _Value(TensorType(tuple(data.shape), str(data.dtype)), buf)

    def temp(self, ty: TensorType) -> _Value:
        buf = _Buffer("temp", ty.nbytes, ctype=c_type(ty.dtype))
        self.temps.append(buf)
        return _Value(ty, buf)

    def op(self, name: str, attrs: dict, ins: list[_Value], out_types: list[TensorType], title: str,
           activation: str | None = None) -> list[_Value]:
        if name in VIEWS:
            outs = [_Value(t, ins[i].buffer) for t, i in zip(out_types, VIEWS[name])]
            self.steps.append(_Step(name, attrs, ins, outs, title))
            return outs
        if name not in RULES:
            raise ByocError(f"the ccompiler kernel library has no function for {name}; "
                            "keep it on the host (remove it from targets/ccompiler/__init__.py)")
        through = PASS_THROUGH.get(name, {})
        outs = [_Value(t, ins[through[k]].buffer) if k in through else self.temp(t) for k, t in enumerate(out_types)]
        step = _Step(name, attrs, ins, [o for k, o in enumerate(outs) if k not in through], title, activation)
        nbytes = RULES[name].scratch(step)
        if nbytes:
            step.scratch = _Buffer("scratch", int(nbytes))
        self.steps.append(step)
        return outs

    def composite(self, call: Call, args: list[list[_Value]]) -> list[_Value]:
        func = call.op
        name = str(func.attrs.get("Composite", ""))
        if name in rules_qnn.COMPOSITES:
            return rules_qnn.lower_composite(self, call, name, func, args)
        fused = _match_fusion(name, func)
        if fused is not None:
            chain, data, weight, bias = fused
            by_param = {id(p): a for p, a in zip(func.params, args)}
            ins = [v for p in (data, weight, bias) for v in by_param[id(p)]]
            out_types = _tensor_types(call.checked_type, f"the result of composite {name}")
            activation = FUSIONS[name].activation
            title = f"{name} [{' + '.join(c.op.name for c in chain)}]"
            return self.op(FUSIONS[name].op, dict(chain[0].attrs), ins, out_types, title, activation)
        # Anything else: the composite's body, op by op.
        values = {id(p): a for p, a in zip(func.params, args)}
        return self.walk(func.body, values)


def _match_fusion(name: str, func: Function):
    """(chain of calls, data param, weight param, bias param) when the body is the fusion's chain."""
    fusion = FUSIONS.get(name)
    if fusion is None:
        return None
    calls = [n for n in post_order(func.body) if isinstance(n, Call)]
    if tuple(c.op.name if isinstance(c.op, Op) else "" for c in calls) != fusion.ops or calls[-1] is not func.body:
        return None
    if any(c.args[0] is not prev for prev, c in zip(calls, calls[1:])):
        return None
    producer, bias_add = calls[0], calls[1]
    params = {id(p) for p in func.params}
    data, weight, bias = producer.args[0], producer.args[1], bias_add.args[1]
    if not all(id(x) in params for x in (data, weight, bias)):
        return None
    out_ndim = producer.checked_type.ndim
    axis = int(bias_add.attrs["axis"])
    if out_ndim == 0 or axis % out_ndim != fusion.bias_axis(out_ndim) or bias.checked_type.ndim != 1:
        return None
    return calls, data, weight, bias


def _prepack_weights(lowering: _Lowering) -> None:
    """Constant weights -> the kernel library's packed layouts, once, here at codegen time (not on every
    call, nor at init: nothing to allocate or to run before the first inference), as the table in
    prepack.py says (which ops, when it pays, the numpy packers mirroring the library's). The layouts
    are the same for every CPU the library dispatches to; the step becomes the table's *_prepacked op.
    A raw weight nothing else reads is dropped, so the packed copy replaces it."""
    packed: dict[tuple, _Buffer] = {}
    for step in lowering.steps:
        rule = PREPACK.get(step.op)
        if rule is None or step.ins[rule.weight].buffer.kind != "const" or not rule.when(step):
            continue
        weight = step.ins[rule.weight]
        key = (id(weight.buffer), step.op, rule.key(step))
        if key not in packed:
            data = rule.pack(step, weight.buffer.data)
            note = f"{step.op.removeprefix('nn.')} weight {shape_text(weight.type.shape)} packed for {rule.function}"
            packed[key] = _Buffer("const", data.nbytes, data=data, note=note, source=weight.buffer)
        step.op = rule.op
        step.ins[rule.weight] = _Value(weight.type, packed[key])
    _drop_unused_constants(lowering, packed)


def _drop_unused_constants(lowering: _Lowering, packed: dict) -> None:
    """Constants no step reads (weights replaced by packed copies) are not written; the packed copies
    follow their source in the numbering."""
    used = {id(v.buffer) for s in lowering.steps for v in s.ins}
    if not packed and all(id(buf) in used for buf in lowering.consts.values()):
        return
    by_source: dict[int, list[_Buffer]] = {}
    for buf in packed.values():
        by_source.setdefault(id(buf.source), []).append(buf)
    consts: dict[int, _Buffer] = {}
    for key, buf in lowering.consts.items():
        if id(buf) in used:
            consts[key] = buf
        for new in by_source.get(id(buf), []):
            consts[id(new)] = new
    for index, buf in enumerate(consts.values()):
        buf.index = index
    lowering.consts = consts


def _assign_outputs(lowering: _Lowering, results: list[_Value]) -> list[_Buffer]:
    """The region's output buffers: a temp result is computed in place, anything else is copied."""
    outputs = []
    for k, value in enumerate(results):
        buf = value.buffer
        if buf.kind == "temp":
            buf.kind, buf.index = "output", k
            outputs.append(buf)
            continue
        out = _Buffer("output", value.type.nbytes, index=k)
        outputs.append(out)
        lowering.steps.append(_Step("copy", {}, [value], [_Value(value.type, out)], "copy"))
    return outputs


def _run_in_place(lowering: _Lowering) -> None:
    """Let elementwise-like steps overwrite an input temp that nothing reads afterwards."""
    last: dict[int, int] = {}
    for i, step in enumerate(lowering.steps):
        for v in step.ins:
            last[id(v.buffer)] = i
    for i, step in enumerate(lowering.steps):
        rule = RULES.get(step.op)
        if rule is None or not rule.inplace or len(step.outs) != 1:
            continue
        out = step.outs[0].buffer
        if out.kind != "temp":
            continue
        for k in rule.inplace:
            src = step.ins[k]
            buf = src.buffer
            if (buf.kind == "temp" and buf is not out and last.get(id(buf)) == i
                    and src.type.shape == step.outs[0].type.shape):
                out.merged = buf
                last[id(buf)] = max(i, last.get(id(out), i))
                break


def _plan(lowering: _Lowering) -> tuple[int, int]:
    """Workspace offsets for temps and scratch (disjoint lifetimes share bytes); returns its size and its
    lower bound (the peak of simultaneously live temps and scratch)."""
    for i, step in enumerate(lowering.steps):
        for v in step.ins:
            if v.buffer.kind == "temp":
                v.buffer.last = i
        for v in step.outs:
            if v.buffer.kind == "temp" and v.buffer.first is None:
                v.buffer.first = v.buffer.last = i
        if step.scratch is not None:
            step.scratch.first = step.scratch.last = i
    placed = [b for b in lowering.temps if b.kind == "temp" and b.merged is None]
    placed += [s.scratch for s in lowering.steps if s.scratch is not None]
    if not placed:
        return 0, 0
    sizes = {k: b.nbytes for k, b in enumerate(placed)}
    lifetimes = {k: (b.first, b.last) for k, b in enumerate(placed)}
    plan = plan_offsets(sizes, lifetimes, ALIGNMENT)
    for k, b in enumerate(placed):
        b.offset = plan.offsets[k]
    return plan.total_bytes, peak_live_bytes(sizes, lifetimes)


def _name_buffers(lowering: _Lowering, symbol: str) -> None:
    for buf in lowering.inputs:
        buf.cname = f"in{buf.index}"
    for buf in lowering.consts.values():
        # A linked constant is a global symbol: the region's symbol keeps it unique in the model.
        buf.cname = f"{symbol}_c{buf.index}" if is_large(buf.data) else f"c{buf.index}"
    n = 0
    for buf in lowering.temps:
        if buf.merged is not None:
            continue
        if buf.kind == "temp":
            buf.cname, n = f"t{n}", n + 1
        else:
            buf.cname = f"out{buf.index}"
    n = 0
    for step in lowering.steps:
        if step.scratch is not None:
            step.scratch.cname, n = f"scratch{n}", n + 1
        for v in step.outs:
            if v.buffer.kind == "output":
                v.buffer.cname = f"out{v.buffer.index}"


def _core_name(symbol: str) -> str:
    core = symbol + "_"
    return core if is_identifier(core) else sanitize_identifier(symbol[:40] + "_core_" + symbol[-8:]) + "_"


def _render(symbol: str, core: str, lowering: _Lowering, workspace: int, in_types, out_types) -> str:
    n_calls = sum(1 for s in lowering.steps if s.is_call)
    memory = (f" * Intermediates and kernel scratch share one workspace of {workspace} bytes that the caller\n"
              " * (the model instance) passes in: no mutable static state, instances run concurrently. */"
              if workspace else " * No workspace: every call reads inputs or constants and writes an output. */")
    lines = [f"/* {symbol}: a region of target ccompiler, generated by byoc.",
             f" * {n_calls} call(s) of the kernel library (byoc_ck.h), in topological order.",
             memory,
             "#include <math.h>",
             "#include <stddef.h>",
             "#include <stdint.h>",
             "#include <byoc/runtime.h>",
             "#include <byoc_ck.h>",
             ""]
    for buf in lowering.consts.values():
        if buf.note:
            lines.append(comment(f"{buf.cname}: {buf.note}"))
        if is_large(buf.data):
            lines.append(extern_declaration(buf.cname, buf.data))
            continue
        if not buf.note:
            lines.append(comment(f"{buf.cname}: constant {shape_text(buf.data.shape)} {buf.data.dtype}"))
        lines += constant_array(buf.cname, buf.data).splitlines() + [""]
    if n_calls:
        lines += ["static int32_t region_failed(const char* what) {",
                  f'  byoc_set_last_error("{symbol}: the kernel library rejected the parameters of %s", what);',
                  "  return -1;",
                  "}", ""]
    lines.append(comment("the region: " + ", ".join(
        [f"in{k} = %{name} {shape_text(t.shape)}" for k, (name, t) in enumerate(zip(lowering.input_names, in_types))]
        + [f"out{k} {shape_text(t.shape)}" for k, t in enumerate(out_types)])))
    signature = core_signature(core, in_types, out_types, workspace=bool(workspace))
    lines += [signature + ";", signature + " {"]
    if workspace:  # 64-byte aligned by the caller (docs/runtime-abi.md)
        lines.append(f"  float* const {WORKSPACE} = (float*)workspace;")
    used = {v.buffer.cname for s in lowering.steps for v in s.ins}
    for buf in lowering.inputs:
        if buf.cname not in used:
            lines.append(f"  (void){buf.cname};")
    for buf in [b for b in lowering.temps if b.kind == "temp" and b.merged is None]:
        at = f"{WORKSPACE} + {buf.offset // 4}"
        at = at if buf.ctype == "float" else f"({buf.ctype}*)({at})"
        lines.append(f"  {buf.ctype}* const {buf.cname} = {at};  "
                     + comment(f"{buf.nbytes} bytes, steps {buf.first}-{buf.last}"))
    for step in lowering.steps:
        if step.scratch is not None:
            lines.append(f"  void* const {step.scratch.cname} = {WORKSPACE} + {step.scratch.offset // 4};  "
                         + comment(f"{step.scratch.nbytes} bytes of kernel scratch, step "
                                   f"{step.scratch.first}"))
    for i, step in enumerate(lowering.steps):
        ins = ", ".join(v.label() for v in step.ins)
        outs = ", ".join(v.label() for v in step.outs)
        lines.append("")
        if not step.is_call:
            lines.append("  " + comment(f"{i}: {step.title}({ins}) -> {outs}: a view, no call"))
            continue
        lines.append("  " + comment(f"{i}: {step.title}({ins}) -> {outs}"))
        rule = RULES[step.op]
        decls, call = rule.emit(step)
        body = []
        planned = step.scratch.nbytes if step.scratch is not None else 0
        if rule.scratch_query is not None:
            body += [f"if ({rule.scratch_query(step)} > (size_t){planned})",
                     f"  return region_failed(\"step {i} ({step.op}): more kernel scratch than planned\");"]
        body += [f"if ({call} != CK_OK)", f"  return region_failed(\"step {i} ({step.op})\");"]
        decl_lines = [line for d in decls for line in wrap_list(d)]
        if decl_lines or len(body) > 2:
            lines += ["  {"] + [f"    {d}" for d in decl_lines + body] + ["  }"]
        else:
            lines += [f"  {b}" for b in body]
    lines += ["  return 0;", "}", ""]
    lines.append(entry_points(symbol, core, in_types, out_types, workspace=bool(workspace)))
    return "\n".join(lines)


def ccompiler_codegen(func: Function, symbol: str) -> CSourceArtifact:
    """One region -> CSourceArtifact with one file, `<symbol>.c`."""
    if not is_identifier(symbol):
        raise ByocError(f"region symbol {symbol!r} is not a C identifier; partition the model again")
    lowering = _Lowering(func)
    results = lowering.run()
    in_types = lowering.input_types
    out_types = [v.type for v in results]
    _assign_outputs(lowering, results)
    _prepack_weights(lowering)
    fuse_residual_adds(lowering, _Step)
    _run_in_place(lowering)
    workspace, lower_bound = _plan(lowering)
    _name_buffers(lowering, symbol)
    code = _render(symbol, _core_name(symbol), lowering, workspace, in_types, out_types)
    linked = {b.cname: b.data for b in lowering.consts.values() if is_large(b.data)}
    return CSourceArtifact(symbol, {f"{symbol}.c": code}, include_dirs=(kernels.INCLUDE_DIR,), constants=linked,
                           workspace_bytes=workspace, workspace_lower_bound=lower_bound)

