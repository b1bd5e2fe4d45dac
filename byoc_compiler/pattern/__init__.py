"""A dataflow pattern language for composite patterns (`dnnl.conv2d_bias_relu`, ...).

    from byoc_compiler.pattern import is_op, wildcard, is_constant
    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    pat = is_op("nn.bias_add")(conv, is_constant()).optional(is_op("nn.relu"))
    pat.match(expr)        # bool
    pat.find(expr)         # Match (root, nodes, inputs) or None
"""
from .matcher import Match, match
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, ExprPattern, OpPattern, Pattern,
                       TupleGetItemPattern, TuplePattern, TypePattern, VarPattern, WildcardPattern, is_constant,
                       is_expr, is_op, is_tuple, is_tuple_get_item, is_var, wildcard)

__all__ = ["Pattern", "Match", "match", "wildcard", "is_op", "is_constant", "is_var", "is_expr", "is_tuple",
           "is_tuple_get_item", "AltPattern", "AttrPattern", "CallPattern", "ConstantPattern", "ExprPattern",
           "OpPattern", "TupleGetItemPattern", "TuplePattern", "TypePattern", "VarPattern", "WildcardPattern"]
