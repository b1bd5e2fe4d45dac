"""Read the text form of the IR (see `printer` for the syntax) back into an IRModule or expression.

Accepts what `astext` writes and the Relay text people paste from TVM material:
`def @main(%x: Tensor[(10, 10), float32]) { ... }`, `fn (...) { ... }`,
`%N = ...;` bindings, `free_var %x: T;`, attribute values (ints, floats such as
`1f`, `1e-05f`, `0.5`, bools, strings, nested lists, None), `%t.0`,
`meta[relay.Constant][i]`, `//` and `/* */` comments (so trailing
`/* ty=... */` annotations are skipped), an optional `#[version = "..."]` line.

A hand-written tokenizer (one regular expression) and a recursive-descent
parser. Statements of a body are read in a loop, so a 100,000-statement
function parses without deep recursion; only the nesting written in the text
(calls inside calls, nested `fn`) recurses. Op calls are built through
`op.registry.make_call`, which validates the attributes and fills defaults;
an unknown op or attribute is a ParseError pointing at it. Relay attributes
byoc does not model are accepted only with their neutral value (`out_layout=""`,
`out_dtype=""`, `allowzero=0`, `batch_dims=0`) and dropped.
"""
from __future__ import annotations

import base64
import bisect
import json
import re
from typing import Any

import numpy as np

from .. import op as _ops  # noqa: F401  (importing the package registers every op)
from ..errors import ByocError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Span, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import DTYPES, INT64_MAX, TensorType, TupleType, Type, shape_problem
from ..op.registry import OpError, get_op_def, make_call

__all__ = ["parse", "parse_expr", "ParseError"]


class ParseError(ByocError, ValueError):
    """Malformed text. `str(err)` is `<source>:<line>:<col>: <message>` plus the line and a caret.

    A ByocError, so the CLI and the SCons tool print it as one message; a ValueError for callers
    that catch that."""

    def __init__(self, message: str, source: str, line: int, column: int, line_text: str | None = None):
        self.message, self.source, self.line, self.column = message, source, line, column
        text = f"{source}:{line}:{column}: {message}"
        if line_text is not None:
            shown, caret = _excerpt(line_text.rstrip("\r\n").replace("\t", " "), column - 1)
            text += "\n" + shown + "\n" + " " * caret + "^"
        super().__init__(text)


def _excerpt(line: str, offset: int, width: int = 120) -> tuple[str, int]:
    """A window of at most `width` characters of `line` around `offset`, and the caret position in it."""
    if len(line) <= width:
        return line, offset
    start = max(0, min(offset - width // 2, len(line) - width))
    shown = line[start:start + width]
    caret = offset - start
    if start > 0:
        shown, caret = "..." + shown, caret + 3
    if start + width < len(line):
        shown += "..."
    return shown, caret


_TOKEN = re.compile(r"""
    (?P<skip>[ \t\r\n]+|//[^\n]*|/\*.*?\*/|\#\[version\s*=\s*"[^"\n]*"\])
  | (?P<metadata>\#\[metadata\])
  | (?P<local>%(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|"(?:[^"\\\n]|\\.)*"))
  | (?P<global>@(?:[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\\n]|\\.)*"))
  | (?P<index>(?<=\.)[0-9]+)
  | (?P<number>-?(?:[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|inf|nan)
               (?:f16|f32|f64|f|i8|i16|i32|i64|u8|u16)?(?![A-Za-z0-9_]))
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>->|[()\[\]{},;:=.])
  | (?P<bad>/\*|"|.)
""", re.VERBOSE | re.DOTALL)

_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}
_NUMBER = re.compile(r"(-?(?:[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|inf|nan))(f16|f32|f64|f|i8|i16|i32|i64|u8|u16)?\Z")
_SUFFIX_DTYPE = {"f": "float32", "f16": "float16", "f32": "float32", "f64": "float64",
                 "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
                 "u16": "uint16"}

EOF = "eof"
# How deep calls, tuples and `fn`s may nest inside one expression of the text.
MAX_NESTING = 150

# Attributes Relay prints that byoc does not model, accepted (and dropped) only with Relay's neutral value,
# so that text pasted from TVM output reads: e.g. `nn.max_pool2d(%x, ..., out_layout="")`.
_RELAY_NEUTRAL_ATTRS = {"out_layout": "", "out_dtype": "", "allowzero": 0, "batch_dims": 0}


def _unescape(body: str) -> str:
    def one(m: re.Match) -> str:
        code = m.group(1)
        if code[0] in "uUx" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        raise ValueError(f"unknown escape \\{code}")

    return _ESCAPE.sub(one, body)


class _Token:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind, self.text, self.pos = kind, text, pos

    def describe(self) -> str:
        if self.kind == EOF:
            return "end of input"
        return repr(self.text) if len(self.text) <= 40 else repr(self.text[:37] + "...")


class _Parser:
    def __init__(self, text: str, source: str, files=None):
        self.text, self.source = text, source
        self.files = files          # sidecar name -> bytes (a Mapping or a callable), or None
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.tokens: list[_Token] = []
        self.metadata_text: str | None = None
        self.metadata_pos = 0
        self._tokenize()
        self.i = 0
        self.meta: list[Constant] | None = None
        self.global_uses: list[tuple[str, _Token]] = []
        self.scopes: list[dict[str, Expr]] = []
        self.depth = 0

    # ---- positions and errors ----------------------------------------------------------------
    def position(self, pos: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, pos)
        return line, pos - self.line_starts[line - 1] + 1

    def error_at(self, pos: int, message: str) -> ParseError:
        line, col = self.position(pos)
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        return ParseError(message, self.source, line, col, self.text[start: end if end >= 0 else len(self.text)])

    def expected(self, what: str, token: _Token | None = None) -> ParseError:
        token = token or self.peek()
        return self.error_at(token.pos, f"expected {what}, found {token.describe()}")

    def span(self, token: _Token) -> Span:
        line, col = self.position(token.pos)
        return Span(self.source, line, col)

    # ---- tokens ------------------------------------------------------------------------------
    def _tokenize(self) -> None:
        tokens = self.tokens
        for m in _TOKEN.finditer(self.text):
            kind = m.lastgroup
            if kind == "skip":
                continue
            if kind == "metadata":
                self.metadata_text = self.text[m.end():]
                self.metadata_pos = m.start()
                tokens.append(_Token(EOF, "", m.start()))
                return
            if kind == "punct":
                kind = m.group()
            elif kind == "bad":
                what = {"/*": "an unterminated comment", '"': "an unterminated string"}.get(m.group())
                message = f"unexpected {what}" if what else f"unexpected character {m.group()!r}"
                raise self.error_at(m.start(), message)
            tokens.append(_Token(kind, m.group(), m.start()))
        tokens.append(_Token(EOF, "", len(self.text)))

    def peek(self, ahead: int = 0) -> _Token:
        try:
            return self.tokens[self.i + ahead]
        except IndexError:
            return self.tokens[-1]

    def next(self) -> _Token:
        token = self.tokens[self.i]
        if token.kind != EOF:
            self.i += 1
        return token

    def accept(self, kind: str) -> _Token | None:
        token = self.tokens[self.i]
        if token.kind == kind:
            self.i += 1
            return token
        return None

    def expect(self, kind: str, what: str | None = None) -> _Token:
        token = self.tokens[self.i]
        if token.kind != kind:
            raise self.expected(what or repr(kind))
        self.i += 1
        return token

    def is_ident(self, text: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind == "ident" and token.text == text

    # ---- names -------------------------------------------------------------------------------
    def name_of(self, token: _Token) -> str:
        body = token.text[1:]
        if body.startswith('"'):
            try:
                return _unescape(body[1:-1])
            except ValueError as err:
                raise self.error_at(token.pos, str(err)) from None
        return body

    def lookup(self, token: _Token) -> Expr:
        # Names are keyed by their spelling: %"0" (a var named "0") is not %0 (a bound value).
        for scope in reversed(self.scopes):
            value = scope.get(token.text)
            if value is not None:
                return value
        raise self.error_at(token.pos, f"expected a defined variable, found undefined {token.text}"
                            + (" (declare free variables with `free_var %name: Tensor[...];`)"
                               if not token.text[1:].isdigit() else ""))

    def define(self, token: _Token, value: Expr) -> None:
        scope = self.scopes[-1]
        if token.text in scope:
            raise self.error_at(token.pos, f"{token.text} is defined twice")
        scope[token.text] = value

    # ---- types -------------------------------------------------------------------------------
    def parse_type(self) -> Type:
        token = self.peek()
        if token.kind == "ident" and token.text == "Tensor":
            self.next()
            self.expect("[")
            self.expect("(", "'(' opening the shape")
            dims: list[int] = []
            while not self.accept(")"):
                dim = self.next()
                if dim.kind != "number" or not re.fullmatch(r"[0-9]+(i32|i64)?", dim.text):
                    raise self.expected("a dimension (a non-negative integer)", dim)
                dims.append(int(re.match(r"[0-9]+", dim.text).group()))
                if not self.accept(","):
                    self.expect(")", "',' or ')' in the shape")
                    break
            self.expect(",")
            dtype = self.parse_dtype()
            self.expect("]")
            problem = shape_problem(tuple(dims), dtype)
            if problem:
                raise self.error_at(token.pos, f"tensor type: {problem}")
            return TensorType(tuple(dims), dtype)
        if token.kind == "ident" and token.text in DTYPES:
            self.next()
            return TensorType((), token.text)
        if token.kind == "(":
            self.next()
            self._deeper("tuple types", "flatten the tuple")
            try:
                fields: list[Type] = []
                while not self.accept(")"):
                    fields.append(self.parse_type())
                    if not self.accept(","):
                        self.expect(")", "',' or ')' in the tuple type")
                        break
                return TupleType(tuple(fields))
            finally:
                self.depth -= 1
        raise self.expected("a type such as Tensor[(1, 3), float32]")

    def parse_dtype(self) -> str:
        token = self.peek()
        if token.kind != "ident" or token.text not in DTYPES:
            raise self.expected(f"a dtype ({', '.join(DTYPES)})")
        self.next()
        return token.text

    # ---- literal values ----------------------------------------------------------------------
    def number_value(self, token: _Token, attribute: bool = False) -> tuple[Any, str]:
        """(Python value, dtype) of a number token. An integer must fit its dtype (int32 unless suffixed);
        an attribute's integers are int64 in generated C whatever their suffix."""
        m = _NUMBER.match(token.text)
        digits, suffix = m.group(1), m.group(2)
        is_float = suffix is not None and suffix.startswith("f") or any(c in digits for c in ".eEna")
        if suffix is not None:
            dtype = _SUFFIX_DTYPE[suffix]
        else:
            dtype = "float32" if is_float else "int32"
        if dtype.startswith("float"):
            return float(digits), dtype
        if any(c in digits for c in ".eEna"):
            raise self.error_at(token.pos, f"expected an integer before the suffix {suffix}, found {token.text!r}")
        value = int(digits)
        bound = "int64" if attribute and not suffix else dtype
        info = np.iinfo(bound)
        if not info.min <= value <= info.max:
            hint = "" if suffix or bound == "int64" else "; add the suffix i64 for an int64 constant"
            raise self.error_at(token.pos, f"integer {token.text} does not fit in {bound} ({info.min}..{info.max})"
                                + hint)
        return value, dtype

    def string_value(self, token: _Token) -> str:
        try:
            return _unescape(token.text[1:-1])
        except ValueError as err:
            raise self.error_at(token.pos, str(err)) from None

    def parse_attr_value(self) -> Any:
        """An attribute value: number, True/False/None, string or a (nested) list; iterative over lists."""
        token = self.peek()
        if token.kind != "[":
            return self._attr_atom()
        stack: list[list] = []
        while True:
            if self.accept("["):
                if len(stack) == MAX_NESTING:     # checks and messages that print the value recurse
                    raise self.error_at(self.peek().pos, f"attribute lists nested more than {MAX_NESTING} deep")
                stack.append([])
                if self.accept("]"):
                    done = stack.pop()
                else:
                    continue
            else:
                done = self._attr_atom()
            # `done` is a finished element: attach it, closing lists as far as they end here.
            while True:
                if not stack:
                    return done
                stack[-1].append(done)
                if self.accept(","):
                    break
                self.expect("]", "',' or ']' in the list")
                done = stack.pop()

    def _attr_atom(self) -> Any:
        token = self.next()
        if token.kind == "number":
            return self.number_value(token, attribute=True)[0]
        if token.kind == "string":
            return self.string_value(token)
        if token.kind == "ident" and token.text in ("True", "False", "None", "true", "false"):
            return {"True": True, "False": False, "None": None, "true": True, "false": False}[token.text]
        if token.kind == "ident" and token.text in DTYPES:  # e.g. dtype=float32 as Relay sometimes writes
            return token.text
        raise self.expected("an attribute value (number, string, True/False, None or a list)", token)

    def parse_attrs(self, close: str) -> tuple[dict[str, Any], dict[str, _Token]]:
        """`key=value, ...` up to (not including) `close`; returns values and their key tokens."""
        attrs: dict[str, Any] = {}
        where: dict[str, _Token] = {}
        while self.peek().kind != close:
            key_token = self.next()
            if key_token.kind == "ident" and "." not in key_token.text:
                key = key_token.text
            elif key_token.kind == "string":
                key = self.string_value(key_token)
            else:
                raise self.expected("an attribute name", key_token)
            if key in attrs:
                raise self.error_at(key_token.pos, f"attribute {key!r} is given twice")
            self.expect("=", "'=' after the attribute name")
            where[key] = key_token
            attrs[key] = self.parse_attr_value()
            if not self.accept(","):
                break
        return attrs, where

    def at_attr(self) -> bool:
        token = self.peek()
        return token.kind in ("ident", "string") and self.peek(1).kind == "="

    # ---- expressions -------------------------------------------------------------------------
    def _deeper(self, what: str, fix: str) -> None:
        # Nesting written in the text is parsed recursively; deep nesting is refused with a clear
        # message instead of a RecursionError. The caller decrements self.depth when done.
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error_at(self.peek().pos, f"{what} nested more than {MAX_NESTING} deep; {fix}")

    def parse_expr(self) -> Expr:
        self._deeper("expressions", "bind intermediate values with `%N = ...;` instead")
        try:
            return self._parse_postfix(self.parse_primary())
        finally:
            self.depth -= 1

    def _parse_postfix(self, value: Expr) -> Expr:
        while True:
            token = self.peek()
            if token.kind == "." and self.peek(1).kind == "index":
                self.next()
                value = TupleGetItem(value, int(self.next().text), span=self.span(token))
            elif token.kind == "(":
                self.next()
                args, attrs, _ = self.parse_args()
                value = Call(value, args, attrs, span=self.span(token))
            else:
                return value

    def parse_args(self) -> tuple[list[Expr], dict[str, Any], dict[str, _Token]]:
        """After '(': positional expressions, then `key=value` attrs, then ')'."""
        args: list[Expr] = []
        attrs: dict[str, Any] = {}
        where: dict[str, _Token] = {}
        while self.peek().kind != ")":
            if self.at_attr():
                attrs, where = self.parse_attrs(")")
                break
            args.append(self.parse_expr())
            if not self.accept(","):
                break
        self.expect(")", "',' or ')' in the argument list")
        return args, attrs, where

    def parse_primary(self) -> Expr:
        token = self.peek()
        kind = token.kind
        if kind == "local":
            self.next()
            return self.lookup(token)
        if kind == "global":
            self.next()
            name = self.name_of(token)
            self.global_uses.append((name, token))
            return GlobalVar(name, span=self.span(token))
        if kind == "number":
            self.next()
            value, dtype = self.number_value(token)
            return Constant(np.array(value, dtype=dtype), span=self.span(token))
        if kind == "[":
            return self.parse_tensor_literal()
        if kind == "(":
            return self.parse_paren()
        if kind == "ident":
            if token.text in ("True", "False"):
                self.next()
                return Constant(np.array(token.text == "True"), span=self.span(token))
            if token.text == "fn":
                return self.parse_function(self.next())
            if token.text == "meta":
                return self.parse_meta()
            if self.peek(1).kind == "(":
                return self.parse_op_call()
        raise self.expected("an expression")

    def parse_paren(self) -> Expr:
        open_token = self.next()
        fields: list[Expr] = []
        trailing_comma = False
        while self.peek().kind != ")":
            fields.append(self.parse_expr())
            trailing_comma = bool(self.accept(","))
            if not trailing_comma:
                break
        self.expect(")", "',' or ')'")
        if len(fields) == 1 and not trailing_comma:
            return fields[0]  # parentheses for grouping
        return Tuple(fields, span=self.span(open_token))

    def parse_op_call(self) -> Expr:
        name_token = self.next()
        name = name_token.text
        try:
            opdef = get_op_def(name)
        except OpError as err:
            raise self.error_at(name_token.pos, str(err)) from None
        self.expect("(")
        args, attrs, where = self.parse_args()
        for key, value in list(attrs.items()):
            attr = opdef.attr_index.get(key)
            if attr is None and key in _RELAY_NEUTRAL_ATTRS and _RELAY_NEUTRAL_ATTRS[key] == value:
                del attrs[key]  # TVM writes it; it means "as usual", which is what byoc does
                continue
            if attr is None:
                allowed = ", ".join(opdef.attr_index) or "none"
                raise self.error_at(where[key].pos, f"{name} has no attribute {key!r} (allowed: {allowed})")
            try:
                attr.normalize(name, value)
            except OpError as err:
                raise self.error_at(where[key].pos, str(err)) from None
        try:
            call = make_call(name, *args, **attrs)
        except OpError as err:
            raise self.error_at(name_token.pos, str(err)) from None
        call.span = self.span(name_token)
        return call

    def parse_tensor_literal(self) -> Constant:
        """`[[1f, 2f], [3f, 4f]]`: a small constant tensor, one list level per axis."""
        start, first = self.peek(), self.i
        values = self.parse_attr_value()
        try:
            if not _all_scalars(values):
                raise ValueError("its elements must be numbers or True/False")
            data = np.array(values)
            if data.dtype == object or data.size == 0:
                raise ValueError("it must be a non-empty rectangular nested list")
        except ValueError as err:
            raise self.error_at(start.pos, f"bad constant tensor: {err}") from None
        # The dtype comes from how the numbers are written (`1f`, `1`, `1i64`), not from numpy's guess.
        dtype = self._literal_dtype(start, first)
        return Constant(data.astype(dtype), span=self.span(start))

    def _literal_dtype(self, start: _Token, first: int) -> str:
        # Walk the tokens of the literal just read and collect the element dtypes.
        dtypes = set()
        for token in self.tokens[first:self.i]:
            if token.kind == "number":
                dtypes.add(self.number_value(token)[1])
            elif token.kind == "ident":
                dtypes.add("bool")
        if len(dtypes) != 1:
            raise self.error_at(start.pos, f"bad constant tensor: its elements mix dtypes {sorted(dtypes)}")
        return dtypes.pop()

    def parse_meta(self) -> Constant:
        start = self.next()  # meta
        self.expect("[")
        kind = self.next()
        if kind.kind != "ident" or kind.text != "relay.Constant":
            raise self.expected("relay.Constant", kind)
        self.expect("]")
        self.expect("[")
        index_token = self.next()
        if index_token.kind != "number" or not index_token.text.isdigit():
            raise self.expected("a constant index", index_token)
        self.expect("]")
        table = self.metadata()
        index = int(index_token.text)
        if table is None:
            raise self.error_at(start.pos, "meta[relay.Constant][...] refers to a metadata section, "
                                "but the text has no `#[metadata]` section")
        if index >= len(table):
            raise self.error_at(index_token.pos, f"meta[relay.Constant][{index}] is out of range: the "
                                f"metadata section has {len(table)} constants")
        return table[index]

    def metadata(self) -> list[Constant] | None:
        if self.meta is None and self.metadata_text is not None:
            self.meta = self._read_metadata()
        return self.meta

    def _read_metadata(self) -> list[Constant]:
        try:
            table = json.loads(self.metadata_text)
            if not isinstance(table, dict) or "relay.Constant" not in table:
                raise ValueError('expected a JSON object {"relay.Constant": [...]} as byoc prints it '
                                 "(TVM's own metadata blobs are not read; re-export the model with byoc)")
            out = []
            for entry in table["relay.Constant"]:
                order = {"little": "<", "big": ">"}[entry.get("byteorder", "little")]
                if entry["dtype"] not in DTYPES:  # never handed to np.dtype, whose string parser raises anything
                    raise ValueError(f"constant dtype {str(entry['dtype'])[:40]!r} is not one of {', '.join(DTYPES)}")
                dtype = np.dtype(entry["dtype"]).newbyteorder(order)
                shape = tuple(int(d) for d in entry["shape"])
                raw = self._sidecar_bytes(entry) if "file" in entry else \
                    base64.b64decode(entry["data"], validate=True)
                data = np.frombuffer(raw, dtype=dtype).reshape(shape)
                out.append(Constant(data.astype(data.dtype.newbyteorder("="))))
            return out
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
            raise self.error_at(self.metadata_pos, f"bad #[metadata] section: {err}") from None

    def _sidecar_bytes(self, entry) -> bytes:
        """The bytes of a constant kept out of line: `file` (beside the text), `offset`, `nbytes`."""
        name, offset, nbytes = entry["file"], int(entry["offset"]), int(entry["nbytes"])
        if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
            raise ValueError(f"constant file {name!r} must be a plain file name beside the text")
        if self.files is None:
            raise ValueError(f"a constant is kept in the file {name!r}, but the text was parsed without its "
                             f"files; parse the file with load_model(path) (it reads {name!r} beside it) or "
                             "pass parse(text, files={name: bytes})")
        try:
            blob = self.files(name) if callable(self.files) else self.files[name]
        except (KeyError, OSError) as err:
            raise ValueError(f"cannot read the constant file {name!r} ({err}); it must be beside the text") \
                from None
        if offset < 0 or nbytes < 0 or offset + nbytes > len(blob):
            raise ValueError(f"a constant at bytes {offset}..{offset + nbytes} of {name!r} is past its end "
                             f"({len(blob)} bytes): the file does not belong to this text")
        return bytes(blob[offset:offset + nbytes])

    # ---- functions and bodies ----------------------------------------------------------------
    def parse_params(self) -> tuple[list[Var], dict[str, Any]]:
        """After '(': `%x: T, ...` then function attrs, then ')'. Params are defined in the current scope."""
        self.expect("(")
        params: list[Var] = []
        attrs: dict[str, Any] = {}
        while self.peek().kind != ")":
            if self.at_attr():
                attrs, _ = self.parse_attrs(")")
                break
            token = self.expect("local", "a parameter such as %x")
            ty = self.parse_type() if self.accept(":") else None
            var = Var(self.name_of(token), ty, span=self.span(token))
            self.define(token, var)
            params.append(var)
            if not self.accept(","):
                break
        self.expect(")", "',' or ')' in the parameter list")
        return params, attrs

    def parse_function(self, start: _Token) -> Function:
        """After `fn` or `def @name`: params, optional `-> type`, `{ body }`."""
        self.scopes.append({})
        params, attrs = self.parse_params()
        ret_type = self.parse_type() if self.accept("->") else None
        self.expect("{")
        body = self.parse_body("}")
        self.expect("}", "'}' closing the function")
        self.scopes.pop()
        return Function(params, body, ret_type, attrs, span=self.span(start))

    def parse_body(self, close: str) -> Expr:
        """Bindings `%N = expr;` (and `free_var`, `let`) in a loop, then the result expression."""
        while True:
            token = self.peek()
            if token.kind == "ident" and token.text == "free_var":
                self.next()
                name = self.expect("local", "a variable such as %x")
                ty = self.parse_type() if self.accept(":") else None
                self.define(name, Var(self.name_of(name), ty, span=self.span(name)))
                self.expect(";")
                continue
            if token.kind == "ident" and token.text == "let" and self.peek(1).kind == "local":
                self.next()
                name = self.next()
                if self.accept(":"):  # the annotation is left to InferType to check
                    self.parse_type()
                self.expect("=", "'=' after the let-bound name")
                value = self.parse_expr()
                self.expect(";", "';' after the binding")
                self.define(name, value)
                continue
            if token.kind == "local" and self.peek(1).kind == "=":
                self.next()
                self.next()
                value = self.parse_expr()
                self.expect(";", "';' after the binding")
                self.define(token, value)
                continue
            value = self.parse_expr()
            if self.peek().kind != close:
                self.accept(";")
            if self.peek().kind != close:
                raise self.expected("';' or '" + close + "'" if close != EOF else "end of input")
            return value

    def parse_module(self) -> IRModule:
        functions: dict[str, Function] = {}
        if not self.is_ident("def"):
            self.scopes.append({})
            expr = self.parse_body(EOF)
            self.finish()
            return IRModule.from_expr(expr)
        while self.is_ident("def"):
            start = self.next()
            name_token = self.expect("global", "a global name such as @main")
            name = self.name_of(name_token)
            if name in functions:
                raise self.error_at(name_token.pos, f"@{name} is defined twice")
            functions[name] = self.parse_function(start)
        if self.peek().kind != EOF:
            raise self.expected("'def' or end of input")
        for name, token in self.global_uses:
            if name not in functions:
                known = ", ".join("@" + n for n in functions)
                raise self.error_at(token.pos, f"@{name} is not defined in this module (it defines {known})")
        self.finish()
        return IRModule(functions)

    def parse_single_expr(self) -> Expr:
        self.scopes.append({})
        expr = self.parse_body(EOF)
        self.finish()
        return expr

    def finish(self) -> None:
        if self.peek().kind != EOF:
            raise self.expected("end of input")
        self.metadata()  # a malformed metadata section is an error even when unused



def _all_scalars(values) -> bool:
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif item is None or isinstance(item, str):
            return False
    return True


def _check_text(text) -> str:
    if not isinstance(text, str):
        raise TypeError(f"parse expects the text as a str, got {type(text).__name__} "
                        "(read files with open(path, encoding='utf-8').read())")
    return text


def parse(text: str, source_name: str = "<string>", files=None) -> IRModule:
    """Parse module text (`def @main(...) {...}` ...). Text without `def` becomes the module's main.

    `files` gives the bytes of constants kept out of line (printer.astext_with_sidecar): a mapping or
    a callable from the file name the text names to its bytes."""
    return _Parser(_check_text(text), source_name, files).parse_module()


def parse_expr(text: str, source_name: str = "<string>") -> Expr:
    """Parse one expression, e.g. `fn (%x: Tensor[(2,), float32]) { nn.relu(%x) }` or bindings + result."""
    return _Parser(_check_text(text), source_name).parse_single_expr()
