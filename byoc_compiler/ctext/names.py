"""Names and text from a model, made safe for C: identifiers, string literals, comments.

Every name that comes from a model file (inputs, variables, module and target names) reaches
generated C through one of these: `sanitize_identifier` / `unique_identifiers` for a whole
identifier, `identifier_part` for a piece of one (`tvmgen_<part>_run`), `c_string` inside a
string literal, `comment` inside a comment.
"""
from __future__ import annotations

import hashlib
import re
from typing import Iterable

# Words a generated identifier must not be: C99 keywords, and names the generated code or the
# headers it includes (stdint.h, math.h, string.h, stddef.h, the runtime) already give a meaning.
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
bool true false NULL EOF errno assert main
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t size_t ptrdiff_t
intmax_t uintmax_t wchar_t
INFINITY NAN HUGE_VAL HUGE_VALF
exp expf log logf sqrt sqrtf tanh tanhf pow powf fabs fabsf floor floorf ceil ceilf fmax fmaxf fmin fminf
memcpy memset memmove strlen abs
""".split())

MAX_LEN = 63  # C99 guarantees 63 significant initial characters of an internal identifier
_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NOT_IDENT_CHAR = re.compile(r"[^A-Za-z0-9_]")


def is_identifier(name: str) -> bool:
    """True when `name` can be used as-is as a C identifier in generated code."""
    return (bool(_VALID.match(name)) and name not in _RESERVED and not name.startswith("_")
            and len(name) <= MAX_LEN)


def identifier_part(text: str) -> str:
    """`text` as a piece of an identifier (`tvmgen_<part>_run`): every character outside
    [A-Za-z0-9_] becomes "_". Never an identifier by itself: pass the whole name through
    `sanitize_identifier` when it may be too long."""
    return _NOT_IDENT_CHAR.sub("_", str(text))


def sanitize_identifier(name: str) -> str:
    """Any string -> a valid C identifier that is not a keyword or a reserved name.

    Characters outside [A-Za-z0-9_] become "_"; a leading digit or underscore (names
    starting with "_" are reserved for the implementation) gets a "v" prefix; reserved
    words get a "_" suffix; long names are cut and keep a hash of the full name. Not
    injective: pass names that must stay distinct through `unique_identifiers`.
    """
    text = identifier_part(name)
    if not text or not (text[0].isalpha()):
        text = "v" + text
    if text in _RESERVED:
        text += "_"
    if len(text) > MAX_LEN:
        digest = hashlib.sha1(str(name).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        text = text[: MAX_LEN - 9] + "_" + digest
    return text


def unique_identifiers(names: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """Sanitized identifiers for `names`, pairwise distinct and distinct from `taken`.

    Deterministic: the first occurrence keeps its sanitized form, later clashes get
    "_1", "_2", ... (equal input names also get distinct identifiers).
    """
    used = set(taken)
    out: list[str] = []
    for name in names:
        base = sanitize_identifier(name)
        candidate, n = base, 0
        while candidate in used:
            n += 1
            suffix = f"_{n}"
            candidate = base[: MAX_LEN - len(suffix)] + suffix
        used.add(candidate)
        out.append(candidate)
    return out


def check_identifier(name: str, what: str = "C function name") -> None:
    """ValueError unless `name` is usable as-is (a generated name, or one already sanitized)."""
    if not is_identifier(name):
        raise ValueError(f"{name!r} is not a usable {what}; pass it through sanitize_identifier first")


_STRING_SAFE = frozenset("_.,:;-+=/()[]{}<>!#%&*^|~@$ ")


def c_string(text: str) -> str:
    """A C string literal for any text: letters, digits and harmless punctuation stay, every other
    byte of its UTF-8 is an octal escape (so no quote, backslash, trigraph or newline survives)."""
    out = []
    for byte in str(text).encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        out.append(ch if ch.isalnum() and byte < 128 or ch in _STRING_SAFE else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


# Everything else in a comment becomes "_": no "*/" or "/*" (comment nesting, -Wcomment), no
# backslash or "??/" (line splicing), no newline or control characters from a model's names.
_COMMENT_UNSAFE = re.compile(r"[^A-Za-z0-9_ .,:;=+\-()\[\]%#<>@']")


def comment_text(text: str) -> str:
    """`text` with everything that could end, nest or splice a C comment replaced by "_"."""
    return _COMMENT_UNSAFE.sub("_", str(text))


def comment(text: str) -> str:
    """`/* text */` with everything that could end, nest or splice the comment replaced."""
    return f"/* {comment_text(text)} */"
