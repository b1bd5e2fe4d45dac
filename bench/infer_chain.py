"""InferType (and visitor, mutator, printer, reference) on a 100,000-node chain.

Acceptance: median InferType under 2 s. The peer figure is numpy applying the
same 100,000 elementwise ops to a small array, measured in the same run; the
ratio is informative only.

    python bench/infer_chain.py [--length 100000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from byoc_compiler import op
from byoc_compiler.ir import ExprMutator, ExprVisitor, Function, IRModule, TensorType, Var
from byoc_compiler.testing import run_reference
from byoc_compiler.transform.infer_type import infer_type


def build_chain(length: int) -> IRModule:
    x = Var("x", TensorType((4,), "float32"))
    value = x
    for i in range(length):
        value = op.add(value, x) if i % 2 == 0 else op.nn.relu(value)
    return IRModule.from_expr(Function([x], value))


def numpy_peer(length: int, x: np.ndarray) -> np.ndarray:
    value = x
    for i in range(length):
        value = np.add(value, x) if i % 2 == 0 else np.maximum(value, 0)
    return value


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    mod = build_chain(args.length)
    build = time.perf_counter() - start
    body = mod["main"].body
    x = np.ones(4, np.float32)

    rows = [("build (op constructors)", build)]
    rows.append(("InferType", median_seconds(lambda: infer_type(mod), args.repeat)))
    rows.append(("ExprVisitor", median_seconds(lambda: ExprVisitor().visit(body), args.repeat)))
    rows.append(("ExprMutator (identity)", median_seconds(lambda: ExprMutator().visit(body), args.repeat)))
    try:
        from byoc_compiler.ir.printer import astext

        rows.append(("printer astext", median_seconds(lambda: astext(mod), args.repeat)))
    except ImportError:
        rows.append(("printer astext (not available)", float("nan")))
    rows.append(("run_reference", median_seconds(lambda: run_reference(mod, [x]), args.repeat)))
    peer = median_seconds(lambda: numpy_peer(args.length, x), args.repeat)

    print(f"{args.length} nodes, median of {args.repeat} runs")
    for name, seconds in rows:
        print(f"  {name:32s} {seconds:8.3f} s   {seconds / peer:6.2f}x numpy")
    print(f"  {'numpy peer (same ops, 4 floats)':32s} {peer:8.3f} s")
    infer = rows[1][1]
    print(f"InferType acceptance (< 2 s): {'PASS' if infer < 2.0 else 'FAIL'} ({infer:.3f} s)")


if __name__ == "__main__":
    main()
