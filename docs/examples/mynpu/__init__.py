"""mynpu: an example BYOC target that takes add, multiply and nn.relu (docs/writing-a-target.md)."""
from byoc_compiler.vendor import Constant, Target, all_of, float32_only, is_op, wildcard

target = Target("mynpu", flag="USE_MYNPU", description="elementwise add, multiply, relu; one C loop per region",
                vendor_api=(1, 3))   # the byoc_compiler.vendor API_VERSION it is written for


def same_shapes(call):
    """None if mynpu takes this call, else the reason it does not (shown in the why-not table)."""
    if any(isinstance(arg, Constant) for arg in call.args):
        return "constant operands are not supported"
    if any(arg.checked_type.shape != call.checked_type.shape for arg in call.args):
        return "operands must have the output's shape (no broadcasting)"
    return None


target.supports("add", "multiply", "nn.relu", predicate=all_of(float32_only, same_shapes))

# A composite: relu(add(a, b)) becomes one call to a function with Composite="mynpu.add_relu".
target.pattern("add_relu", is_op("nn.relu")(is_op("add")(wildcard(), wildcard())),
               check=lambda relu: same_shapes(relu.args[0]))

from .codegen import mynpu_codegen  # noqa: E402  (the op table above reads without the codegen)

target.codegen = mynpu_codegen
