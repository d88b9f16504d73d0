"""YAML for the files a user writes (incident manifests, door rules, capsule manifests).

PyYAML's safe loader keeps the *last* of a key written twice in one mapping, so a second
``rules:`` block appended to a rules file, or a second ``transcripts:`` block in a manifest,
silently replaces the first.  :func:`load` refuses that instead (:class:`DuplicateKeyError`,
with both lines); merge keys (``<<: *anchor``) are not duplicates.  Aliases (``*name``) that
repeat more than :data:`MAX_ALIAS_VALUES` values (a few hundred bytes of nested aliases can stand
for millions: every reader that walks the data — a schema check, an error message — walks them
all), or that put a list or mapping inside itself, are refused too
(:class:`AliasExpansionError`).  Everything else is ``yaml.safe_load``.  :func:`line_at` finds the line of a field a schema error names (in YAML,
or in JSON: a JSON text is read as YAML to find it).
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["AliasExpansionError", "DuplicateKeyError", "MAX_ALIAS_VALUES", "NestedTooDeepError", "load", "line_at",
           "describe"]

#: how many values (scalars, lists, mappings) aliases may repeat in one document beyond those
#: written out; far more than any manifest, door rules or capsule file needs
MAX_ALIAS_VALUES = 100_000


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping writes one key twice.  ``problem`` is the sentence to show; ``problem_mark``
    is where the second one is (``.line`` 0-based); ``first_line`` (1-based) the first one."""

    def __init__(self, key: Any, first, second) -> None:
        self.key = key
        self.first_line = first.start_mark.line + 1
        super().__init__(
            None, None, f"key {key!r} is written twice (lines {self.first_line} and {second.start_mark.line + 1}); "
            "YAML keeps only the last, so what the first holds would be ignored: merge them into one",
            second.start_mark)


class NestedTooDeepError(yaml.MarkedYAMLError):
    """The text nests lists and mappings deeper than PyYAML's recursive reader can follow (a few
    hundred levels: Python's recursion limit).  ``problem_mark`` is where the deepest nesting
    starts (``.line`` 0-based), so the message names the line as any YAML error does."""


class AliasExpansionError(yaml.MarkedYAMLError):
    """Aliases repeat more than :data:`MAX_ALIAS_VALUES` values, or a list or mapping holds
    itself through an alias.  ``problem_mark`` is where the list or mapping that passes the
    bound (or holds itself) starts (``.line`` 0-based)."""


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return []


def _check_aliases(root) -> None:
    """Raise :class:`AliasExpansionError` when the node graph under ``root`` (an alias is the
    node it names, met again) is a cycle, or spelt out as a tree would hold more than
    :data:`MAX_ALIAS_VALUES` nodes beyond the distinct ones.  One pass over the distinct nodes
    (no recursion: a document may nest deeply)."""
    size: dict[int, int] = {}  # id -> nodes of the node spelt out
    extra: dict[int, int] = {}  # id -> of those, the ones aliases repeat
    owner: dict[int, int] = {}  # id -> id of the node under which it was first met
    entered: set[int] = set()  # on the path from the root
    stack: list = [(root, False, None)]
    while stack:
        node, done, parent = stack.pop()
        k = id(node)
        kids = _children(node)
        if not done:
            if k in size:
                continue
            entered.add(k)
            owner[k] = parent
            stack.append((node, True, parent))
            for c in reversed(kids):  # (document order)
                if id(c) in entered:
                    raise AliasExpansionError(
                        None, None, "an alias (*name) inside the list or mapping it names: it holds itself, "
                        "which no manifest, rules or capsule file needs", node.start_mark)
                if id(c) not in size:
                    stack.append((c, False, k))
            continue
        entered.discard(k)
        n, more, claimed = 1, 0, set()
        for c in kids:
            ck = id(c)
            n += size[ck]
            if owner.get(ck) == k and ck not in claimed:
                claimed.add(ck)
                more += extra[ck]
            else:
                more += size[ck]
        size[k], extra[k] = n, more
        if more > MAX_ALIAS_VALUES:
            raise AliasExpansionError(
                None, None, f"aliases (*name) repeat {_total_extra(root):,} values "
                f"the text does not write out, over the {MAX_ALIAS_VALUES:,} they may: write the values out",
                node.start_mark)


def _total_extra(root) -> int:
    """The values aliases repeat in the whole document (after :func:`_check_aliases` stopped
    early): the nodes of the document spelt out less its distinct nodes."""
    total: dict[int, int] = {}
    distinct: set[int] = set()
    todo: list = [(root, False)]
    while todo:
        node, done = todo.pop()
        k = id(node)
        if done:
            total[k] = 1 + sum(total[id(c)] for c in _children(node))
            continue
        if k in total or k in distinct:
            continue
        distinct.add(k)
        todo.append((node, True))
        todo.extend((c, False) for c in _children(node) if id(c) not in total and id(c) not in distinct)
    return total[id(root)] - len(distinct)


def _deepest(stream: str | bytes):
    """``(depth, mark)`` of the deepest list or mapping start in ``stream`` (PyYAML's event
    parser keeps a stack of its own, so this does not recurse); ``(0, None)`` when it cannot
    be read."""
    depth, deepest, mark = 0, 0, None
    try:
        for event in yaml.parse(stream, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > deepest:
                    deepest, mark = depth, event.start_mark
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except (yaml.YAMLError, RecursionError):
        pass
    return deepest, mark


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing a key written twice in one mapping, and aliases beyond
    bounds (:func:`_check_aliases`)."""

    def construct_document(self, node):
        _check_aliases(node)
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *anchor`` merges: no key
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:  # an unhashable key: the constructor says so itself
                    continue
                if first is not key_node:
                    raise DuplicateKeyError(key, first, key_node)
        return super().construct_mapping(node, deep=deep)


def load(stream: str | bytes) -> Any:
    """``yaml.safe_load(stream)``, refusing a key written twice in one mapping.

    Raises:
        DuplicateKeyError: a mapping writes a key twice (a ``yaml.YAMLError``).
        NestedTooDeepError: lists or mappings nested too deep to read (a ``yaml.YAMLError``;
            ``yaml.safe_load`` raises ``RecursionError``).
        AliasExpansionError: aliases repeat more than :data:`MAX_ALIAS_VALUES` values, or put a
            list or mapping inside itself (a ``yaml.YAMLError``).
        yaml.YAMLError: not YAML (as ``yaml.safe_load``).
    """
    try:
        return yaml.load(stream, Loader=_UniqueKeyLoader)  # (safe: SafeLoader's constructors)
    except RecursionError:
        depth, mark = _deepest(stream)
        raise NestedTooDeepError(None, None, f"nested too deeply to read: lists or mappings {depth:,} levels deep",
                                 mark) from None


def line_at(text: str | bytes, where: list) -> int | None:
    """The 1-based line of the node at ``where`` (mapping keys and list indexes from the top, as
    a schema error's path gives them): for a mapping key, the line the key is written on; for a
    list item, the item's first line; for ``[]``, the top node's first line.  When the path
    leaves the document early, the line of the deepest node found on the way; ``None`` when
    the text cannot be read as YAML (JSON records are read as YAML here: their lines are the
    same).
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    if node is None:
        return None
    line = node.start_mark.line + 1
    for step in where:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if getattr(k, "value", None) == str(step)), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return line


def describe(exc: yaml.YAMLError) -> str:
    """A YAML error in words for a message that already names the file and line: PyYAML's own
    text names the input ``"<byte string>"`` and repeats the line, so it is rebuilt from the
    error's parts — ``expected <block end>, but found '<block mapping start>' (column 2), in a
    block mapping that starts on line 1`` — with the offending line's text quoted.  An error
    without marks gives PyYAML's text."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if not problem or mark is None:
        return str(exc)
    out = f"{problem} (column {mark.column + 1})"
    context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and cmark is not None:
        ctx = context.removeprefix("while ").removeprefix("parsing ").removeprefix("scanning ")
        out += f", in {ctx} that starts on line {cmark.line + 1}"
    buf = getattr(mark, "buffer", None)
    if isinstance(buf, str):
        lines = buf.split("\n")
        if 0 <= mark.line < len(lines):
            text = lines[mark.line].rstrip("\r\x00")
            if text.strip():
                out += f": {text.strip()[:120]!r}"
    return out
