"""External functions in the build: a C-source target with a constant bound in its source and a blob
target with its own C runtime module, in every executor x interface; constants kept as arguments reach
them as params; codegen failures and unknown targets give one clear message."""
import textwrap

import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler import ctext
from byoc_compiler.backend.artifact import BlobArtifact, CSourceArtifact
from byoc_compiler.backend.build import build
from byoc_compiler.target import Target, register_target, unregister_target
from byoc_compiler.errors import ByocError
from byoc_compiler.ir import Call, Function, GlobalVar, IRModule, Var, const
from byoc_compiler.ir.types import TensorType

SHAPE = (2, 4)
SCALE_IN_C = np.array([1.0, -2.0, 0.5, 3.0], np.float32)     # bound in the C region's source
BLOB_FACTOR = 2.5                                             # carried by the blob


def _c_codegen(func, symbol):
    t = TensorType(SHAPE, "float32")
    values = ", ".join(f"{float(v).hex()}f" for v in SCALE_IN_C)
    code = textwrap.dedent(f"""\
        #include <stdint.h>
        static const float {symbol}_scale[4] = {{{values}}};
        static int32_t {symbol}_(const float* in0, float* out0) {{
          int i;
          for (i = 0; i < 8; ++i) out0[i] = in0[i] * {symbol}_scale[i % 4];
          return 0;
        }}
        """) + ctext.entry_points(symbol, f"{symbol}_", [t], [t])
    return CSourceArtifact(symbol, {f"{symbol}.c": code})


_BLOB_RUNTIME = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <byoc/runtime.h>

/* blob text: "<symbol> <factor>"; the function computes out = (in0 + in1) * factor on 8 floats */
typedef struct { char symbol[64]; float factor; } FakeModule;

static int32_t fake_run(const ByocValue* args, const int32_t* codes, int32_t n, void* resource) {
  const FakeModule* m = (const FakeModule*)resource;
  const DLTensor* a;
  const DLTensor* b;
  const DLTensor* o;
  int i;
  if (byoc_check_packed_args(m->symbol, codes, n, 3) != 0) return -1;
  a = (const DLTensor*)args[0].v_handle;
  b = (const DLTensor*)args[1].v_handle;
  o = (const DLTensor*)args[2].v_handle;
  for (i = 0; i < 8; ++i) ((float*)o->data)[i] = (((const float*)a->data)[i] + ((const float*)b->data)[i]) * m->factor;
  return 0;
}
static int32_t fake_create(const char* blob, size_t len, void** out) {
  char text[128];
  FakeModule* m;
  if (len == 0 || len >= sizeof(text)) { byoc_set_last_error("fakeblob: bad blob length %d", (int)len); return -1; }
  memcpy(text, blob, len);
  text[len] = '\0';
  m = (FakeModule*)calloc(1, sizeof(FakeModule));
  if (m == NULL) return -1;
  if (sscanf(text, "%63s %f", m->symbol, &m->factor) != 2) {
    free(m);
    byoc_set_last_error("fakeblob: cannot parse blob");
    return -1;
  }
  *out = m;
  return 0;
}
static int32_t fake_get_function(void* module, const char* symbol, ByocPackedFunc* fn, void** res) {
  FakeModule* m = (FakeModule*)module;
  if (strcmp(symbol, m->symbol) != 0) { byoc_set_last_error("fakeblob: no function %s", symbol); return -1; }
  *fn = fake_run;
  *res = m;
  return 0;
}
static void fake_destroy(void* module) { free(module); }
const ByocModuleKind byoc_module_kind_fakeblob = {"fakeblob", fake_create, fake_get_function, fake_destroy, NULL};
"""


@pytest.fixture(scope="module")
def fake_targets(tmp_path_factory):
    runtime = tmp_path_factory.mktemp("fakeblob") / "fakeblob_runtime.c"
    runtime.write_text(_BLOB_RUNTIME)
    c_target = Target("fakec")
    c_target.codegen = _c_codegen
    blob_target = Target("fakeblob")
    blob_target.codegen = lambda func, symbol: BlobArtifact(
        symbol, "fakeblob", f"{symbol} {BLOB_FACTOR}".encode(), text=f"fakeblob region {symbol}",
        runtime_sources=[runtime])
    bad = Target("fakebad")
    bad.codegen = lambda func, symbol: 1 / 0
    for t in (c_target, blob_target, bad):
        register_target(t)
    yield
    for t in (c_target, blob_target, bad):
        unregister_target(t.name)


def _region(target, symbol, n_inputs, body_fn):
    params = [Var(f"r{i}", TensorType(SHAPE, "float32")) for i in range(n_inputs)]
    return Function(params, body_fn(*params), attrs={"Compiler": target, "global_symbol": symbol, "Primitive": 1,
                                                     "Inline": 1})


BIAS = np.linspace(-1, 1, 8, dtype=np.float32).reshape(SHAPE)


def _partitioned(c_target="fakec"):
    """main(x) = fakeblob_0(relu(fakec_0(x)), BIAS); BIAS is a constant kept as an argument."""
    x = Var("x", TensorType(SHAPE, "float32"))
    a = Call(GlobalVar("fakec_0"), [x])
    b = op.nn.relu(a)
    c = Call(GlobalVar("fakeblob_0"), [b, const(BIAS)])
    return IRModule({
        "main": Function([x], c),
        "fakec_0": _region(c_target, "fakec_0", 1, lambda r: op.multiply(r, const(SCALE_IN_C))),
        "fakeblob_0": _region("fakeblob", "fakeblob_0", 2, lambda r, s: op.multiply(op.add(r, s), const(2.5))),
    })


def _expected(x):
    return (np.maximum(x * SCALE_IN_C, 0) + BIAS) * np.float32(BLOB_FACTOR)


COMBOS = [(e, i) for e in ("graph", "aot") for i in ("packed", "unpacked")]


@pytest.mark.parametrize("executor,interface", COMBOS, ids=[f"{e}-{i}" for e, i in COMBOS])
def test_regions_run_in_every_executor_and_interface(fake_targets, executor, interface):
    lib = build(_partitioned(), executor=executor, interface=interface)
    assert lib.metadata["targets"] == ["fakeblob", "fakec"]
    assert [r["symbol"] for r in lib.metadata["regions"]] == ["fakec_0", "fakeblob_0"]
    assert list(lib.params) == ["p0"]                       # the kept-as-argument constant is a param
    np.testing.assert_array_equal(lib.params["p0"], BIAS)
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(SHAPE)
    m = lib.load(werror=True)
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0), _expected(x), rtol=1e-6)
    np.testing.assert_allclose(lib.run_runner([x], werror=True)[0], _expected(x), rtol=1e-6)


def test_region_sources_and_export(fake_targets, tmp_path):
    lib = build(_partitioned(), executor="aot", interface="unpacked")
    assert "fakec_0_scale" in lib.get_source("fakec")
    assert lib.get_source("fakeblob") == "fakeblob region fakeblob_0"
    assert "fakec_0_scale" not in lib.get_source()          # the region's constant stays in its own file
    out = lib.export(tmp_path / "exp")
    assert (out / "src/fakec/fakec_0.c").read_text() == lib.artifacts["fakec_0"].sources["fakec_0.c"]
    assert (out / "src/fakeblob/fakeblob_0.fakeblob").read_bytes() == f"fakeblob_0 {BLOB_FACTOR}".encode()


def test_codegen_failure_names_target_and_region(fake_targets):
    with pytest.raises(ByocError, match=r"codegen of target 'fakebad' failed for region fakec_0: "
                                        r"ZeroDivisionError"):
        build(_partitioned("fakebad"))


def test_unknown_target_gives_registry_message(fake_targets):
    with pytest.raises(ByocError, match=r"unknown target 'nosuchtarget'.*known targets"):
        build(_partitioned("nosuchtarget"))


def test_region_symbol_must_be_identifier(fake_targets):
    mod = _partitioned()
    bad = mod["fakec_0"].with_attr(global_symbol="fake c;0")
    with pytest.raises(ByocError, match="not a valid C identifier"):
        build(mod.with_function("fakec_0", bad))


@pytest.mark.parametrize("executor,interface", [("aot", "unpacked"), ("graph", "packed")],
                         ids=["aot-unpacked", "graph-packed"])
def test_regions_under_asan_ubsan(fake_targets, executor, interface):
    lib = build(_partitioned(), toolchain="gcc-asan-ubsan", executor=executor, interface=interface)
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(SHAPE)
    np.testing.assert_allclose(lib.run_runner([x], werror=True)[0], _expected(x), rtol=1e-6)


def test_two_regions_with_one_symbol_are_rejected(fake_targets):
    mod = _partitioned()
    clash = mod["fakeblob_0"].with_attr(global_symbol="fakec_0")
    with pytest.raises(ByocError, match="share the global_symbol 'fakec_0'"):
        build(mod.with_function("fakeblob_0", clash))


def test_two_regions_with_the_same_file_name(tmp_path):
    target = Target("fakec_samefile")
    target.codegen = lambda func, symbol: CSourceArtifact(
        symbol, {"region.c": _c_codegen(func, symbol).sources[f"{symbol}.c"]})
    register_target(target)
    try:
        x = Var("x", TensorType(SHAPE, "float32"))
        body = Call(GlobalVar("r_1"), [Call(GlobalVar("r_0"), [x])])
        mod = IRModule({"main": Function([x], body),
                        **{f"r_{i}": _region("fakec_samefile", f"fakec_same_{i}", 1,
                                             lambda r: op.multiply(r, const(SCALE_IN_C))) for i in range(2)}})
        lib = build(mod, executor="aot")
        assert sorted(p for p in lib.sources() if p != "src/host.c") == [
            "src/fakec_samefile/fakec_same_1_region.c", "src/fakec_samefile/region.c"]
        x_val = np.linspace(-2, 2, 8, dtype=np.float32).reshape(SHAPE)
        np.testing.assert_allclose(lib.run_runner([x_val], werror=True)[0], x_val * SCALE_IN_C * SCALE_IN_C,
                                   rtol=1e-6)
    finally:
        unregister_target(target.name)
