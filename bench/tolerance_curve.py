"""The check's allowance factor, chosen from a measured curve: false failures and caught bugs per factor.

    python bench/tolerance_curve.py                          # 10,000 random graphs, 1,000 of them and the tiny zoo
                                                             #   built as C (host C and ccompiler, 100 per build)
    python bench/tolerance_curve.py --graphs 1000 --built 0  # quick
    python bench/tolerance_curve.py --realsize               # + ResNet-50 and MobileNetV2 at 224x224

The check passes an element when |got - ref| <= SAFETY * e, e the per-element allowance unit of
testing/tolerance.py (the error estimate, its floor, or the stated fallback). The factor a result needs
is the smallest SAFETY under which it passes: margin * SAFETY. Measured here:

* correct float32 computations, which every factor must pass: random graphs (testing/random_graph/,
  12 ops, seeds 0..N-1) computed by the float32 numpy reference (an independent float32 computation
  of every op); the zoo's models by the float32 reference and onnxruntime at 1 and 2 threads; and
  --built random graphs and the tiny zoo built as C and run (host C and ccompiler, gcc; the graphs 100
  side by side per build: one library for 100 graphs);
* injected bugs (testing/injected.py: what a kernel with that defect computes), which a factor should
  catch: on the tiny zoo models, and BatchNorm without its epsilon in 8-layer conv + BatchNorm nets.

Printed: per factor, the false failures and the bugs caught; the smallest factor without a false failure
(the largest factor any correct result needs) and the choice, twice that (docs/matrix.md records it).
Rerun whenever kernels change their accumulation order, or the estimate changes.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from byoc_compiler import build, partition_for, zoo  # noqa: E402
from byoc_compiler.check import deterministic_inputs  # noqa: E402
from byoc_compiler.testing import run_reference  # noqa: E402
from byoc_compiler.testing.error_bound import reference_with_errors  # noqa: E402
from byoc_compiler.testing.injected import BUGS, SUBTLE, calls, conv_bn_net, without_epsilon  # noqa: E402
from byoc_compiler.testing.random_graph import random_recipe  # noqa: E402
from byoc_compiler.testing.side_by_side import join  # noqa: E402
from byoc_compiler.testing.tolerance import SAFETY, compare_with_bounds  # noqa: E402
from models import _onnx_bytes, _ort_session  # noqa: E402 - bench/models.py: the same onnxruntime session

FACTORS = (1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 16)
TINY = ("resnet50_tiny", "mobilenetv2_tiny")
BN_SEEDS = (0, 1, 2)


def needed(outputs, expected) -> float:
    """The smallest SAFETY under which `outputs` pass (every allowance term scales with SAFETY)."""
    return compare_with_bounds(outputs, expected).margin * SAFETY


def _onnxruntime(name, inputs, threads):
    return _ort_session(_onnx_bytes(name), threads).run(None, inputs)


def random_graphs(count: int):
    for seed in range(count):
        mod = random_recipe(seed, steps=12).to_module()
        inputs = deterministic_inputs(mod)
        yield f"random{seed} float32 reference", needed(run_reference(mod, inputs), reference_with_errors(mod, inputs))


def zoo_models(names):
    for name in names:
        mod = zoo.get(name)
        inputs = deterministic_inputs(mod)
        expected = reference_with_errors(mod, inputs)
        yield f"{name} float32 reference", needed(run_reference(mod, inputs), expected)
        for threads in (1, 2):
            yield f"{name} onnxruntime {threads} thread(s)", needed(_onnxruntime(name, inputs, threads), expected)


def built(count: int, batch: int = 100):
    """Random graphs 0..count-1 and the tiny zoo through C: host C and ccompiler on gcc. The random graphs
    are built `batch` at a time, side by side in one main (testing/side_by_side.py): one library each."""
    graphs = [(f"random{s}", random_recipe(s, steps=12).to_module()) for s in range(count)]
    groups = [graphs[i:i + batch] for i in range(0, count, batch)] + [[(name, zoo.get(name))] for name in TINY]
    for group in groups:
        joined = join([mod for _, mod in group])
        inputs = [deterministic_inputs(mod) for _, mod in group]
        expected = [reference_with_errors(mod, feeds) for (_, mod), feeds in zip(group, inputs)]
        for target in ("host", "ccompiler"):
            part = joined.mod if target == "host" else partition_for("ccompiler", joined.mod)
            outputs = joined.split(build(part, toolchain="gcc", opt="-O2").run_runner(joined.inputs(inputs)))
            factors = [needed(got, want) for got, want in zip(outputs, expected)]
            print(f"  built {group[0][0]}..{group[-1][0]} {target}: largest factor needed {max(factors):.2f}",
                  flush=True)
            for (label, _), factor in zip(group, factors):
                yield f"{label} {target} C (gcc)", factor


def bugs():
    for name in TINY:
        mod = zoo.get(name)
        inputs = deterministic_inputs(mod)
        expected = reference_with_errors(mod, inputs)
        for bug, (op_name, index, fn) in {**BUGS, **SUBTLE}.items():
            wrong = run_reference(mod, inputs, overrides={calls(mod, op_name)[index]: fn})
            yield f"{name}: {bug}", needed(wrong, expected)
    for seed in BN_SEEDS:
        mod = conv_bn_net(seed=seed)
        inputs = deterministic_inputs(mod)
        yield (f"conv_bn_net seed {seed}: batch_norm_without_epsilon",
               needed(run_reference(mod, inputs, overrides=without_epsilon(mod)), reference_with_errors(mod, inputs)))


def curve(correct: dict, wrong: dict) -> list[tuple]:
    return [(f, sum(n > f for n in correct.values()), sum(n > f for n in wrong.values())) for f in FACTORS]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", type=int, default=10_000, help="random graphs at the reference level")
    parser.add_argument("--built", type=int, default=1000, help="random graphs also built as C (host, ccompiler)")
    parser.add_argument("--realsize", action="store_true", help="also ResNet-50 and MobileNetV2 at 224x224")
    parser.add_argument("--json", help="write every measured factor here")
    args = parser.parse_args(argv)
    start = time.time()
    correct = dict(random_graphs(args.graphs))
    correct.update(zoo_models(TINY + (tuple(zoo.FULL_SIZE) if args.realsize else ())))
    correct.update(built(args.built))
    wrong = dict(bugs())
    print(f"{len(correct)} correct results, {len(wrong)} injected bugs ({time.time() - start:.0f} s)")
    print(f"{'factor':>7} {'false failures':>15} {'bugs caught':>12}")
    for f, false_failures, caught in curve(correct, wrong):
        print(f"{f:>7g} {false_failures:>7} of {len(correct):<6} {caught:>4} of {len(wrong)}")
    worst = sorted(correct.items(), key=lambda kv: kv[1])[-5:]
    print("largest factors needed by correct results:", ", ".join(f"{k} {v:.2f}" for k, v in worst))
    print("smallest factors needed by bugs:", ", ".join(f"{k} {v:.3g}" for k, v in
                                                        sorted(wrong.items(), key=lambda kv: kv[1])[:5]))
    smallest = max(correct.values())
    choice = 2 * smallest
    print(f"smallest factor without a false failure: {smallest:.2f}; choice (twice that): {choice:.2f}; "
          f"bugs caught at the choice: {sum(n > choice for n in wrong.values())} of {len(wrong)}; "
          f"SAFETY in testing/tolerance.py: {SAFETY:g}")
    if args.json:
        Path(args.json).write_text(json.dumps({"correct": correct, "bugs": wrong}, indent=1,
                                              default=lambda v: None if math.isinf(v) else v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
