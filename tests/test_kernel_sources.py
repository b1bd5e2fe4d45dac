"""Which files of a target's C library a build compiles (backend/kernel_sources.py): the ones its generated
code references, closed over their own references, functions and objects alike; and the signature that
makes SCons plan again only when an edit changes that choice."""
from pathlib import Path

import pytest

from byoc_compiler import build, partition_for, zoo
from byoc_compiler.backend.kernel_sources import defined_functions, link_signature, used_sources


@pytest.fixture
def library(tmp_path):
    files = {
        "a.c": "#include \"lib.h\"\nint lib_a(int x) { return lib_b(x) + 1; }\n",
        "b.c": "int lib_b(int x) { return 2 * x; }\n",
        "c.c": "int lib_c(int x) { return 3 * x; }\n",
        "kind.c": "static int helper(void) { return 0; }\nconst struct kind lib_kind_mine = {\"mine\", 0};\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [tmp_path / name for name in files]


@pytest.mark.parametrize("root, wanted", [
    pytest.param("lib_a(1);", ["a.c", "b.c"], id="call-closes-over-callee"),
    pytest.param("lib_c(1);", ["c.c"], id="one-file"),
    pytest.param("&lib_kind_mine", ["kind.c"], id="object-definition"),
    pytest.param("nothing here", [], id="none"),
])
def test_used_sources(library, root, wanted):
    assert [p.name for p in used_sources([root], library)] == wanted


def test_definitions_are_functions_and_file_scope_objects_not_statics():
    assert defined_functions("static int f(void) { return 0; }\nint g(void) { return 1; }\n") == {"g"}
    assert defined_functions("const int table[4] = {1};\nstatic const int hidden = 2;\n"
                             "int use(void) {\n  int local = 3;\n  return local;\n}\n") == {"table", "use"}


@pytest.mark.parametrize("edit, replans", [
    pytest.param("/* a comment */\n", False, id="comment"),
    pytest.param("int lib_a2(int x) { return x; }\n", True, id="new-definition"),
    pytest.param("int lib_a3(int x) { return lib_c(x); }\n", True, id="new-call-into-another-file"),
])
def test_link_signature_changes_only_with_what_a_build_needs(library, edit, replans):
    before = link_signature(library)
    library[0].write_text(library[0].read_text() + edit)
    assert (link_signature(library) != before) == replans


def test_a_float_model_compiles_none_of_the_int8_kernels():
    lib = build(partition_for("ccompiler", zoo.get("mlp")), executor="aot", interface="unpacked")
    names = {Path(src).name for src, _ in lib.library_sources()}
    assert "ck_dense.c" in names or "ck_gemm.c" in names
    assert not names & {"ck_qgemm.c", "ck_qconv.c", "ck_qelementwise.c"}, sorted(names)
