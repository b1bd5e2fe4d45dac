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
    def __init__(self):
        self.lines: list[str] = []
        self.ids: dict[int, str] = {}

    def node_id(self, scope: str, node: Expr) -> str:
        key = id(node)
        if key not in self.ids:
            self.ids[key] = f"{scope}n{len(self.ids)}"
        return self.ids[key]


def to_dot(mod: IRModule, name: str = "model") -> str:
    """DOT text of `mod`: main's host ops plus one cluster per external function it calls."""
    w = _Writer()
    colours: dict[str, str] = {}
    out = [f"digraph {_quote(name)} {{", "  rankdir=TB;", '  node [shape=box, style="rounded,filled", '
           'fillcolor=white, fontname="Helvetica", fontsize=10];', '  edge [fontsize=8, fontname="Helvetica"];']
    main = mod["main"]
    value_of: dict[int, str] = {}       # main node -> the DOT node that produces it
    output_of: dict[tuple[int, int], str] = {}  # (external call, output index) -> DOT node
    cluster = 0
    for node in post_order(main.body):
        if isinstance(node, Function):
            continue
        if isinstance(node, Call) and isinstance(node.op, GlobalVar):
            func = mod[node.op]
            target = str(func.attrs.get("Compiler", "?"))
            colour = colours.setdefault(target, PALETTE[len(colours) % len(PALETTE)])
            out.append(f"  subgraph cluster_{cluster} {{")
            out.append(f"    label={_quote(node.op.name_hint + ' [' + target + ']')}; style=filled; "
                       f"color={_quote(colour)}; fillcolor={_quote(colour)};")
            cluster += 1
            param_src = {id(p): value_of.get(id(a)) for p, a in zip(func.params, node.args)}
            inner_edges = []
            for inner in post_order(func.body):
                if isinstance(inner, (Var, Function)):
                    continue
                nid = w.node_id("f", inner)
                if isinstance(inner, Tuple) and inner is func.body:
                    continue
                out.append(f"    {nid} [label={_quote(_label(inner))}];")
                kids = inner.args if isinstance(inner, Call) else inner.children()
                for kid in kids:
                    src = param_src.get(id(kid)) if isinstance(kid, Var) else w.ids.get(id(kid))
                    if src:
                        inner_edges.append(f"  {src} -> {nid} [label={_quote(_shape(kid))}];")
            out.append("  }")
            out.extend(inner_edges)
            body = func.body
            results = body.fields if isinstance(body, Tuple) else [body]
            for k, res in enumerate(results):
                output_of[(id(node), k)] = w.ids.get(id(res)) or param_src.get(id(res), "")
            value_of[id(node)] = output_of[(id(node), 0)]
            continue
        if isinstance(node, TupleGetItem) and (id(node.tuple_value), node.index) in output_of:
            value_of[id(node)] = output_of[(id(node.tuple_value), node.index)]
            continue
        nid = w.node_id("m", node)
        shape = "ellipse" if isinstance(node, Var) else "note" if isinstance(node, Constant) else "box"
        out.append(f"  {nid} [label={_quote(_label(node))}, shape={shape}];")
        value_of[id(node)] = nid
        kids = node.args if isinstance(node, Call) else node.children()
        for kid in kids:
            src = value_of.get(id(kid))
            if src:
                out.append(f"  {src} -> {nid} [label={_quote(_shape(kid))}];")
    result = value_of.get(id(main.body))
    out.append('  output [label="output", shape=ellipse];')
    if isinstance(main.body, Tuple):
        for f in main.body.fields:
            if value_of.get(id(f)):
                out.append(f"  {value_of[id(f)]} -> output;")
    elif result:
        out.append(f"  {result} -> output;")
    if colours:
        legend = " | ".join(f"{t}" for t in colours)
        out.append(f"  legend [shape=plaintext, style=\"\", label={_quote('targets: ' + legend + ' | host: white')}];")
    out.append("}")
    return "\n".join(out) + "\n"


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
