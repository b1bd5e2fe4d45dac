"""`python -m byoc_compiler` smoke tests: the subcommand table, targets, partition, and one-line errors."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import needs

from byoc_compiler.__main__ import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args, cwd=None):
    env = dict(os.environ)
    env.pop("BYOC_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "byoc_compiler", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=120)


def test_commands_table_has_partition_and_targets():
    assert {"targets", "partition"} <= set(COMMANDS)


def test_targets_table():
    proc = run_cli("targets")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["target", "enabled", "flag"]
    rows = {line.split()[0]: line.split() for line in lines[1:] if line and not line.startswith(" ")}
    assert rows["ccompiler"][1:3] == ["yes", "USE_CODEGENC"]
    assert rows["dnnl"][1:3] == ["yes", "USE_DNNL"]


def test_partition_writes_dot_and_prints(tmp_path):
    dot = tmp_path / "out.dot"
    proc = run_cli("partition", "small_cnn", "--target", "ccompiler", "--target", "examplejson",
                   "--dot", str(dot), "--print")
    assert proc.returncode == 0, proc.stderr
    assert "ccompiler" in proc.stdout and "examplejson" in proc.stdout
    assert 'Compiler="ccompiler"' in proc.stdout and "def @tvmgen_default_ccompiler_main_0" in proc.stdout
    text = dot.read_text()
    assert text.startswith('digraph "small_cnn"') and "cluster_0" in text
    assert text.count("subgraph cluster_") == proc.stdout.count("def @tvmgen_default_")


def test_partition_svg_and_region_list(tmp_path):
    needs.programs("dot", hint="Graphviz: apt-get install graphviz (bash scripts/setup.sh installs it)")
    svg = tmp_path / "out.svg"
    proc = run_cli("partition", "mlp", "-t", "ccompiler", "--svg", str(svg), "--regions")
    assert proc.returncode == 0, proc.stderr
    assert b"<svg" in svg.read_bytes()
    assert "  tvmgen_default_ccompiler_main_0: " in proc.stdout


def test_partition_text_model_file(tmp_path):
    model = tmp_path / "tiny.txt"
    model.write_text("def @main(%x: Tensor[(1, 4), float32]) {\n  %0 = add(%x, %x);\n  nn.lrn(%0)\n}\n")
    proc = run_cli("partition", str(model), "-t", "ccompiler")
    assert proc.returncode == 0, proc.stderr
    assert "no target supports nn.lrn" in proc.stdout


ERRORS = [
    ("unknown-target", ["partition", "mlp", "-t", "ccompile"], "did you mean 'ccompiler'"),
    ("unknown-model", ["partition", "no_such_model", "-t", "ccompiler"], "unknown model 'no_such_model'"),
    ("strict", ["partition", "multi_output", "-t", "ccompiler", "--strict"], "no target supports nn.lrn"),
    ("malformed-text-model", ["partition", "{tmp}/bad.txt", "-t", "ccompiler"],
     "bad.txt:1:1: expected an expression, found 'garbage'"),
    ("binary-text-model", ["partition", "{tmp}/binary.txt", "-t", "ccompiler"], "binary.txt is not UTF-8 text"),
    ("dot-into-missing-dir", ["partition", "mlp", "-t", "ccompiler", "--dot", "{tmp}/no/such/dir/x.dot"],
     "x.dot: No such file or directory"),
    ("config-is-a-directory", ["config", "{tmp}"], "is a directory; name the config.toml file in it"),
    ("ill-typed-text-model", ["partition", "{tmp}/bool.txt", "-t", "ccompiler"],
     "add at " + "{tmp}/bool.txt:1:36: argument 'lhs' expected float32 or float16 or float64 or int32 "
     "or int8 or int16 or uint8 or uint16 or int64 tensor, found a bool tensor"),
    ("dynamic-onnx-needs-shape", ["partition", "{tmp}/dynamic.onnx", "-t", "ccompiler"],
     "input 'x' has a dynamic dimension at position 0 ('N'); pass a static shape: from_onnx(model, "
     "shape={'x': (1, 4)}), or `--shape x=1,4` on the command line"),
    ("shape-not-a-shape", ["partition", "{tmp}/dynamic.onnx", "-t", "ccompiler", "--shape", "x=1,a"],
     "--shape x=1,a: expected NAME=D1,D2,... with non-negative integer sizes"),
    ("shape-without-name", ["partition", "{tmp}/dynamic.onnx", "-t", "ccompiler", "--shape", "1,4"],
     "--shape 1,4: expected NAME=D1,D2,..."),
    ("shape-for-a-zoo-model", ["partition", "mlp", "-t", "ccompiler", "--shape", "x=1,32"],
     "input shapes can only be given for ONNX models; mlp has its shapes in it"),
]


def _dynamic_onnx() -> bytes:
    """Relu over x: float32[N, 4], N dynamic."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "dynamic", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


# Files the ERRORS rows name as {tmp}/<name>.
BAD_FILES = {"bad.txt": b"garbage {{{\n", "binary.txt": b"\xff\xfe\x00garbage",
             "bool.txt": b"def @main(%x: Tensor[(2), bool]) { add(%x, %x) }\n", "dynamic.onnx": _dynamic_onnx()}


@pytest.mark.parametrize("args,fragment", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_exit_2_without_traceback(args, fragment, tmp_path):
    for name, data in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    proc = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert proc.returncode == 2
    assert fragment.replace("{tmp}", str(tmp_path)) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_disabled_target_names_its_flag(tmp_path):
    """A config.toml in the working directory that turns dnnl off: naming it says which flag to set."""
    (tmp_path / "config.toml").write_text((ROOT / "config.toml").read_text().replace("USE_DNNL = true",
                                                                                     "USE_DNNL = false"))
    proc = run_cli("partition", "mlp", "-t", "dnnl", cwd=tmp_path)
    assert proc.returncode == 2
    assert "set USE_DNNL = true in [backends]" in proc.stderr and "Traceback" not in proc.stderr


def test_partition_dynamic_onnx_with_shape(tmp_path):
    model = tmp_path / "dynamic.onnx"
    model.write_bytes(_dynamic_onnx())
    proc = run_cli("partition", str(model), "-t", "ccompiler", "--shape", "x=3,4", "--print")
    assert proc.returncode == 0, proc.stderr
    assert "%x: Tensor[(3, 4), float32]" in proc.stdout and 'Compiler="ccompiler"' in proc.stdout


def test_main_in_process_returns_exit_code(capsys):
    assert main(["partition", "mlp", "-t", "ccompile"]) == 2
    assert "unknown target" in capsys.readouterr().err


def test_partition_print_after_shows_the_module_after_that_pass():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "byoc_compiler", "partition", "byoc_guide", "-t", "ccompiler",
                           "--print-after", "AnnotateTarget", "--print-after", "PartitionGraph"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "// ---- after AnnotateTarget ----" in proc.stdout
    after_annotate, after_partition = proc.stdout.split("// ---- after PartitionGraph ----")
    assert 'Compiler="ccompiler"' in after_partition
    # the annotations AnnotateTarget wrote (node meta) follow their bindings; PartitionGraph consumed them
    assert "/* region=ccompiler:0 */" in after_annotate and "region=" not in after_partition


def test_printed_meta_is_a_comment_the_parser_ignores():
    from byoc_compiler import partition_for, zoo
    from byoc_compiler.ir.printer import astext
    from byoc_compiler.ir import structural_equal
    from byoc_compiler.text import parse

    after = {}
    partition_for("ccompiler", zoo.get("mlp"), trace=lambda name, module: after.setdefault(name, module))
    annotated = after["AnnotateTarget"]
    text = astext(annotated, show_meta=True)
    assert "/* region=ccompiler:0 */" in text and "region=" not in astext(annotated)
    assert structural_equal(parse(text), parse(astext(annotated)))


def test_partition_print_after_unknown_pass_is_one_clear_error():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "byoc_compiler", "partition", "byoc_guide", "-t", "ccompiler",
                           "--print-after", "Annotate"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "no such pass; the pipeline is InferType -> FoldConstant" in proc.stderr
    assert "Traceback" not in proc.stderr
