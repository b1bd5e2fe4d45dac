"""`byoc partition MODEL --target T [--target U] [--print] [--dot out.dot] [--svg out.svg] [--strict]
[--shape NAME=D1,D2,...]`."""
from __future__ import annotations

from pathlib import Path

from ..errors import ByocError

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    parser.add_argument("model", help="a zoo model name or a model file (.txt/.relay text IR, .onnx, .tflite)")
    parser.add_argument("--target", "-t", action="append", required=True,
                        help="a target, highest priority first; repeat for several")
    parser.add_argument("--print", action="store_true", dest="print_ir", help="print the partitioned module")
    parser.add_argument("--dot", type=Path, help="write the partitioned graph as Graphviz DOT")
    parser.add_argument("--svg", type=Path, help="write it as SVG (needs Graphviz's `dot`)")
    parser.add_argument("--regions", action="store_true", help="list every external function in the summary")
    parser.add_argument("--strict", action="store_true", help="fail if any op stays on the host")
    parser.add_argument("--mod-name", default="default", help="the module name in external symbols")
    parser.add_argument("--no-bind-constants", action="store_true",
                        help="pass constants to external functions as arguments instead of binding them")
    parser.add_argument("--print-after", action="append", default=[], metavar="PASS",
                        help="print the module after this pass of the pipeline (repeatable; `all` for every pass)")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="static shape of an ONNX input with dynamic dimensions (repeatable)")


def parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """`--shape x=1,3,224,224` options -> {"x": (1, 3, 224, 224)}."""
    shapes = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims else ()
        except ValueError:
            shape = None
        if not sep or not name or shape is None or any(d < 0 for d in shape):
            raise ByocError(f"--shape {item}: expected NAME=D1,D2,... with non-negative integer sizes, "
                            "e.g. --shape input=1,3,224,224")
        shapes[name] = shape
    return shapes


def run(args) -> int:
    from ..load import load_model
    from ..partition import partition_for, summarize

    mod = load_model(args.model, shape=parse_shapes(args.shape))
    from ..ir.printer import astext
    from ..partition import PIPELINE

    wanted = set(args.print_after)
    unknown = wanted - set(PIPELINE) - {"all"}
    if unknown:
        raise ByocError(f"--print-after {sorted(unknown)[0]}: no such pass; the pipeline is "
                        f"{' -> '.join(PIPELINE)} (or `all`)")

    def trace(pass_name, module):
        if "all" in wanted or pass_name in wanted:     # with each node's region annotation (its meta)
            print(f"// ---- after {pass_name} ----\n{astext(module, show_meta=True)}\n")

    mod = partition_for(args.target, mod, strict=args.strict, mod_name=args.mod_name,
                        bind_constants=not args.no_bind_constants, trace=trace if wanted else None)
    print(summarize(mod).table(regions=args.regions))
    if args.print_ir:
        print()
        print(mod.astext())
    if args.dot or args.svg:
        from ..dot import to_dot, to_svg

        text = to_dot(mod, name=Path(args.model).stem)
        if args.dot:
            args.dot.write_text(text)
            print(f"wrote {args.dot}")
        if args.svg:
            args.svg.write_bytes(to_svg(text))
            print(f"wrote {args.svg}")
    return 0
