"""Targets load lazily and separately: partitioning for one target imports its declaration only, never
another target's modules nor its own codegen; building imports its build side (Target.build_side)."""
import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
import byoc_compiler as byoc
from byoc_compiler import zoo
mod = zoo.get("small_cnn")
part = byoc.partition_for({targets!r}, mod)
{then}
print(json.dumps(sorted(m for m in sys.modules if m.startswith("byoc_compiler.contrib."))))
"""

# (id, targets partitioned for, what runs after, modules that must be loaded, prefixes that must not be)
CASES = [
    pytest.param("ccompiler", "", ["byoc_compiler.contrib.ccompiler"],
                 ["byoc_compiler.contrib.dnnl", "byoc_compiler.contrib.examplejson",
                  "byoc_compiler.contrib.ccompiler.codegen", "byoc_compiler.contrib.ccompiler.build"],
                 id="partition-ccompiler"),
    pytest.param("dnnl", "", ["byoc_compiler.contrib.dnnl"],
                 ["byoc_compiler.contrib.ccompiler", "byoc_compiler.contrib.examplejson",
                  "byoc_compiler.contrib.dnnl.codegen"], id="partition-dnnl"),
    pytest.param("ccompiler", "byoc.build(part, toolchain='gcc')",
                 ["byoc_compiler.contrib.ccompiler.build", "byoc_compiler.contrib.ccompiler.codegen"],
                 ["byoc_compiler.contrib.dnnl", "byoc_compiler.contrib.examplejson"], id="build-ccompiler"),
]


def loaded_after(targets, then: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(targets=targets, then=then)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("targets, then, present, absent", CASES)
def test_partitioning_imports_only_the_named_target(targets, then, present, absent):
    loaded = loaded_after(targets, then)
    for name in present:
        assert name in loaded, loaded
    strays = [m for m in loaded if any(m == p or m.startswith(p + ".") for p in absent)]
    assert not strays, f"partition_for({targets!r}) imported {strays}"


def test_a_broken_build_side_is_one_sentence_naming_the_target():
    from byoc_compiler.errors import ByocError
    from byoc_compiler.target import Target

    target = Target("tbroken").build_side("no_such_module_for_byoc_tests.build")
    assert target.ops == {}          # the declaration itself is usable
    with pytest.raises(ByocError, match=r"target 'tbroken': importing its build side "
                                        r"no_such_module_for_byoc_tests\.build failed: ModuleNotFoundError"):
        target.codegen
