"""A manifest of the generated code of every zoo model, to check that a refactoring changes none of it.

For each zoo model x target (host-only, ccompiler, examplejson, dnnl) x (graph executor + packed calls,
AOT + unpacked calls) it partitions, runs `build` (which compiles nothing) and records the SHA-256 of
every file `BuildResult.files()` would export (sources, graph.json, params, constants, target blobs,
model.txt, metadata.json). A model a target cannot take records its error line instead, so a change in
what fails shows up as well. The manifest is JSON with sorted keys: two runs on one tree are identical.

    python scripts/codegen_digest.py --out before.json                 # record
    python scripts/codegen_digest.py --compare before.json             # record again and list differences
    python scripts/codegen_digest.py --diff before.json after.json     # compare two recorded manifests

Run it with the tree to measure first on PYTHONPATH (it imports whatever `byoc_compiler` resolves to and
prints which). `--jobs` builds models in that many processes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor

CONFIGS = (("graph", "packed"), ("aot", "unpacked"))
TARGETS = ("host", "ccompiler", "examplejson", "dnnl")


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"error: {type(exc).__name__}: {text[0] if text else ''}"


def digest_model(name: str, targets=TARGETS, toolchain: str = "gcc") -> dict[str, str]:
    """Key "<model>/<target>/<executor>-<interface>/<file>" -> SHA-256 hex (or an error line)."""
    from byoc_compiler import build, partition_for, zoo

    out: dict[str, str] = {}
    try:
        mod = zoo.get(name)
    except Exception as exc:  # noqa: BLE001 - a model that does not load is a manifest row, not a crash
        return {f"{name}/load": _error_line(exc)}
    for target in targets:
        try:
            part = mod if target == "host" else partition_for(target, mod)
        except Exception as exc:  # noqa: BLE001
            out[f"{name}/{target}/partition"] = _error_line(exc)
            continue
        for executor, interface in CONFIGS:
            key = f"{name}/{target}/{executor}-{interface}"
            try:
                files = build(part, toolchain=toolchain, executor=executor, interface=interface).files()
            except Exception as exc:  # noqa: BLE001
                out[f"{key}/build"] = _error_line(exc)
                continue
            for rel, data in files.items():
                raw = data if isinstance(data, bytes) else data.encode()
                out[f"{key}/{rel}"] = hashlib.sha256(raw).hexdigest()
    return out


def record(models, targets, jobs: int) -> dict[str, str]:
    manifest: dict[str, str] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {name: pool.submit(digest_model, name, targets) for name in models}
        for name, future in futures.items():
            start = time.perf_counter()
            manifest.update(future.result())
            print(f"  {name}: done ({time.perf_counter() - start:.1f} s waited)", file=sys.stderr, flush=True)
    return dict(sorted(manifest.items()))


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    lines = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if old is None:
            lines.append(f"added    {key}: {new}")
        elif new is None:
            lines.append(f"missing  {key}: was {old}")
        else:
            lines.append(f"changed  {key}: {old} -> {new}")
    return lines


def report(before: dict, after: dict) -> int:
    """Print the differences over the models and targets both manifests cover; 1 if there are any."""
    def covered(manifest):
        keep_models, keep_targets = set(after["models"]), set(after["targets"])
        return {k: v for k, v in manifest["files"].items()
                if k.split("/")[0] in keep_models and (k.count("/") < 2 or k.split("/")[1] in keep_targets)}

    diff = differences(covered(before), covered(after))
    print(f"before: {before['tree']} ({len(before['files'])} entries); "
          f"after: {after['tree']} ({len(after['files'])} entries)")
    for line in diff:
        print(line)
    print(f"{len(diff)} difference(s)")
    return 1 if diff else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the manifest here")
    ap.add_argument("--compare", metavar="BASELINE", help="record, then list differences to this manifest")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two manifests, record nothing")
    ap.add_argument("--models", nargs="*", help="zoo models (default: every one)")
    ap.add_argument("--skip", nargs="*", default=[], help="zoo models to leave out")
    ap.add_argument("--targets", nargs="*", default=list(TARGETS), choices=TARGETS)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if args.diff:
        with open(args.diff[0]) as f, open(args.diff[1]) as g:
            return report(json.load(f), json.load(g))
    import byoc_compiler
    from byoc_compiler import zoo

    models = [m for m in (args.models or zoo.all_names()) if m not in args.skip]
    print(f"byoc_compiler from {byoc_compiler.__file__}; {len(models)} models x {args.targets} x "
          f"{[f'{e}-{i}' for e, i in CONFIGS]}", file=sys.stderr)
    start = time.perf_counter()
    manifest = {"tree": byoc_compiler.__file__, "models": models, "targets": args.targets,
                "files": record(models, args.targets, args.jobs)}
    print(f"{len(manifest['files'])} entries in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.compare:
        with open(args.compare) as f:
            return report(json.load(f), manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
