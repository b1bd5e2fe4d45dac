"""The graph walk: ONNX GraphProto -> IRModule whose `main` takes the model's inputs.

Two passes over the nodes, and one error that lists every problem of both:
1. static: every node's op type, definition (opset) and attribute values, and
   that no unsupported output (Dropout's mask, MaxPool's Indices) is used;
2. conversion in graph order; a node that failed (in either pass) is recorded
   and everything depending on it skipped, so independent failures are still found.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import onnx
import onnx.helper
import onnx.numpy_helper

from ...ir.expr import Constant, Expr, Function, Tuple, Var
from ...ir.module import IRModule
from ...ir.types import DTYPES, TensorType, shape_problem
from ...transform.qdq_to_integer import qdq_to_integer
from .context import Context, Node, NodeError
from .errors import NodeProblem, OnnxImportError, OnnxUnsupportedError
from .loader import default_opset, describe_source, load_model_proto
from .converters import resolve
from .dtypes import INPUT_DTYPES, onnx_type_name
from .table import Converter, since_version
from .upgrade import upgrade_if_needed

def from_onnx(model, shape: Mapping[str, Sequence[int]] | None = None,
              dtype: str | Mapping[str, str] | None = None) -> IRModule:
    """Import an ONNX model (a path, bytes or onnx.ModelProto) as an IRModule.

    shape -- input name -> shape, overriding the model's (needed for dynamic dimensions)
    dtype -- one dtype for every input, or input name -> dtype, overriding the model's

    Initializers, Constant/ConstantOfShape/Shape and everything computable from them become
    Constants. main's parameters are the model inputs (Var.name_hint = the ONNX name), its
    result the model outputs in order; attr `output_names` records their ONNX names.
    """
    proto = load_model_proto(model)
    label = describe_source(model)
    proto = upgrade_if_needed(proto, label)
    return _GraphImporter(proto, label, shape or {}, dtype).run()


def attribute_value(attr: onnx.AttributeProto):
    """An AttributeProto as a Python value: tensors as numpy arrays, strings as str."""
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", errors="replace") for v in value]
    return value


def _readable_attributes(node: onnx.NodeProto) -> tuple[dict, list[str]]:
    """(name -> value, reasons) of a node's attributes; an attribute ONNX itself cannot decode (a tensor of an
    element type it does not define, a malformed type) is a reason, not an exception."""
    attrs, reasons = {}, []
    for a in node.attribute:
        try:
            attrs[a.name] = attribute_value(a)
        except (KeyError, ValueError, TypeError) as exc:
            reasons.append(f"attribute {a.name!r} cannot be read ({type(exc).__name__}: {exc}); export the model "
                           "again")
    return attrs, reasons


def node_label(node: onnx.NodeProto, index: int) -> str:
    if node.name:
        return repr(node.name)
    outputs = ", ".join(repr(o) for o in node.output if o)
    return f"#{index} (unnamed, outputs {outputs})"


class _GraphImporter:
    def __init__(self, model: onnx.ModelProto, label: str, shapes: Mapping, dtypes):
        self.model, self.graph, self.label = model, model.graph, label
        self.opset = default_opset(model)
        self.shapes, self.dtypes = dict(shapes), dtypes
        self.ctx = Context()
        self.env: dict[str, Expr] = {}
        self.problems: list[tuple[int, NodeProblem]] = []  # (node index, problem)

    def run(self) -> IRModule:
        converters = self._check_nodes()
        try:
            params = self._bind_inputs()
        except OnnxImportError:
            if self.problems:  # unsupported nodes are the more fundamental news
                self._raise_problems()
            raise
        self._convert(converters)
        outputs = [self.env[o.name] for o in self.graph.output if o.name in self.env]
        if self.problems:
            self._raise_problems()
        body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
        names = tuple(o.name for o in self.graph.output)
        mod = IRModule({"main": Function(params, body, attrs={"output_names": names})})
        if any(n.op_type == "DequantizeLinear" for n in self.graph.node):
            mod = qdq_to_integer(mod)
        return mod

    # ---- pass 1: what can be imported at all -----------------------------------------------------

    def _check_nodes(self) -> list[Converter]:
        used = {name for node in self.graph.node for name in node.input if name}
        used.update(o.name for o in self.graph.output)
        converters = []
        for index, node in enumerate(self.graph.node):
            conv, reason = resolve(node.op_type, node.domain, self.opset)
            reasons = [reason] if conv is None else []
            if conv is not None:
                attrs, unreadable = _readable_attributes(node)
                reasons += unreadable
                if conv.check is not None and not unreadable:
                    reasons += conv.check(attrs)
                for position, name in enumerate(node.output):
                    if position >= conv.outputs and name and name in used:
                        reasons.append(f"output {position} ({name!r}) is not supported, but the model uses it")
            for why in reasons:
                self.problems.append((index, NodeProblem(node_label(node, index), node.op_type, self.opset, why)))
            converters.append(None if reasons else conv)
        return converters

    def _raise_problems(self):
        # Static and conversion problems together, in graph order.
        ordered = [problem for _, problem in sorted(self.problems, key=lambda item: item[0])]
        raise OnnxUnsupportedError(self.label, ordered)

    # ---- inputs and initializers -----------------------------------------------------------------

    def _bind_inputs(self) -> list[Var]:
        for tensor in self.graph.initializer:
            try:
                self.env[tensor.name] = Constant(onnx.numpy_helper.to_array(tensor))
                self.ctx.names[id(self.env[tensor.name])] = tensor.name
                if tensor.data_type not in INPUT_DTYPES:    # reported if a node uses it, in ONNX's words
                    self.ctx.element_types[id(self.env[tensor.name])] = onnx_type_name(tensor.data_type)
            except Exception as exc:  # noqa: BLE001 - external data not loaded, unknown element types
                raise OnnxImportError(f"{self.label}: initializer {tensor.name!r} cannot be read ({exc}); if its "
                                      "data is in external files, import the model from its path") from None
        self._check_initializer_types()
        inputs = [i for i in self.graph.input if i.name not in self.env]
        names = [i.name for i in inputs]
        unknown = [n for n in self.shapes if n not in names]
        if unknown:
            raise OnnxImportError(f"{self.label}: shape= names {', '.join(map(repr, unknown))}, which "
                                  f"{'is not an input' if len(unknown) == 1 else 'are not inputs'}; "
                                  f"the inputs are: {', '.join(map(repr, names)) or 'none'}")
        if isinstance(self.dtypes, Mapping):
            bad = [n for n in self.dtypes if n not in names]
            if bad:
                raise OnnxImportError(f"{self.label}: dtype= names {', '.join(map(repr, bad))}, not an input; "
                                      f"the inputs are: {', '.join(map(repr, names)) or 'none'}")
        errors, params = [], []
        for value_info in inputs:
            try:
                shape, dtype = self._input_shape(value_info), self._input_dtype(value_info)
                problem = shape_problem(shape, dtype)
                if problem:
                    raise _InputError(f"input {value_info.name!r}: {problem}")
                var = Var(value_info.name, TensorType(shape, dtype))
            except _InputError as exc:
                errors.append(str(exc))
                continue
            self.env[value_info.name] = var
            params.append(var)
        if errors:
            raise OnnxImportError(f"{self.label}: " + "\n".join(errors))
        return params

    def _input_shape(self, value_info) -> tuple[int, ...]:
        name = value_info.name
        if name in self.shapes:
            shape = self.shapes[name]
            try:
                dims = tuple(int(d) for d in shape)
            except (TypeError, ValueError):
                dims = (-1,)
            if any(d < 0 for d in dims) or any(isinstance(d, bool) for d in shape):
                raise _InputError(f"shape={{{name!r}: {shape!r}}} is not a list of non-negative integers")
            declared = value_info.type.tensor_type
            if declared.HasField("shape") and len(declared.shape.dim) != len(dims):
                # the model's nodes (Reshape targets, axes) were written for the declared rank
                raise _InputError(f"shape={{{name!r}: {shape!r}}} has {len(dims)} dimension(s) but the model "
                                  f"declares {len(declared.shape.dim)} for input {name!r}; give one size per "
                                  "dimension")
            # only dynamic dimensions can be set: a static one is what the model's weights were made for
            for position, (dim, given) in enumerate(zip(declared.shape.dim, dims)):
                if dim.HasField("dim_value") and dim.dim_value > 0 and dim.dim_value != given:
                    declared_dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                                     for d in declared.shape.dim]
                    raise _InputError(
                        f"shape={{{name!r}: {shape!r}}} sets dimension {position} to {given}, but the model "
                        f"declares it static ({dim.dim_value}) in {name!r}: {declared_dims}; only dynamic "
                        f"dimensions can be set, so give {dim.dim_value} there")
            return dims
        tensor_type = value_info.type.tensor_type
        if not tensor_type.HasField("shape"):
            raise _InputError(f"input {name!r} has no shape in the model; pass it: "
                              f"from_onnx(model, shape={{{name!r}: (...)}})")
        dims, dynamic = [], []
        for position, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                dims.append(dim.dim_value)
            else:
                dynamic.append(f"{position} ({dim.dim_param!r})" if dim.dim_param else str(position))
                dims.append(None)
        if dynamic:
            example = tuple(1 if d is None else d for d in dims)
            raise _InputError(f"input {name!r} has a dynamic dimension at position {', '.join(dynamic)}; "
                              f"pass a static shape: from_onnx(model, shape={{{name!r}: {example}}}), or "
                              f"`--shape {name}={','.join(map(str, example))}` on the command line")
        return tuple(dims)

    def _check_initializer_types(self) -> None:
        """An initializer the model uses whose element type byoc lacks: one sentence naming it (an unused one
        is harmless)."""
        used = {name for node in self.graph.node for name in node.input} | {o.name for o in self.graph.output}
        for tensor in self.graph.initializer:
            if tensor.data_type not in INPUT_DTYPES and tensor.name in used:
                raise OnnxImportError(f"{self.label}: initializer {tensor.name!r} has element type "
                                      f"{onnx_type_name(tensor.data_type)}, which byoc does not support "
                                      f"(supported: {', '.join(DTYPES)})")

    def _input_dtype(self, value_info) -> str:
        name = value_info.name
        override = self.dtypes.get(name) if isinstance(self.dtypes, Mapping) else self.dtypes
        if override is not None:
            if override not in DTYPES:
                raise _InputError(f"dtype {override!r} for input {name!r} is not one of {', '.join(DTYPES)}")
            return override
        if not value_info.type.HasField("tensor_type"):
            raise _InputError(f"input {name!r} is not a tensor (sequences, maps and optionals are not supported)")
        elem = value_info.type.tensor_type.elem_type
        if elem not in INPUT_DTYPES:
            onnx_name = onnx_type_name(elem)
            raise _InputError(f"input {name!r} has element type {onnx_name}, which byoc does not support "
                              f"(supported: {', '.join(DTYPES)}); pass dtype={{{name!r}: 'float32'}} to import it "
                              "with another dtype")
        return INPUT_DTYPES[elem]

    # ---- pass 2: conversion ----------------------------------------------------------------------

    def _convert(self, converters: list[Converter]) -> None:
        failed: set[str] = set()
        for index, (proto, conv) in enumerate(zip(self.graph.node, converters)):
            if conv is None or any(name in failed for name in proto.input):
                failed.update(proto.output)  # its cause is already reported
                continue
            missing = [name for name in proto.input if name and name not in self.env]
            try:
                if missing:
                    raise NodeError(f"input {missing[0]!r} is not produced by any earlier node or initializer")
                node = Node(proto.name, proto.op_type, self.opset, since_version(proto.op_type, self.opset),
                            {a.name: attribute_value(a) for a in proto.attribute},
                            [self.env[n] if n else None for n in proto.input], list(proto.input),
                            list(proto.output))
                results = conv.convert(node, self.ctx)
                for result in results:
                    self.ctx.type_of(result)
            except Exception as exc:  # noqa: BLE001 - a converter bug still ends in the one error, named
                reason = str(exc) if isinstance(exc, NodeError) else \
                    f"the importer failed ({type(exc).__name__}: {exc}); this is a bug in byoc, please report it"
                self.problems.append((index, NodeProblem(node_label(proto, index), proto.op_type, self.opset,
                                                         reason)))
                failed.update(proto.output)
                continue
            for name, result in zip(proto.output, results):
                if name:
                    self.env[name] = result


class _InputError(Exception):
    pass

