"""The op set: constructors (`op.add`, `op.nn.conv2d`, ...) and the registry behind them.

Importing this package registers every op. Top-level ops are attributes of
`byoc_compiler.op`; `nn.*` ops are in `byoc_compiler.op.nn`. Other layers attach what they know about an
op with `register_op_attr` (attrs.py).
"""
from . import attrs, registry
from .attrs import get_op_attr, missing_op_attrs, register_op_attr
from .registry import REQUIRED, Attr, OpDef, OpError, OpTypeError, all_ops, get_op_def, make_call
from .elementwise import *  # noqa: F401,F403 - the constructors
from .elementwise import __all__ as _elementwise
from . import conv, pool  # noqa: F401 - register nn.conv2d and the pools
from .shape import *  # noqa: F401,F403
from .shape import __all__ as _shape
from .logic import *  # noqa: F401,F403
from .logic import __all__ as _logic
from .reduce import *  # noqa: F401,F403
from .reduce import __all__ as _reduce
from .slicing import *  # noqa: F401,F403
from .slicing import __all__ as _slicing
from .image import resize  # noqa: F401 - image.resize
from . import batch_matmul as _batch_matmul, layer_norm as _layer_norm  # noqa: F401 - register nn ops
from . import nn
from . import qnn, qnn_pool, qnn_tflite  # noqa: F401 - register the qnn.* ops
from .describe import describe_ops
from ..ir import op_table as _op_table

# Every op is registered now: let the IR's operator sugar and printer ask the registry (ir/op_table.py).
_op_table.install(_op_table.OpTable(make_call, registry.default_attrs))

__all__ = ["nn", "attrs", "registry", "Attr", "OpDef", "OpError", "OpTypeError", "all_ops", "get_op_def", "make_call",
           "register_op_attr", "get_op_attr", "missing_op_attrs",
           "describe_ops", "resize", *_elementwise, *_shape, *_logic, *_reduce, *_slicing]
