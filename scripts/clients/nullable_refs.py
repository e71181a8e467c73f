"""Rewrites, in an OpenAPI 3.0 document (in place), each nullable reference that a 3.1 to
3.0 converter left as `anyOf: [{$ref: X}, {type: 'null'}]` into the 3.0 form
`allOf: [{$ref: X}]` with `nullable: true`. Everything else is left as it is."""

import sys

import yaml


def rewrite(node):
    if isinstance(node, dict):
        for combinator in ("anyOf", "oneOf"):
            branches = node.get(combinator)
            if isinstance(branches, list) and len(branches) == 2:
                refs = [b for b in branches if isinstance(b, dict) and "$ref" in b]
                nulls = [b for b in branches if b == {"type": "null"}]
                if len(refs) == 1 and len(nulls) == 1:
                    del node[combinator]
                    node["allOf"] = refs
                    node["nullable"] = True
        for value in node.values():
            rewrite(value)
    elif isinstance(node, list):
        for value in node:
            rewrite(value)


path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    document = yaml.safe_load(f)
rewrite(document)
with open(path, "w", encoding="utf-8") as f:
    yaml.safe_dump(document, f, sort_keys=False, allow_unicode=True, width=100)
