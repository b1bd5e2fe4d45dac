"""`byoc zoo`: list the zoo's models, or write an ONNX-built one as an .onnx file.

    python -m byoc_compiler zoo list
    python -m byoc_compiler zoo export resnet50 resnet50.onnx    # then: scons model=resnet50.onnx
    python -m byoc_compiler zoo export ds_cnn_int8 ds_cnn.tflite  # the microcontroller models, also .tflite
    python -m byoc_compiler zoo export micro_cnn_16x8 cnn.tflite  # 16x8 forms: .tflite only
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
    export.add_argument("output", help="the .onnx file to write (or .tflite, for the models that have that form)")


def run(args) -> int:
    from .. import zoo

    if args.zoo_command == "list":
        rows = [("model", "built as", "about")]
        rows += [(n, "IR", zoo.describe(n)) for n in zoo.names()]
        tflite = set(zoo.tflite_names())
        rows += [(n, "onnx, tflite" if n in tflite else "onnx", zoo.describe(n)) for n in zoo.onnx_names()]
        rows += [(n, "tflite", zoo.describe(n)) for n in zoo.tflite_names() if n not in zoo.onnx_names()]
        widths = [max(len(r[i]) for r in rows) for i in range(2)]
        for row in rows:
            print(f"{row[0].ljust(widths[0])}  {row[1].ljust(widths[1])}  {row[2]}".rstrip())
        return 0
    if args.name not in zoo.onnx_names() and not (args.name in zoo.tflite_names() and args.output.endswith(".tflite")):
        what = "is built in the IR, not as ONNX" if args.name in zoo.names() else \
            "has a .tflite form only" if args.name in zoo.tflite_names() else "is not a zoo model"
        raise ByocError(f"{args.name!r} {what}; models that export: {', '.join(zoo.onnx_names())}")
    if args.output.endswith(".tflite"):
        if args.name not in zoo.tflite_names():
            raise ByocError(f"{args.name!r} has no .tflite form; models with one: {', '.join(zoo.tflite_names())}")
        zoo.export_tflite(args.name, args.output)
    elif args.output.endswith(".onnx"):
        zoo.export_onnx(args.name, args.output)
    else:
        raise ByocError(f"output {args.output!r} must end in .onnx or .tflite (load_model and scons model= go by "
                        "the suffix)")
    print(f"wrote {args.output}")
    return 0
