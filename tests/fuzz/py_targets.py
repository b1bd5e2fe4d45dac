"""The Python fuzz targets' bodies: plain functions, so the regression test runs saved inputs through
exactly what atheris runs (fuzz_text.py, fuzz_onnx.py wrap these with instrumentation)."""
from byoc_compiler.errors import ByocError


def text(data: bytes) -> None:
    """The Relay text-format parser, then type inference of what it accepts: ByocError or success."""
    from byoc_compiler.text import parse
    from byoc_compiler.transform import infer_type

    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # parse() takes str: callers decode, and an undecodable file is refused before the parser
    try:
        infer_type(parse(source, "fuzz.txt"))
    except ByocError:
        pass


def onnx(data: bytes) -> None:
    """The ONNX importer on raw bytes: an IRModule or a ByocError, nothing else."""
    from byoc_compiler.frontend.onnx import from_onnx

    try:
        from_onnx(data)
    except ByocError:
        pass


def tflite(data: bytes) -> None:
    """The TFLite importer on raw bytes: an IRModule or a ByocError, nothing else (and no converter failure)."""
    from byoc_compiler.frontend.tflite import from_tflite

    try:
        from_tflite(data)
    except ByocError as exc:
        # a converter's own exception is wrapped into the error as "a bug in byoc": still a finding
        if "this is a bug in byoc" in str(exc):
            raise AssertionError(str(exc)) from None


TARGETS = {"text": text, "onnx": onnx, "tflite": tflite}


def triaging(fn, directory):
    """fn, but an unexpected exception saves the input under `directory` (one file per distinct exception
    type and raising line) instead of stopping the fuzzer: a campaign lists every kind of finding at once."""
    import os
    import traceback

    os.makedirs(directory, exist_ok=True)

    def wrapped(data: bytes) -> None:
        try:
            fn(data)
        except Exception as exc:  # noqa: BLE001 - triage: every escaping exception is a finding to save
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            key = f"{type(exc).__name__}-{os.path.basename(frame.filename)}-{frame.lineno}"
            path = os.path.join(directory, key)
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.write(data)
                with open(path + ".txt", "w") as f:
                    f.write("".join(traceback.format_exception(exc)))
    return wrapped
