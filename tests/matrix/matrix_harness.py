"""The differential test matrix: what a case is, how it is built (through SCons) and how it is checked.

A case is one point of models x target sets x toolchains x executor x interface x opt.
It builds with the same `scons` command users run, in its own build root, sharing
compiled objects through an SCons CacheDir; its runner (under qemu-user for foreign
CPUs) runs on deterministic inputs and is compared with `run_reference` of the
UNPARTITIONED model in float64, allowing per element a multiple of the float32 error estimate
(byoc_compiler.testing.error_bound, tolerance.compare_with_bounds: the same comparison as `scons check`).
"""
from __future__ import annotations

import itertools
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = ROOT / "config.toml"

# Target sets: the name in test ids -> the scons `target=` value (a priority list for several).
TARGET_SETS = {"host": "host", "ccompiler": "ccompiler", "examplejson": "examplejson",
               "both": "ccompiler,examplejson", "dnnl": "dnnl", "dnnl_ccompiler": "dnnl,ccompiler"}
# Every target set under a sanitizer runs every model; the mixed dnnl set there only through the pairwise set.
SANITIZER_TARGET_SETS = ("host", "ccompiler", "examplejson", "both", "dnnl")
EXECUTORS = ("graph", "aot")
INTERFACES = ("packed", "unpacked")
OPTS = ("-O0", "-O3")
RANDOM_SEEDS = (11, 23)          # the random graphs of the default run: random11, random23
FULL_RANDOM_SEEDS = (11, 23, 37, 41)  # --matrix=full's (37 and 41 left the default run's budget on a slower CPU)
RANDOM_STEPS = 14


def random_model_names(seeds=RANDOM_SEEDS) -> list[str]:
    return [f"random{s}" for s in seeds]


def model_names(seeds=RANDOM_SEEDS) -> list[str]:
    from byoc_compiler import zoo

    return zoo.names() + random_model_names(seeds)


def load_config(path=DEFAULT_CONFIG):
    from byoc_compiler.config import load_config as _load

    return _load(str(path))


def toolchain_id(name: str) -> str:
    return name.replace("-", "_")


def toolchain_markers(tc) -> list[str]:
    """`-m aarch64` picks the aarch64 cross toolchain, `-m gcc` the host gcc, `-m sanitizer` both sanitizer ones,
    `-m baremetal` the bare-metal boards."""
    if tc.freestanding:          # `-m baremetal`: the qemu-system board lanes; `-m cortex_m55` one of them
        return [toolchain_id(tc.name), "baremetal"]
    marks = [tc.arch if tc.run else toolchain_id(tc.name)]
    if tc.run:
        marks.append("qemu")
    if tc.sanitizer:
        marks.append("sanitizer")
    return marks


@dataclass(frozen=True)
class Case:
    model: str
    target_set: str
    toolchain: str
    executor: str
    interface: str
    opt: str

    @property
    def id(self) -> str:
        return "-".join((self.model, self.target_set, toolchain_id(self.toolchain), self.executor, self.interface,
                         self.opt.lstrip("-")))

    @property
    def targets(self) -> str:
        return TARGET_SETS.get(self.target_set, self.target_set)

    def markers(self, config) -> list[str]:
        marks = ["matrix"]
        marks += ["host"] if self.target_set == "host" else self.targets.split(",")
        marks += toolchain_markers(config.toolchain(self.toolchain))
        if self.model.startswith("random"):
            marks.append("random_graph")
        if self.model in QUANTIZED_MODELS:
            marks.append("quantized")
        return marks


def hosted_toolchains(config) -> list[str]:
    """The toolchains of the pairwise product; bare-metal ones build one form only (baremetal_cases)."""
    return [name for name, tc in config.toolchains.items() if not tc.freestanding]


def dimensions(config, seeds=RANDOM_SEEDS) -> list[tuple]:
    return [tuple(model_names(seeds)), tuple(TARGET_SETS), tuple(hosted_toolchains(config)), EXECUTORS, INTERFACES,
            OPTS]


def excluded(target_set: str, toolchain: str, config) -> str | None:
    """Why a target set cannot build with a toolchain at all (a target's CPUs: dnnl is x86-64 only; its runtime
    profiles: examplejson and dnnl are hosted-only), else None.
    Such pairs are left out of every run and named in the summary, not skipped one by one."""
    targets = TARGET_SETS.get(target_set, target_set)
    if targets == "host":
        return None
    from byoc_compiler.target import get_target
    from byoc_compiler.errors import ByocError

    for name in targets.split(","):
        try:
            problem = get_target(name, enabled_only=False).toolchain_problem(config.toolchain(toolchain))
        except ByocError:
            return None         # a broken or unknown target: its cases report it
        if problem:
            return problem
    return None


def exclusions(config) -> dict[str, list[str]]:
    """reason -> the 'target set on toolchain' pairs it excludes (for the summary)."""
    out: dict[str, list[str]] = {}
    for target_set in TARGET_SETS:
        for tc in config.toolchains:
            why = excluded(target_set, tc, config)
            if why:
                out.setdefault(why.split(", and toolchain")[0], []).append(f"{target_set} on {tc}")
    return out


def full_cases(config) -> list[Case]:
    return [Case(*values) for values in itertools.product(*dimensions(config, FULL_RANDOM_SEEDS))
            if not excluded(values[1], values[2], config)] + reduced_model_cases(config, full=True) \
        + quantized_cases(config, "full") + baremetal_cases(config, full=True)


# The default run builds the sanitizer toolchains at -O0 only: ASan and UBSan instrument every access there, and
# a sanitized -O3 build of the kernel libraries cost 15-20 s of CPU per toolchain (optimized code runs in every
# other lane at -O3). `--matrix=full` keeps both levels.
SANITIZER_OPT = "-O0"


def pair_allowed(i: int, a: str, j: int, b: str, config) -> bool:
    """Whether the default run's covering set must have dimension i = a with dimension j = b."""
    if (i, j) == (1, 2):
        return not excluded(a, b, config)
    if (i, j) == (2, 5):
        return not config.toolchain(a).sanitizer or b == SANITIZER_OPT
    return True


def pairwise_cases(config) -> list[Case]:
    """A covering set in which every allowed pair of values of two dimensions appears at least once.

    The two largest dimensions go first: allpairspy's greedy search then needs
    close to their product (the lower bound) rows.
    """
    from allpairspy import AllPairs

    dims = dimensions(config)
    order = sorted(range(len(dims)), key=lambda i: -len(dims[i]))
    at = {i: pos for pos, i in enumerate(order)}

    def allowed(row) -> bool:       # allpairspy extends rows left to right in `order`
        return all(pair_allowed(i, row[at[i]], j, row[at[j]], config) for i, j in ((1, 2), (2, 5))
                   if len(row) > max(at[i], at[j]))

    rows = AllPairs([list(dims[i]) for i in order], filter_func=allowed)
    cases = []
    for row in rows:
        values = [None] * len(dims)
        for pos, i in enumerate(order):
            values[i] = row[pos]
        cases.append(Case(*values))
    return _complete(cases, config)


def _complete(cases: list[Case], config) -> list[Case]:
    """allpairspy's greedy search may leave pairs out when a filter forbids some (dnnl on a cross toolchain):
    one more case per pair still missing, its other values taken from the case count so far."""
    dims = dimensions(config)
    missing = _missing_pairs(cases, config)
    for i, a, j, b in missing:
        values = [dims[k][len(cases) % len(dims[k])] for k in range(len(dims))]
        values[i], values[j] = a, b
        if excluded(values[1], values[2], config):
            values[2 if i != 2 and j != 2 else 1] = "gcc" if i != 2 and j != 2 else "host"
        if not pair_allowed(2, values[2], 5, values[5], config):
            values[5 if j != 5 else 2] = SANITIZER_OPT if j != 5 else "gcc"
        case = Case(*values)
        if (i, a, j, b) in _missing_pairs(cases, config):
            cases.append(case)
    return cases


def covers_all_pairs(cases: list[Case], config) -> list[str]:
    """The pairs of dimension values no case covers (empty for a covering set)."""
    return [f"{a} with {b}" for _, a, _, b in _missing_pairs(cases, config)]


def _missing_pairs(cases: list[Case], config) -> list[tuple]:
    """(dimension i, value, dimension j, value) of every allowed pair no case covers."""
    dims = dimensions(config)
    seen = set()
    for case in cases:
        values = (case.model, case.target_set, case.toolchain, case.executor, case.interface, case.opt)
        for i, j in itertools.combinations(range(len(values)), 2):
            seen.add((i, values[i], j, values[j]))
    missing = []
    for i, j in itertools.combinations(range(len(dims)), 2):
        for a in dims[i]:
            for b in dims[j]:
                if not pair_allowed(i, a, j, b, config):
                    continue
                if (i, a, j, b) not in seen:
                    missing.append((i, a, j, b))
    return missing


# --- why a case cannot run here ------------------------------------------------------------------------

def toolchain_problem(config, name: str) -> str | None:
    from byoc_compiler.errors import ByocError
    from byoc_compiler.toolchain import check_toolchain

    try:
        check_toolchain(config.toolchain(name))
    except ByocError as exc:
        return str(exc)
    return None


def target_problem(targets: str) -> str | None:
    """Why `targets` (a target= value) cannot build here: disabled, or no codegen yet; None when it can."""
    if targets == "host":
        return None
    from byoc_compiler.target import get_target
    from byoc_compiler.errors import ByocError

    for name in targets.split(","):
        try:
            target = get_target(name)
        except ByocError as exc:
            return str(exc)
        if target.codegen is None:
            return f"target {name!r} has no codegen yet (targets/{name}/codegen.py sets target.codegen)"
    return None


# --- models --------------------------------------------------------------------------------------------

def random_recipe_for(model: str):
    from byoc_compiler.testing.random_graph import random_recipe

    return random_recipe(int(model[len("random"):]), steps=RANDOM_STEPS)


# --- build and check -----------------------------------------------------------------------------------

@dataclass
class Build:
    command: list[str]
    runner: Path
    returncode: int
    output: str
    repro: str          # the same build in the repository itself, with `check`
    project: Path


def make_project(workdir: Path) -> Path:
    """A project directory for one case: the repository's SConstruct (byoc's build is in the package), linked.

    Every case gets its own project so that builds running at once share no SCons state,
    while paths inside each project are the same for every case (`build/<targets>/<toolchain>/...`):
    SCons's CacheDir keys include a target's path, so identical paths let cases and
    concurrent runs share compiled objects.
    """
    project = workdir / "project"
    project.mkdir(parents=True, exist_ok=True)
    for name in ("SConstruct",):
        link = project / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    return project


def model_spec(model: str, project: Path) -> str:
    """What `scons model=` takes for `model`: a zoo name, or a file relative to the project: the text IR
    written for a random graph, the .onnx file of a quantized model."""
    if model in QUANTIZED_MODELS:
        import shutil

        from byoc_compiler.testing.quantize import quantized_zoo_model

        (project / "models").mkdir(exist_ok=True)
        rel = f"models/{model}.onnx"
        shutil.copyfile(quantized_zoo_model(QUANTIZED_MODELS[model], "qdq", per_channel=True), project / rel)
        return rel
    if not model.startswith("random"):
        return model
    (project / "models").mkdir(exist_ok=True)
    rel = f"models/{model}.txt"
    (project / rel).write_text(random_recipe_for(model).to_text())
    return rel


def scons_args(case: Case, spec: str, config_path=DEFAULT_CONFIG) -> list[str]:
    return [f"target={case.targets}", f"toolchain={case.toolchain}", f"model={spec}", f"executor={case.executor}",
            f"interface={case.interface}", f"opt={case.opt}", f"config={config_path}"]


def runner_path(case: Case, spec: str) -> str:
    """The runner's path inside a project (the layout of the SCons tool)."""
    stem = Path(spec).stem if ("/" in spec or "." in spec) else spec
    return f"build/{case.targets}/{case.toolchain}/{stem}/runner"


def build(case: Case, spec: str, project: Path, cache: Path | None, config_path=DEFAULT_CONFIG, env=None) -> Build:
    runner = runner_path(case, spec)
    argv = [sys.executable, "-m", "SCons", "-Q", "-C", str(project), *scons_args(case, spec, config_path)]
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        argv.append(f"cache={cache}")
    argv.append(runner)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    abs_spec = str(project / spec) if spec.startswith("models/") else spec
    repro = " ".join(shlex.quote(a) for a in ["scons", "-Q", "-C", str(ROOT), *scons_args(case, abs_spec, config_path),
                                              "check"])
    return Build(argv, project / runner, proc.returncode, proc.stdout + proc.stderr, repro, project)


@dataclass
class Outcome:
    passed: bool
    message: str
    max_abs_err: float = 0.0
    margin: float = 0.0         # max |got - ref| / allowed (testing/tolerance.py); pass <= 1


def check(case: Case, spec: str, built: Build, config, workdir: Path, seed: int = 0) -> Outcome:
    """Run the runner on deterministic inputs and compare with the reference of the unpartitioned model."""
    from byoc_compiler.check import deterministic_inputs, expected_outputs
    from byoc_compiler.runtime.runner import run_runner
    from byoc_compiler.errors import ByocError
    from byoc_compiler.load import load_model
    from byoc_compiler.testing.tolerance import compare_with_bounds

    repro = "reproduce: " + built.repro
    if built.returncode != 0:
        tail = "\n".join(built.output.strip().splitlines()[-25:])
        return Outcome(False, f"{case.id}: the build failed (exit {built.returncode})\n{tail}\n{repro}",
                       float("inf"))
    # The UNPARTITIONED model: the oracle never sees a partition.
    mod = load_model(str(built.project / spec) if spec.startswith("models/") else spec)
    inputs = deterministic_inputs(mod, seed)
    expected = expected_outputs(mod, inputs)
    order = [p.name_hint for p in mod["main"].params]
    tc = config.toolchain(case.toolchain)
    try:
        actual = run_runner(built.runner, list(tc.run), inputs, order, workdir / "run")
    except ByocError as exc:
        return Outcome(False, f"{case.id}: {exc}\n{repro}", float("inf"))
    c = compare_with_bounds(actual, expected)
    if c.passed:
        return Outcome(True, "", c.max_abs, c.margin)
    return Outcome(False, f"{case.id}: outputs differ from the reference of the unpartitioned model\n"
                          f"  worst element: {c.detail}\n  max abs err {c.max_abs:.3g}, max rel err {c.max_rel:.3g}, "
                          f"margin {c.margin:.3g} (pass <= 1)\n  {repro}", c.max_abs, c.margin)


def run_case(case: Case, workdir: Path, cache: Path | None, config, config_path=DEFAULT_CONFIG, env=None,
             recipe=None) -> Outcome:
    """Build `case` in a project under `workdir` and check it; `recipe` replaces a random model's graph."""
    project = make_project(workdir)
    if recipe is not None:
        (project / "models").mkdir(exist_ok=True)
        spec = f"models/{case.model}.txt"
        (project / spec).write_text(recipe.to_text())
    else:
        spec = model_spec(case.model, project)
    built = build(case, spec, project, cache, config_path, env)
    return check(case, spec, built, config, workdir)


def shrink_failure(case: Case, workdir: Path, cache: Path | None, config, out_dir: Path,
                   max_tries: int = 25) -> Path:
    """Shrink a failing random-graph case to a small reproducer saved under `out_dir`; its model path."""
    from byoc_compiler.testing.random_graph import save_reproducer, shrink

    counter = itertools.count()

    def still_fails(recipe) -> bool:
        return not run_case(case, workdir / f"shrink{next(counter)}", cache, config, recipe=recipe).passed

    small = shrink(random_recipe_for(case.model), still_fails, max_tries=max_tries)
    return save_reproducer(small, out_dir, case.id, note=f"shrunk from matrix case {case.id}")


def summarize(rows) -> str:
    """rows: (toolchain, outcome, duration, case id[, margin]) -> the per-toolchain table (with the largest
    margin, |got - ref| / allowed, of its checked cases) and the slowest cases."""
    per = {}
    for row in rows:
        tc, outcome = row[0], row[1]
        counts = per.setdefault(tc, {"passed": 0, "failed": 0, "skipped": 0, "margin": None})
        counts[outcome] = counts.get(outcome, 0) + 1
        margin = row[4] if len(row) > 4 else None
        if margin is not None:
            counts["margin"] = max(counts["margin"] or 0.0, margin)
    header = ("toolchain", "passed", "failed", "skipped", "max margin")
    table = [header] + [(tc, str(c["passed"]), str(c["failed"]), str(c["skipped"]),
                         "-" if c["margin"] is None else f"{c['margin']:.3g}") for tc, c in sorted(per.items())]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("margin: |got - ref| / allowed of the worst element (byoc_compiler/testing/tolerance.py); pass <= 1")
    slow = sorted((r for r in rows if r[1] != "skipped"), key=lambda r: -r[2])[:5]
    if slow:
        lines.append("slowest cases:")
        lines += [f"  {r[2]:7.1f}s  {r[3]}" for r in slow]
    return "\n".join(lines)


def toolchain_of_id(case_id: str, config) -> str | None:
    """The toolchain named in a case id (`mlp-ccompiler-aarch64_gcc-aot-unpacked-O3`)."""
    parts = case_id.split("-")
    if len(parts) < 6:
        return None
    ids = {toolchain_id(n): n for n in config.toolchains}
    return ids.get(parts[-4])


__all__ = ["Case", "OPTS", "ROOT", "TARGET_SETS", "build", "check", "covers_all_pairs", "full_cases",
           "pairwise_cases", "run_case"]


def sanitizer_cases(config) -> list[Case]:
    """Every model with every target set under a sanitizer toolchain (they take turns).

    Each sanitizer toolchain keeps one executor and opt level, so its runtime objects are
    compiled once per target set; the pairwise set covers the other combinations.
    """
    sanitizers = [name for name, tc in config.toolchains.items() if tc.sanitizer]
    if not sanitizers:
        return []
    fixed = [(EXECUTORS[i % 2], SANITIZER_OPT) for i in range(len(sanitizers))]
    cases = []
    for k, (model, target_set) in enumerate(itertools.product(model_names(), SANITIZER_TARGET_SETS)):
        i = (k + k // len(SANITIZER_TARGET_SETS)) % len(sanitizers)   # both sanitizers see every target set
        executor, opt = fixed[i]
        cases.append(Case(model, target_set, sanitizers[i], executor, INTERFACES[(k // len(sanitizers)) % 2], opt))
    return [c for c in cases if c.target_set in sanitized_target_sets(c.model)]


def sanitized_target_sets(model: str) -> tuple[str, ...]:
    """The target sets a model runs with under a sanitizer, in turn (the default run's time budget; the pairwise
    cases sanitize more pairs, `--matrix=full` all): each zoo model one, so every target set meets a zoo model
    here; random graphs meet each target set through the pairwise cases or `sanitized_random_cases`."""
    sets, randoms = SANITIZER_TARGET_SETS, random_model_names()
    n = len(sets)
    if model in randoms:
        return ()
    from byoc_compiler import zoo

    j = zoo.names().index(model) if model in zoo.names() else 0
    return (sets[j % n],)


def sanitized_random_cases(cases: list[Case], config) -> list[Case]:
    """A random graph under a sanitizer for each target set `cases` sanitizes with none, random graphs and
    sanitizer toolchains in turn."""
    sanitizers = [name for name, tc in config.toolchains.items() if tc.sanitizer]
    randoms = random_model_names()
    covered = {c.target_set for c in cases if c.model in randoms and config.toolchains[c.toolchain].sanitizer}
    added = []
    for k, target_set in enumerate(SANITIZER_TARGET_SETS):
        if sanitizers and randoms and target_set not in covered:
            added.append(Case(randoms[k % len(randoms)], target_set, sanitizers[k % len(sanitizers)],
                              EXECUTORS[k % 2], INTERFACES[k % 2], SANITIZER_OPT))
    return added


# Real architectures at reduced width (the zoo's resnet50_tiny, mobilenetv2_tiny: every layer of
# ResNet-50 / MobileNetV2, 0.2-0.4 M weights, 64x64) on the cross toolchains, where byte order and
# the foreign CPU's arithmetic meet a deep model. The default run takes one lane each (s390x, the
# big-endian one, for ResNet); `--matrix=full` every qemu toolchain with both executors.
REDUCED_MODELS = ("resnet50_tiny", "mobilenetv2_tiny")
REDUCED_DEFAULT = {"resnet50_tiny": ("s390x-gcc",), "mobilenetv2_tiny": ("aarch64-gcc",)}


def reduced_model_cases(config, full: bool = False) -> list[Case]:
    qemu = [name for name, tc in config.toolchains.items() if tc.run and not tc.freestanding]
    cases = []
    for model in REDUCED_MODELS:
        lanes = qemu if full else [t for t in REDUCED_DEFAULT[model] if t in config.toolchains]
        for k, tc in enumerate(lanes):
            executors = EXECUTORS if full else (EXECUTORS[k % 2],)
            for executor in executors:
                cases.append(Case(model, "ccompiler", tc, executor, INTERFACES[k % 2], "-O3"))
    return cases


def default_cases(config) -> list[Case]:
    """The default run: the pairwise covering set, every model x target set under a sanitizer, the
    reduced real architectures on qemu lanes and a few quantized-model lanes."""
    cases = pairwise_cases(config)
    # A model and target set the pairwise set already runs under a sanitizer is not run under one again
    # (the sanitizer lane would differ only in executor, interface or opt level, pairs the covering set has).
    sanitized = {(c.model, c.target_set) for c in cases if config.toolchains[c.toolchain].sanitizer}
    cases += [c for c in sanitizer_cases(config) if (c.model, c.target_set) not in sanitized]
    cases += sanitized_random_cases(cases, config)
    return cases + reduced_model_cases(config) + quantized_cases(config, "default") + baremetal_cases(config)


# Bare-metal lanes (freestanding toolchains: qemu-system-arm boards) build AOT + unpacked only, with the targets
# that have a freestanding profile; hosted-only target sets are excluded and named in the summary. The default
# run takes one small model per target set and lane (the kernel library is most of the time); `--matrix=full`
# every model.
BAREMETAL_DEFAULT = {"host": "mlp", "ccompiler": "byoc_guide"}


def baremetal_cases(config, full: bool = False) -> list[Case]:
    lanes = [name for name, tc in config.toolchains.items() if tc.freestanding]
    cases = []
    for k, (tc, target_set) in enumerate(itertools.product(lanes, TARGET_SETS)):
        if excluded(target_set, tc, config):
            continue
        models = model_names() if full else [BAREMETAL_DEFAULT.get(target_set, "byoc_guide")]
        cases += [Case(model, target_set, tc, "aot", "unpacked", OPTS[k % 2]) for model in models]
    return cases


# Quantized models (matrix name -> the float model quantize_static quantizes: QDQ, per-channel int8
# weights, uint8 activations; byoc_compiler.testing.quantize, cached by content). Their outputs are
# dequantized int8 values: the allowance is a tiny fraction of one int8 step (test_matrix.py), so an
# output one step off fails. The default run takes the lanes below (the default run is near its time
# budget): the tiny CNN under a sanitizer and on two qemu CPUs, ResNet on big-endian s390x, MobileNetV2
# on aarch64. `int8` (the
# marker, `pytest --int8`) adds every model on every toolchain with host and ccompiler and both
# executors; `--matrix=full` every target set, executor and interface.
QUANTIZED_MODELS = {"tiny_cnn_int8": "tiny_cnn", "resnet50_tiny_int8": "resnet50_tiny",
                    "mobilenetv2_tiny_int8": "mobilenetv2_tiny"}
QUANTIZED_DEFAULT = (  # (model, target set, toolchain, interface); sanitizers keep their executor and opt
    ("tiny_cnn_int8", "ccompiler", "clang-asan-ubsan", "unpacked"),
    ("tiny_cnn_int8", "host", "riscv64-gcc", "unpacked"),
    ("tiny_cnn_int8", "ccompiler", "armhf-gcc", "packed"),
    ("resnet50_tiny_int8", "ccompiler", "s390x-gcc", "unpacked"),
    ("mobilenetv2_tiny_int8", "host", "aarch64-gcc", "packed"),
)
INT8_TARGET_SETS = ("host", "ccompiler")


def quantized_cases(config, which: str) -> list[Case]:
    """The quantized-model cases of `which`: "default", "int8" (beyond the default) or "full"."""
    sanitizers = [name for name, tc in config.toolchains.items() if tc.sanitizer]
    fixed = {name: (EXECUTORS[i % 2], SANITIZER_OPT) for i, name in enumerate(sanitizers)}
    if which == "default":
        cases = []
        for k, (model, target_set, tc, interface) in enumerate(QUANTIZED_DEFAULT):
            if tc in config.toolchains:
                executor, opt = fixed.get(tc, (EXECUTORS[k % 2], "-O3"))
                cases.append(Case(model, target_set, tc, executor, interface, opt))
        return cases
    target_sets = INT8_TARGET_SETS if which == "int8" else tuple(TARGET_SETS)
    interfaces = INTERFACES if which == "full" else (None,)
    cases = []
    for model, target_set, tc, executor, interface in itertools.product(
            QUANTIZED_MODELS, target_sets, hosted_toolchains(config), EXECUTORS, interfaces):
        if excluded(target_set, tc, config):
            continue
        opt = fixed.get(tc, (None, "-O3"))[1]
        interface = interface or INTERFACES[(len(cases) // 2) % 2]
        cases.append(Case(model, target_set, tc, executor, interface, opt))
    if which == "int8":
        ids = {c.id for c in quantized_cases(config, "default")}
        cases = [c for c in cases if c.id not in ids]
    return cases
