"""`byoc zoo`: list the zoo's models, or write an ONNX-built one as an .onnx file.

    python -m byoc_compiler zoo list
    python -m byoc_compiler zoo export resnet50 resnet50.onnx    # then: scons model=resnet50.onnx
"""
from __future__ import annotations

from ..errors import ByocError

# What a command needs is imported inside its functions: `byoc --help` imports every command module
# (__main__.py), and stays fast.


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="zoo_command", metavar="ACTION", required=True)
    sub.add_parser("list", help="every zoo model, how it is built, one line about it")
    export = sub.add_parser("export", help="write an ONNX-built zoo model (resnet50, mobilenetv2, ...) as .onnx")
    export.add_argument("name", help="zoo model name (see `zoo list`, built as: onnx)")
    export.add_argument("output", help="the .onnx file to write")


def run(args) -> int:
    from .. import zoo

    if args.zoo_command == "list":
        rows = [("model", "built as", "about")]
        rows += [(n, "IR", zoo.describe(n)) for n in zoo.names()]
        rows += [(n, "onnx", zoo.describe(n)) for n in zoo.onnx_names()]
        widths = [max(len(r[i]) for r in rows) for i in range(2)]
        for row in rows:
            print(f"{row[0].ljust(widths[0])}  {row[1].ljust(widths[1])}  {row[2]}".rstrip())
        return 0
    if args.name not in zoo.onnx_names():
        what = "is built in the IR, not as ONNX" if args.name in zoo.names() else "is not a zoo model"
        raise ByocError(f"{args.name!r} {what}; models that export: {', '.join(zoo.onnx_names())}")
    if not args.output.endswith(".onnx"):
        raise ByocError(f"output {args.output!r} must end in .onnx (load_model and scons model= go by the suffix)")
    zoo.export_onnx(args.name, args.output)
    print(f"wrote {args.output}")
    return 0
