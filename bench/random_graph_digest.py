"""A digest of the random graphs of a range of seeds: the same digest before and after a change to
testing/random_graph/ proves the change kept every seed's graph (the matrix's random cases depend on it).

    python bench/random_graph_digest.py [--seeds 2000] [--steps 12 14 20]

Prints one sha256 per step count over the recipes (testing/random_graph: values, attributes, outputs) of
seeds 0..N-1, and one over the text IR of the first 100. Adding an op changes every digest (the draw
order includes it): compare across commits with the same op set.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from byoc_compiler.testing.random_graph import random_recipe  # noqa: E402


def digest(seeds: int, steps: int, text: bool = False) -> str:
    h = hashlib.sha256()
    for seed in range(seeds):
        recipe = random_recipe(seed, steps=steps)
        h.update((recipe.to_text() if text else recipe.to_json()).encode())
    return h.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--steps", type=int, nargs="+", default=[12, 14, 20])
    args = parser.parse_args()
    for steps in args.steps:
        print(f"recipes seeds 0-{args.seeds - 1} steps {steps}: {digest(args.seeds, steps)}")
    print(f"text IR seeds 0-99 steps 12: {digest(100, 12, text=True)}")


if __name__ == "__main__":
    main()
