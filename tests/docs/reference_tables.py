"""What PROTOCOL.md is checked against, and how its tables are read:
the ops from braked --help-ops and the fields of the kOps table in
daemon/ops.cc, the reference's per-op field tables, the type cells of those
tables (parse_type) and a valid value of each type (sample). MISSING stands
for a field left out of a request.
"""

import os
import re
import subprocess

from doc_markers import code, tables
from docs_env import BRAKED, DOCS, ROOT, read


def ref_text() -> str:
    return read(os.path.join(DOCS, "PROTOCOL.md"))


def op_sections():
    """{op: [field rows as dicts]} from the ### sections of the reference."""
    out = {}
    for heading, rows in tables(ref_text()):
        if rows[0][:2] == ["field", "type"] and heading.split()[0] in \
                ops_from_help():
            op = heading.split()[0]
            head = rows[0]
            out[op] = [dict(zip(head, r)) for r in rows[1:]]
    return out


_HELP = None


def ops_from_help():
    """[(op, admin, help)] from braked --help-ops (the ops table)."""
    global _HELP
    if _HELP is None:
        text = subprocess.run([BRAKED, "--help-ops"], check=True,
                              capture_output=True, text=True).stdout
        _HELP = {}
        for line in text.splitlines():
            m = re.match(r"^(\S+)( \(admin\))?: (.*)$", line)
            assert m, "unexpected --help-ops line: " + line
            _HELP[m.group(1)] = (bool(m.group(2)), m.group(3))
    return _HELP


def ops_cc_fields():
    """{op: [field names]} from the kOps table in daemon/ops.cc."""
    src = read(os.path.join(ROOT, "daemon", "ops.cc"))
    start = src.index("const std::vector<Dispatcher::Op> kOps = WithScannerKeys({")
    end = src.index("\n});", start)
    table = src[start:end]
    out = {}
    parts = re.split(r'\n    \{"([a-z.]+)",', table)
    for i in range(1, len(parts), 2):
        op, body = parts[i], parts[i + 1]
        fields = re.findall(r'\{"(\w+)", FieldKind::', body)
        if "kScopeField" in body:
            fields.insert(0, "scope")
        out[op] = fields
    return out


def parse_type(cell: str):
    """('int', lo, hi) | ('number', lo, hi) | ('enum', [choices]) | (kind,)"""
    t = code(cell)
    m = re.match(r"^integer (\d+)\.\.(\d+)", t)
    if m:
        return ("int", int(m.group(1)), int(m.group(2)))
    m = re.match(r"^number ([\d.]+)\.\.([\d.]+)", t)
    if m:
        return ("number", float(m.group(1)), float(m.group(2)))
    m = re.match(r"^one of (.*)$", t)
    if m:
        return ("enum", [c.strip() for c in m.group(1).split(",")])
    m = re.match(r"^(name|scope|string|object|array|boolean)\b", t)
    if m:
        return (m.group(1),)
    raise AssertionError("unknown type in PROTOCOL.md: " + cell)


def sample(t):
    """A valid value of type t."""
    kind = t[0]
    return {"int": lambda: t[1], "number": lambda: t[1],
            "enum": lambda: t[1][0], "name": lambda: "docs",
            "scope": lambda: "global", "string": lambda: "docs-lease",
            "object": lambda: {}, "array": lambda: [],
            "boolean": lambda: False}[kind]()


MISSING = object()
