"""The target plugin API and registry: listing, discovery from config.toml, and one-sentence errors."""
import textwrap

import pytest

import byoc_compiler
from byoc_compiler import op
from byoc_compiler.backend.target import require_codegen
from byoc_compiler.target import (Target, TargetError, all_of, float32_only, get_target, get_targets, register_target,
                                reload_targets, unregister_target)
from byoc_compiler.errors import ByocError
from byoc_compiler.ir import IRModule, TensorType, Var
from byoc_compiler.op.registry import OpError
from byoc_compiler.transform import infer_type


@pytest.fixture
def fresh_registry():
    reload_targets()
    yield
    reload_targets()


def typed_call(call):
    infer_type(IRModule.from_expr(call))
    return call


def test_targets_lists_builtin_targets_with_flags():
    rows = {t.name: t for t in byoc_compiler.targets()}
    assert rows["ccompiler"].flag == "USE_CODEGENC" and rows["ccompiler"].enabled
    assert rows["examplejson"].flag == "USE_EXAMPLEJSON" and rows["examplejson"].enabled
    assert rows["dnnl"].flag == "USE_DNNL" and rows["dnnl"].enabled and rows["dnnl"].archs == ("x86_64",)
    assert "nn.conv2d" in rows["ccompiler"].ops
    assert "ccompiler.conv2d_bias_relu" in rows["ccompiler"].patterns


@pytest.mark.parametrize("name,ops_in,ops_out", [
    ("ccompiler", ["add", "nn.conv2d", "nn.batch_norm", "concatenate", "nn.matmul", "clip", "nn.softmax"],
     ["nn.lrn", "take"]),
    ("examplejson", ["add", "nn.conv2d", "nn.softmax", "reshape"], ["nn.lrn", "nn.batch_norm"]),
])
def test_declared_op_support(name, ops_in, ops_out):
    t = get_target(name)
    assert all(o in t.ops for o in ops_in)
    assert not any(o in t.ops for o in ops_out)


def test_ccompiler_patterns_longest_first():
    names = [p.name for p in get_target("ccompiler").patterns]
    assert names.index("conv2d_bias_relu") < names.index("conv2d_bias")
    assert names.index("dense_bias_relu") < names.index("dense_bias")


ERRORS = [
    ("unknown-with-hint", lambda: get_target("ccompile"), ["unknown target 'ccompile'", "did you mean 'ccompiler'",
                                                            "ccompiler", "examplejson"]),
    ("unknown-no-hint", lambda: get_target("tensorrt"), ["unknown target 'tensorrt'", "known targets"]),
    ("no-codegen", lambda: require_codegen("tnocg"), ["target 'tnocg' declares no codegen",
                                                      "set `target.codegen`"]),
    ("none-given", lambda: get_targets(None), ["no target given", "targets=['ccompiler']"]),
    ("empty-list", lambda: get_targets([]), ["no target given", "targets=['ccompiler']"]),
]


@pytest.mark.parametrize("call,fragments", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_fix(call, fragments):
    register_target(Target("tnocg"))
    try:
        with pytest.raises(ByocError) as info:
            call()
    finally:
        unregister_target("tnocg")
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_disabled_target_names_its_flag(tmp_path, monkeypatch, fresh_registry):
    from pathlib import Path

    config = tmp_path / "config.toml"
    repo_config = Path(byoc_compiler.__file__).resolve().parent.parent / "config.toml"
    config.write_text(repo_config.read_text().replace("USE_DNNL = true", "USE_DNNL = false"))
    monkeypatch.setenv("BYOC_CONFIG", str(config))
    reload_targets()
    with pytest.raises(ByocError) as info:
        get_target("dnnl")
    message = str(info.value)
    assert "\n" not in message
    assert "target 'dnnl' is disabled" in message and f"set USE_DNNL = true in [backends] of {config}" in message


def test_disabled_target_is_found_when_not_required_enabled():
    assert get_target("examplejson", enabled_only=False).name == "examplejson"


def test_supports_rejects_unknown_op_with_hint():
    with pytest.raises(OpError, match="nn.conv2d"):
        Target("tx").supports("nn.conv2")


@pytest.mark.parametrize("name", ["", "a b", "x;y"])
def test_target_name_must_be_identifier_like(name):
    with pytest.raises(TargetError):
        Target(name)


def test_duplicate_pattern_name_rejected():
    from byoc_compiler.pattern import wildcard

    t = Target("tdup")
    t.pattern("p", wildcard())
    with pytest.raises(TargetError, match="twice"):
        t.pattern("p", wildcard())


def test_predicate_reasons():
    t = Target("tpred")
    t.supports("nn.conv2d", predicate=lambda call: None if call.attrs.groups == 1 else "groups != 1")
    t.supports("add", predicate=float32_only)
    x = Var("x", TensorType((1, 4, 8, 8)))
    w = Var("w", TensorType((4, 1, 3, 3)))
    i = Var("i", TensorType((2,), "int32"))
    assert t.check(typed_call(op.nn.conv2d(x, w, groups=4))) == "groups != 1"
    assert t.check(typed_call(op.add(i, i))) == "dtype int32 not supported"
    assert t.check(typed_call(op.add(x, x))) is None
    assert t.check(typed_call(op.exp(x))) == "does not support exp"


# (id, what the predicate returns, what Target.check answers, alone and as the second of all_of)
VERDICTS = [
    ("none-accepts", None, None),
    ("true-accepts", True, None),
    ("false-rejects", False, "rejected by its predicate"),
    ("string-is-the-reason", "too big", "too big"),
]


@pytest.mark.parametrize("verdict,answer", [c[1:] for c in VERDICTS], ids=[c[0] for c in VERDICTS])
def test_predicate_verdicts(verdict, answer):
    x = Var("x", TensorType((2,)))
    call = typed_call(op.add(x, x))
    alone = Target("talone").supports("add", predicate=lambda c: verdict)
    both = Target("tboth").supports("add", predicate=all_of(float32_only, lambda c: verdict))
    assert alone.check(call) == answer
    assert both.check(call) == answer


# (id, shape of x in add(x, x), what ccompiler's predicate answers): its kernels take at most 8 dims
CCOMPILER_RANKS = [
    ("rank-8", (1,) * 7 + (2,), None),
    ("rank-9", (1,) * 8 + (2,), "rank 9 is above the limit of 8"),
]


@pytest.mark.parametrize("shape,verdict", [c[1:] for c in CCOMPILER_RANKS], ids=[c[0] for c in CCOMPILER_RANKS])
def test_ccompiler_leaves_tensors_above_its_rank_limit_on_the_host(shape, verdict):
    x = Var("x", TensorType(shape))
    assert get_target("ccompiler").check(typed_call(op.add(x, x))) == verdict


def test_register_twice_with_another_object_fails():
    a = register_target(Target("ttwice"))
    try:
        assert register_target(a) is a
        with pytest.raises(TargetError, match="already registered"):
            register_target(Target("ttwice"))
    finally:
        unregister_target("ttwice")


def write_config(tmp_path, backends: str, targets: str = "") -> str:
    path = tmp_path / "config.toml"
    path.write_text(f"[backends]\n{backends}\n[targets]\n{targets}\n")
    return str(path)


def test_config_disables_and_extra_target_by_module(tmp_path, monkeypatch, fresh_registry):
    plugin = tmp_path / "my_vendor_target.py"
    plugin.write_text(textwrap.dedent("""
        from byoc_compiler.vendor import Target
        target = Target("myvendor", flag="USE_MYVENDOR")
        target.supports("add")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = write_config(tmp_path, "USE_CODEGENC = true\nUSE_EXAMPLEJSON = false\nUSE_MYVENDOR = true",
                       'myvendor = { module = "my_vendor_target", flag = "USE_MYVENDOR" }')
    monkeypatch.setenv("BYOC_CONFIG", cfg)
    reload_targets()
    rows = {t.name: t for t in byoc_compiler.targets()}
    assert rows["myvendor"].enabled and rows["myvendor"].ops == ("add",)
    assert rows["myvendor"].module == "my_vendor_target"
    assert not rows["examplejson"].enabled
    assert get_target("myvendor").flag == "USE_MYVENDOR"
    with pytest.raises(ByocError, match=f"set USE_EXAMPLEJSON = true in \\[backends\\] of {cfg}"):
        get_target("examplejson")


def test_config_target_module_missing_is_reported(tmp_path, monkeypatch, fresh_registry):
    cfg = write_config(tmp_path, "USE_GHOST = true", 'ghost = { module = "no_such_module_xyz", flag = "USE_GHOST" }')
    monkeypatch.setenv("BYOC_CONFIG", cfg)
    reload_targets()
    with pytest.raises(ByocError, match="target 'ghost' could not be loaded: module no_such_module_xyz not found"):
        get_target("ghost")


def test_crashing_predicate_is_named():
    t = Target("tcrash")
    t.supports("add", predicate=lambda call: call.attrs.no_such_attr)
    x = Var("x", TensorType((2,)))
    with pytest.raises(TargetError, match="target 'tcrash': the predicate for add raised AttributeError"):
        t.check(typed_call(op.add(x, x)))


def test_broken_plugin_is_listed_not_fatal(tmp_path, monkeypatch, fresh_registry):
    (tmp_path / "broken_vendor.py").write_text("raise RuntimeError('vendor bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = write_config(tmp_path, "USE_CODEGENC = true\nUSE_BROKEN = true", 'broken = { module = "broken_vendor", flag = "USE_BROKEN" }')
    monkeypatch.setenv("BYOC_CONFIG", cfg)
    reload_targets()
    rows = {t.name: t for t in byoc_compiler.targets()}
    assert rows["broken"].error == "importing broken_vendor failed: RuntimeError: vendor bug"
    assert get_target("ccompiler").name == "ccompiler"


def test_partition_for_target_spelling():
    from byoc_compiler.contrib.ccompiler import partition_for_ccompiler

    mod = partition_for_ccompiler(byoc_compiler.zoo.get("mlp"))
    assert {f.attrs["Compiler"] for f in mod.functions.values() if "Compiler" in f.attrs} == {"ccompiler"}
