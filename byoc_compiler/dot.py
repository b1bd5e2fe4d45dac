"""The partitioned graph as Graphviz DOT: one box per op, one coloured cluster per external function.

Host ops are white boxes; each external function is a cluster coloured by its
target, drawn with the ops inside it; composites are one box listing their
ops. Values flow along edges labelled with their shape. `to_svg` runs Graphviz's
`dot` program when it is installed.
"""
from __future__ import annotations

import shutil
import subprocess

from .errors import ByocError
from .ir.expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from .ir.module import IRModule
from .ir.types import TensorType
from .ir.visitor import post_order

# Pale fills that stay readable with black text; targets take them in order of appearance.
PALETTE = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada")


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(expr: Expr) -> str:
    ty = expr.checked_type
    if isinstance(ty, TensorType):
        return "x".join(map(str, ty.shape)) or "scalar"
    return ""


def _label(node: Expr) -> str:
    if isinstance(node, Call):
        if isinstance(node.op, Op):
            return node.op.name
        if isinstance(node.op, Function):
            inner = [n.op.name for n in post_order(node.op.body) if isinstance(n, Call) and isinstance(n.op, Op)]
            return f"{node.op.attrs.get('Composite', 'fn')}\n({' + '.join(inner)})"
        return "@" + node.op.name_hint
    if isinstance(node, Var):
        return f"%{node.name_hint}\n{_shape(node)}"
    if isinstance(node, Constant):
        return f"const {_shape(node)}"
    if isinstance(node, Tuple):
        return "tuple"
    if isinstance(node, TupleGetItem):
        return f".{node.index}"
    return type(node).__name__


class _Writer:
    """The DOT lines of one module, written in main's graph order."""

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.out: list[str] = []
        self.ids: dict[int, str] = {}
        self.colours: dict[str, str] = {}           # target -> its cluster fill
        self.value_of: dict[int, str] = {}          # main node -> the DOT node that produces it
        self.output_of: dict[tuple[int, int], str] = {}  # (external call, output index) -> DOT node
        self.clusters = 0

    def node_id(self, scope: str, node: Expr) -> str:
        key = id(node)
        if key not in self.ids:
            self.ids[key] = f"{scope}n{len(self.ids)}"
        return self.ids[key]

    def region(self, call: Call) -> None:
        """A call of an external function: a cluster with the function's ops, and the DOT nodes of its
        outputs for the host ops that read them."""
        func = self.mod[call.op]
        target = str(func.attrs.get("Compiler", "?"))
        colour = self.colours.setdefault(target, PALETTE[len(self.colours) % len(PALETTE)])
        self.out.append(f"  subgraph cluster_{self.clusters} {{")
        self.clusters += 1
        self.out.append(f"    label={_quote(call.op.name_hint + ' [' + target + ']')}; style=filled; "
                        f"color={_quote(colour)}; fillcolor={_quote(colour)};")
        param_src = {id(p): self.value_of.get(id(a)) for p, a in zip(func.params, call.args)}
        inner_edges = []
        for inner in post_order(func.body):
            if isinstance(inner, (Var, Function)):
                continue
            nid = self.node_id("f", inner)
            if isinstance(inner, Tuple) and inner is func.body:
                continue
            self.out.append(f"    {nid} [label={_quote(_label(inner))}];")
            for kid in (inner.args if isinstance(inner, Call) else inner.children()):
                src = param_src.get(id(kid)) if isinstance(kid, Var) else self.ids.get(id(kid))
                if src:
                    inner_edges.append(f"  {src} -> {nid} [label={_quote(_shape(kid))}];")
        self.out.append("  }")
        self.out.extend(inner_edges)
        results = func.body.fields if isinstance(func.body, Tuple) else [func.body]
        for k, res in enumerate(results):
            self.output_of[(id(call), k)] = self.ids.get(id(res)) or param_src.get(id(res), "")
        self.value_of[id(call)] = self.output_of[(id(call), 0)]

    def host(self, node: Expr) -> None:
        """A host op, input or constant of main: a white box (ellipse, note) with its input edges."""
        nid = self.node_id("m", node)
        shape = "ellipse" if isinstance(node, Var) else "note" if isinstance(node, Constant) else "box"
        self.out.append(f"  {nid} [label={_quote(_label(node))}, shape={shape}];")
        self.value_of[id(node)] = nid
        for kid in (node.args if isinstance(node, Call) else node.children()):
            src = self.value_of.get(id(kid))
            if src:
                self.out.append(f"  {src} -> {nid} [label={_quote(_shape(kid))}];")

    def outputs(self, body: Expr) -> None:
        self.out.append('  output [label="output", shape=ellipse];')
        for f in (body.fields if isinstance(body, Tuple) else [body]):
            if self.value_of.get(id(f)):
                self.out.append(f"  {self.value_of[id(f)]} -> output;")

    def legend(self) -> None:
        if self.colours:
            legend = " | ".join(f"{t}" for t in self.colours)
            self.out.append(f"  legend [shape=plaintext, style=\"\", "
                            f"label={_quote('targets: ' + legend + ' | host: white')}];")


def to_dot(mod: IRModule, name: str = "model") -> str:
    """DOT text of `mod`: main's host ops plus one cluster per external function it calls."""
    w = _Writer(mod)
    w.out += [f"digraph {_quote(name)} {{", "  rankdir=TB;", '  node [shape=box, style="rounded,filled", '
              'fillcolor=white, fontname="Helvetica", fontsize=10];', '  edge [fontsize=8, fontname="Helvetica"];']
    main = mod["main"]
    for node in post_order(main.body):
        if isinstance(node, Function):
            continue
        if isinstance(node, Call) and isinstance(node.op, GlobalVar):
            w.region(node)
        elif isinstance(node, TupleGetItem) and (id(node.tuple_value), node.index) in w.output_of:
            w.value_of[id(node)] = w.output_of[(id(node.tuple_value), node.index)]
        else:
            w.host(node)
    w.outputs(main.body)
    w.legend()
    w.out.append("}")
    return "\n".join(w.out) + "\n"


def to_svg(dot_text: str) -> bytes:
    """Render DOT text with Graphviz's `dot`; a ByocError naming the package when it is missing."""
    exe = shutil.which("dot")
    if exe is None:
        raise ByocError("drawing SVG needs Graphviz's `dot` program: apt-get install -y graphviz "
                        "(or write --dot only)")
    proc = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise ByocError(f"dot failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout
