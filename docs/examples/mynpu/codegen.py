"""mynpu codegen: a region -> one C file with a single loop over its elements.

Every op mynpu takes is elementwise over operands of one shape, so the whole
region is one loop: each op (or composite) is one scalar statement. The function
also prints a line each time it runs, a side effect the runtime does not mind.
"""
from byoc_compiler.vendor import Call, CSourceArtifact, Function, Tuple, entry_points, post_order

# One C expression per op, over the scalar operands {0}, {1}.
C_EXPR = {"add": "{0} + {1}", "multiply": "{0} * {1}", "nn.relu": "{0} > 0.0f ? {0} : 0.0f"}


def scalar(expr, names, lines):
    """The C name of one element of `expr`; appends the statements computing it to `lines`."""
    for node in post_order(expr):
        if node in names or not isinstance(node, Call):
            continue
        operands = [names[arg] for arg in node.args]
        if isinstance(node.op, Function):      # a composite call: inline its body over the operands
            names[node] = scalar(node.op.body, dict(zip(node.op.params, operands)), lines)
        else:
            names[node] = f"v{len(lines)}"
            lines.append(f"    float {names[node]} = {C_EXPR[node.op.name].format(*operands)};")
    return names[expr]


def mynpu_codegen(func, symbol):
    outputs = list(func.body.fields) if isinstance(func.body, Tuple) else [func.body]
    n = outputs[0].checked_type.size
    names = {param: f"in{i}[i]" for i, param in enumerate(func.params)}
    lines = []
    for k, out in enumerate(outputs):
        lines.append(f"    out{k}[i] = {scalar(out, names, lines)};")
    params = [f"const float* in{i}" for i in range(len(func.params))]
    params += [f"float* out{k}" for k in range(len(outputs))]
    code = "\n".join([
        "#include <stdint.h>",
        "#include <stdio.h>",
        "",
        f"static int32_t {symbol}_({', '.join(params)}) {{",
        f'  printf("mynpu: {symbol} called\\n");',
        f"  for (int64_t i = 0; i < {n}; ++i) {{",
        *lines,
        "  }",
        "  return 0;",
        "}",
        "",
        entry_points(symbol, symbol + "_", [p.checked_type for p in func.params],
                     [out.checked_type for out in outputs]),
    ])
    return CSourceArtifact(symbol, {symbol + ".c": code})
