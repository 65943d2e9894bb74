"""Reading the docs: fenced code blocks with the <!-- marker --> before each,
the marked blocks of a kind, the cookbook's block for a recipe, and markdown
tables with the heading they are under.

Conventions in the docs (an HTML comment on the line before a ```json block):

    <!-- policy: SCOPE [recipe=ID] -->  the block is a policy: sent with policy.set
    <!-- prices [recipe=ID] -->         the block is a prices.set request body
    <!-- reply: ID -->                  what an agent sees in recipe ID: compared
                                         with the reply the recipe's scenario gets
    <!-- config -->                     a config file: braked must start on it
    <!-- example -->                    PROTOCOL.md: a request line and
                                         its reply, replayed in order

Every ```json block, marked or not, must be valid JSON (one value, or one per
line).
"""

import json
import os
import re

from docs_env import DOCS, read


class Block:
    def __init__(self, doc, line, info, text, marker):
        self.doc = doc          # file name
        self.line = line        # line of the opening fence
        self.info = info        # "json", "sh", ...
        self.text = text
        self.marker = marker    # the <!-- ... --> text before it, or None

    def where(self) -> str:
        return "%s:%d" % (self.doc, self.line)

    def values(self):
        """The block's JSON: one value, or one per line."""
        try:
            return [json.loads(self.text)]
        except ValueError:
            pass
        out = []
        for n, line in enumerate(self.text.splitlines()):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError as e:
                    raise AssertionError("%s: line %d of the block is not JSON: %s"
                                         % (self.where(), n + 1, e))
        return out


def blocks(doc: str):
    lines = read(os.path.join(DOCS, doc)).splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m or not m.group(1):
            if lines[i].startswith("```"):
                # a bare ``` opening: skip to its end
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                i = j + 1
                continue
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        marker = None
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            mm = re.match(r"^<!--\s*(.*?)\s*-->$", lines[k].strip())
            if mm:
                marker = mm.group(1)
        out.append(Block(doc, start + 1, m.group(1),
                         "\n".join(lines[start + 1:j]), marker))
        i = j + 1
    return out


def marked(doc: str, kind: str):
    """(args dict, block) for blocks whose marker starts with `kind`."""
    out = []
    for b in blocks(doc):
        if b.marker is None:
            continue
        head, _, rest = b.marker.partition(" ")
        if head.rstrip(":") != kind:
            continue
        args = {}
        for word in rest.split():
            if "=" in word:
                k, v = word.split("=", 1)
                args[k] = v
            else:
                args.setdefault("scope", word)
        out.append((args, b))
    return out


def recipe_block(kind: str, recipe: str) -> Block:
    for args, b in marked("COOKBOOK.md", kind):
        if args.get("recipe") == recipe or (kind == "reply" and
                                             args.get("scope") == recipe):
            return b
    raise AssertionError("COOKBOOK.md has no <!-- %s ... %s --> block"
                         % (kind, recipe))


def tables(text: str):
    """Markdown tables as lists of row cell lists (header first), with the
    heading they are under."""
    out = []
    heading = ""
    rows = []
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|"):
            cells = [c.strip() for c in
                     re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            out.append((heading, rows))
            rows = []
    return out


def code(cell: str) -> str:
    return cell.replace("`", "").strip()
