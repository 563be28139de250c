"""YAML as people write it, minus the trap: a key given twice in one mapping is an error, not "the last one wins".

PyYAML (like the YAML 1.1 loaders it follows) keeps the last of two equal keys
silently, so `size: 415 GB` followed later by `size: 70 TB` would run the
second.  YAML 1.2 says mapping keys are unique; this loader enforces that and
names both lines.  Everything else is `yaml.safe_load`.
"""

from __future__ import annotations

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node


class DuplicateKeyError(ConstructorError):
    """A mapping with one key twice; `problem_mark` is the second, the message names the first."""


class _UniqueKeyLoader(yaml.SafeLoader):
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


def load(text: str) -> object:
    """`yaml.safe_load`, except that a duplicate key raises DuplicateKeyError (a yaml.YAMLError) with its line."""
    return yaml.load(text, Loader=_UniqueKeyLoader)
