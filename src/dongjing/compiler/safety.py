"""How user strings may enter generated Python source: never as code.

Node names, file names, source lines and string attributes are user data. Identifiers in
generated code are generated here (ASCII, unique); a user string appears only inside a comment
or a literal, escaped so that it cannot end the line, change how the line reads (bidirectional
controls), or turn into another identifier (Python folds identifiers by NFKC: "ﬁ" is "fi").
"""

from __future__ import annotations

import keyword
import re

_ASCII_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NOT_IDENTIFIER_CHAR = re.compile(r"[^A-Za-z0-9_]")


def local_name(taken: set) -> str:
    """A fresh variable of generated code: `v<k>`, not in `taken` (added to it).

    Generated code's own names either start with `_` (globals, loop state) or are `feeds`,
    `pending`, `outputs`: none has this form, so no user string can shadow one."""
    k = len(taken)
    while f"v{k}" in taken:
        k += 1
    name = f"v{k}"
    taken.add(name)
    return name


# Names generated code gives its loop functions' locals (loops.py), the timed variant's locals
# and the globals set outside `Namespace.bind` (planned buffers, `_np`, `_SourceError`, `_clk`):
# a bound global must be none of them, or a statement would read the wrong value.
_RESERVED = re.compile(r"_(?:v|init|cc|bc|S|h|P|s|g|f|c|a|d)\d+|_(?:k|cap|n|ts|tsa|np|clk)"
                       r"|_SourceError|_buf\w*")


def global_base(base: str) -> str:
    """`base` (an op or attribute name, or a generated name) as an ASCII identifier starting
    with `_` and not starting with `_buf` (the planned buffers' stem): the stem of a global of
    the generated function (made unique by its Namespace, see `is_reserved`)."""
    if not _ASCII_IDENTIFIER.match(base) or keyword.iskeyword(base):
        base = _NOT_IDENTIFIER_CHAR.sub("_", base)
    base = base if base.startswith("_") else "_" + base
    return "_g" + base if base.startswith("_buf") else base


def is_reserved(name: str) -> bool:
    """A name generated code uses for its own locals or fixed globals (see `_RESERVED`)."""
    return bool(_RESERVED.fullmatch(name))


def is_plain(text: str) -> bool:
    """An ASCII identifier (it reads the same in a comment and cannot be mistaken)."""
    return bool(_ASCII_IDENTIFIER.match(text))


def escaped(text: str) -> str:
    """`text` for a comment of generated source: as it is when it is printable ASCII, else its
    `repr` (every line break, control, bidirectional override and lone surrogate escaped)."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    return repr(text)


def comment(name: str | None, source: str | None) -> str:
    """The trailing comment of a node's line: `  # %name  file.py:12`, each part escaped."""
    parts = []
    if name:
        parts.append(percent_name(name))
    if source:
        parts.append(escaped(source))
    return "  # " + "  ".join(parts) if parts else ""


def percent_name(name: str) -> str:
    """A node's name as the graph text shows it (`%h1`), its `repr` unless plain ASCII."""
    return f"%{name}" if is_plain(name) else f"%{escaped(name)}"


def keyword_argument(key: str, value_source: str) -> str:
    """`key=value` in a call; `**{'key': value}` when `key` is not a plain ASCII identifier
    (a keyword argument written in source is NFKC-folded, a dict key is not)."""
    if is_plain(key) and not keyword.iskeyword(key):
        return f"{key}={value_source}"
    return f"**{{{key!r}: {value_source}}}"
