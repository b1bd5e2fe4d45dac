"""How close an exact int8 kernel set could come to onnxruntime's int8 convolutions on this CPU, layer by layer.

    python bench/int8_ceiling.py [--model int8:resnet50] [--threads 1] [--repeat 50] [--rounds 7] [--alternations 2]
                                  [--no-ours]

Without an int8 dot product (x86 without VNNI) onnxruntime's uint8 x int8 convolutions run vpmaddubsw, which
saturates; an exact kernel either widens to int16 or makes the weight pair-safe (docs/quantization.md) and adds
corrections. Neither can multiply faster than the instructions allow, so this prints, per convolution of the
model, onnxruntime's time (its profiler, p10 of --repeat runs at --threads, as bench/ccompiler_layers.py reads
it), its rate in multiply-adds per second and the least time an exact kernel could take:

  - direct: the layer's multiply-adds at the saturating sequence's register-only rate (vpmaddubsw + vpmaddwd +
    vpaddd on 8 independent accumulators, bench/int8_products.py), i.e. a pair-safe weight with no corrections,
    no loads, no packing, no requantization;
  - Winograd F(2x2, 3x3), stride-1 3x3 convolutions: 16 products per 2x2 outputs and channel instead of 36, at the
    exact int16 sequence's rate (vpmaddwd + vpaddd), the transforms free.

The floor of a layer is the smaller of the two, times --threads' share (the rates are one core's). The sums
give the least the model's convolutions could take against onnxruntime's, so "floor / onnxruntime" is the best
ratio any exact kernel set could reach on this CPU; ccompiler's own time per convolution (its runner's kernel
calls timed as bench/ccompiler_layers.py times them, paired with onnxruntime's nodes the same way; a call that
also adds a residual counts the add) shows how far its kernels are from the floor (--no-ours: onnxruntime
alone). Both sides are measured --alternations times, one after the other, and each layer's smallest p10 kept: a
shared VM's speed changes in streaks of minutes, and a single pass can catch one side in a slow one. Nothing here
is a target: each floor leaves out work no kernel avoids.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import int8_products  # noqa: E402

WINOGRAD_PRODUCTS = 16 / 36   # F(2x2, 3x3): products per output pixel and channel pair, against direct


def sequence_rates(rounds: int) -> dict[str, float]:
    """Multiply-adds per ns on one core, 'saturating' and 'exact16', medians of alternated runs."""
    wanted = {"saturating": next(k for k in int8_products.SEQUENCES if k.startswith("saturating")),
              "exact16": next(k for k in int8_products.SEQUENCES if k.startswith("exact"))}
    with tempfile.TemporaryDirectory(prefix="byoc-int8-ceiling-") as tmp:
        exes = {name: int8_products.build(Path(tmp), name, int8_products.SEQUENCES[label])
                for name, label in wanted.items()}
        times: dict[str, list[float]] = {name: [] for name in exes}
        for _ in range(rounds):
            for name, exe in exes.items():
                times[name].append(float(subprocess.run([str(exe)], check=True, capture_output=True,
                                                        text=True).stdout))
    return {name: 256 / statistics.median(values) for name, values in times.items()}


def conv_layers(model: str) -> dict[str, dict]:
    """Conv node name -> its name in the table, multiply-adds and whether Winograd F(2x2, 3x3) takes it."""
    import onnx
    from ccompiler_layers import quantized_convs

    layers = {}
    for node, (o, i_per_group, kh, kw), _x, out in quantized_convs(model):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        stride, group = tuple(attrs.get("strides", (1, 1))), attrs.get("group", 1)
        layers[node.name] = {
            "macs": o * i_per_group * kh * kw * out[2] * out[3],
            "winograd": kh == kw == 3 and stride == (1, 1) and group == 1,
            "name": f"{kh}x{kw}{'/' + str(stride[0]) if stride[0] != 1 else ''} {i_per_group * group}->{o}"
                    f"{' dw' if group > 1 else ''} @{out[2]}"}
    return layers


def _node(title: str) -> str:
    """The Conv node's name in an onnxruntime QLinearConv row's title ("QLinearConv conv1_token_1")."""
    return title.split(" ", 1)[1].split("_token_")[0]


def conv_ms(model: str, threads: int, repeat: int, ours: bool,
            alternations: int) -> tuple[dict[str, float], dict[str, float]]:
    """(onnxruntime's, ccompiler's) smallest p10 ms per Conv node name over the alternations (ccompiler's empty
    with ours False)."""
    from byoc_compiler.check import deterministic_inputs
    from byoc_compiler.load import load_model
    from ccompiler_layers import byoc_layers, ort_layers, pair

    mod = load_model(model)
    inputs = deterministic_inputs(mod)
    order = [p.name_hint for p in mod["main"].params]
    ort: dict[str, float] = {}
    mine: dict[str, float] = {}
    for _ in range(alternations):
        theirs = ort_layers(model, threads, repeat, inputs)
        for t in theirs:
            if t[0].startswith("QLinearConv "):
                ort[_node(t[0])] = min(ort.get(_node(t[0]), t[2]), t[2])
        if ours:
            pairs, _, _ = pair(byoc_layers(model, threads, repeat, "gcc", [inputs[n] for n in order]), theirs)
            for o, t in pairs:
                if t[0].startswith("QLinearConv "):
                    mine[_node(t[0])] = min(mine.get(_node(t[0]), o[2]), o[2])
    return ort, mine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="int8:resnet50", help="int8:NAME (bench/models.py's quantized zoo model)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=50, help="onnxruntime's profiled runs")
    ap.add_argument("--rounds", type=int, default=7, help="alternated runs of each instruction sequence")
    ap.add_argument("--no-ours", action="store_true", help="onnxruntime and the floors only (no ccompiler build)")
    ap.add_argument("--alternations", type=int, default=2, help="passes of each side, the smallest p10 kept")
    args = ap.parse_args()
    if platform.machine() not in ("x86_64", "AMD64"):
        sys.exit(f"int8 ceiling: x86-64 only (this machine: {platform.machine()})")
    if int8_products.has_vnni():
        print("this CPU has an int8 dot product (VNNI): onnxruntime's kernels are exact here, no saturation to "
              "bound; the floors below use the AVX2 sequences all the same")
    from models import _materialize

    model = _materialize(args.model)
    rates = sequence_rates(args.rounds)
    layers = conv_layers(model)
    ort, ours = conv_ms(model, args.threads, args.repeat, not args.no_ours, args.alternations)
    print(f"{int8_products.cpu_name()}; {args.model}, {args.threads} thread(s); one core: saturating "
          f"{rates['saturating']:.1f} and exact int16 {rates['exact16']:.1f} multiply-adds per ns "
          f"(bench/int8_products.py's sequences, medians of {args.rounds} runs); onnxruntime: p10 of "
          f"{args.repeat} profiled runs" + ("" if args.no_ours else ", ccompiler: p10 of as many runs of its runner")
          + f", the smaller of {args.alternations} alternated passes")
    print("| conv | M multiply-adds | onnxruntime ms | its G/s | direct floor ms | Winograd floor ms | floor / onnxruntime |"
          " ccompiler ms | ccompiler / floor |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    total_ort = total_floor = total_ours = 0.0
    for node, layer in layers.items():
        if node not in ort:
            continue
        per_ms = 1e6 * args.threads                     # multiply-adds per ns -> per ms, on every thread
        direct = layer["macs"] / (rates["saturating"] * per_ms)
        wino = layer["macs"] * WINOGRAD_PRODUCTS / (rates["exact16"] * per_ms) if layer["winograd"] else None
        floor = min(direct, wino) if wino is not None else direct
        total_ort += ort[node]
        total_floor += floor
        mine = ours.get(node)
        total_ours += mine or 0.0
        print(f"| {layer['name']} | {layer['macs'] / 1e6:.1f} | {ort[node]:.3f} | "
              f"{layer['macs'] / ort[node] / 1e6:.1f} | {direct:.3f} | {'' if wino is None else f'{wino:.3f}'} | "
              f"{floor / ort[node]:.2f} | {'' if mine is None else f'{mine:.3f}'} | "
              f"{'' if mine is None else f'{mine / floor:.2f}'} |")
    print(f"\nconvolutions: onnxruntime {total_ort:.2f} ms, exact floor {total_floor:.2f} ms "
          f"(floor / onnxruntime {total_floor / total_ort:.2f})")
    if ours:
        print(f"ccompiler {total_ours:.2f} ms over the {len(ours)} it pairs: {total_ours / total_floor:.2f} x the "
              f"floor, {total_ours / total_ort:.2f} x onnxruntime")


if __name__ == "__main__":
    main()
