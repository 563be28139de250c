"""YAML as people write it, minus the trap: a key given twice in one mapping is an error, not "the last one wins".

PyYAML (like the YAML 1.1 loaders it follows) keeps the last of two equal keys
silently, so `size: 415 GB` followed later by `size: 70 TB` would run the
second.  YAML 1.2 says mapping keys are unique; this loader enforces that and
names both lines.  Two more refusals, each a yaml.YAMLError with its line: an
integer longer than Python reads (`sys.get_int_max_str_digits()`, 4300 digits),
and a document whose aliases expand to more than MAX_EXPANDED_NODES nodes (a
"billion laughs" bomb: nine anchors of nine aliases each build 10^9 nodes that
every later walk over the data would visit).  Everything else is `yaml.safe_load`.
"""

from __future__ import annotations

import sys

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

# A safety bound on input, not a model value (nothing is sampled from it): the largest YAML file in this repository expands to 3,227 nodes
# (scenarios/studies/storagereview_ckpt_fill.yaml; the catalog's ssd.yaml 1,765); a measured calibration
# bundle of a few thousand fio jobs stays under 10^5.  Plausible range 10^5..10^7; 10^6 builds in about a
# second, while an alias bomb's 10^9 took 27 s and 2.3 GB before anything refused it.
MAX_EXPANDED_NODES = 1_000_000


class DuplicateKeyError(ConstructorError):
    """A mapping with one key twice; `problem_mark` is the second, the message names the first."""


class DocumentTooLargeError(ConstructorError):
    """Aliases that expand the document beyond MAX_EXPANDED_NODES nodes, or a node that contains itself."""


def _expanded_nodes(root: Node) -> int:
    """Nodes the document holds once every alias is replaced by what it names (shared nodes counted each time)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise DocumentTooLargeError(None, None, "an alias names a node that contains it (a recursive document)", node.start_mark)
        open_nodes.add(key)
        children: list[Node] = []
        if isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, SequenceNode):
            children = list(node.value)
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_EXPANDED_NODES:
                break  # no need to count further
        open_nodes.discard(key)
        sizes[key] = total
        return total

    return size(root)


class _Strict:
    """The three refusals, over either PyYAML parser (a mixin: super() is the loader's SafeConstructor)."""

    def construct_document(self, node: Node) -> object:
        if _expanded_nodes(node) > MAX_EXPANDED_NODES:
            raise DocumentTooLargeError(
                None, None, f"its aliases expand it to more than {MAX_EXPANDED_NODES:,} values (expected a plain document; "
                "an anchor repeated inside anchors multiplies)", node.start_mark)
        return super().construct_document(node)

    def construct_yaml_int(self, node: Node) -> int:
        try:
            return super().construct_yaml_int(node)  # type: ignore[no-any-return]
        except ValueError:  # more digits than Python converts: int() refuses (CVE-2020-10735)
            digits = sum(c.isdigit() for c in str(node.value))
            raise ConstructorError(None, None, f"an integer of {digits} digits: expected at most {sys.get_int_max_str_digits()} digits",
                                   node.start_mark) from None

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[object, object]:
        if isinstance(node, MappingNode):
            seen: dict[object, Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *anchor` merges are allowed to repeat keys they merge
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: SafeLoader reports it below
                    first = None
                if first is not None:
                    raise DuplicateKeyError(
                        "while reading a mapping", node.start_mark,
                        f"duplicate key {key!r} (first given at line {first.start_mark.line + 1}); each key may appear once",
                        key_node.start_mark,
                    )
                try:
                    seen[key] = key_node
                except TypeError:
                    pass
        return super().construct_mapping(node, deep=deep)


class _UniqueKeyLoader(_Strict, yaml.SafeLoader):  # type: ignore[misc]
    pass


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _UniqueKeyLoader.construct_yaml_int)
# libyaml's parser builds the same nodes about 10x faster (the catalog: ~0.2 s -> ~0.02 s of every `iowatt run`'s
# start-up, issue 33); the constructor, and so every refusal above, is the same Python code on both
_Loader: type = _UniqueKeyLoader
if yaml.__with_libyaml__:
    class _UniqueKeyCLoader(_Strict, yaml.CSafeLoader):  # type: ignore[misc]
        pass

    _UniqueKeyCLoader.add_constructor("tag:yaml.org,2002:int", _UniqueKeyCLoader.construct_yaml_int)
    _Loader = _UniqueKeyCLoader


def load(text: str) -> object:
    """`yaml.safe_load`, except that a duplicate key raises DuplicateKeyError (a yaml.YAMLError) with its line."""
    return yaml.load(text, Loader=_Loader)


def describe(error: yaml.YAMLError) -> str:
    """`at line L, column C: what is wrong` (the PyYAML message's first line where it has no mark)."""
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"malformed YAML{where}: {problem}"
