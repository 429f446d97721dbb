"""Nested results (pytrees): tuples, lists, namedtuples, dicts with string
keys and None, with leaves of one type (traced Tensors while tracing, numpy
arrays when results come back).

`flatten(tree, leaf_type)` gives the leaves in order (dicts in insertion
order) and a hashable `treedef`; `unflatten(treedef, leaves)` rebuilds the
same structure around new leaves.
"""

LEAF = "*"


class NotATree(TypeError):
    """A node that is neither a leaf nor a supported container; `path`
    names it (e.g. `[1]['w']`)."""

    def __init__(self, node, path):
        self.node = node
        self.path = path
        super().__init__(f"{type(node).__name__} at result{path}")


def flatten(tree, leaf_type):
    """(leaves, treedef) of `tree`; raises NotATree for anything else."""
    leaves = []

    def visit(node, path):
        if isinstance(node, leaf_type):
            leaves.append(node)
            return LEAF
        if node is None:
            return None
        if isinstance(node, tuple) and hasattr(type(node), "_fields"):
            return ("namedtuple", type(node),
                    tuple(visit(c, f"{path}.{f}")
                          for f, c in zip(node._fields, node)))
        if isinstance(node, (tuple, list)):
            kind = "tuple" if isinstance(node, tuple) else "list"
            return (kind, tuple(visit(c, f"{path}[{i}]")
                                for i, c in enumerate(node)))
        if isinstance(node, dict):
            for k in node:
                if not isinstance(k, str):
                    raise NotATree(k, f"{path} (a dict key; keys must be "
                                   "strings)")
            return ("dict", tuple(node),
                    tuple(visit(c, f"{path}[{k!r}]") for k, c in node.items()))
        raise NotATree(node, path)

    treedef = visit(tree, "")
    return leaves, treedef


def unflatten(treedef, leaves):
    """`treedef` rebuilt with `leaves` (an iterable, consumed in order)."""
    it = iter(leaves)

    def build(node):
        if node == LEAF:
            return next(it)
        if node is None:
            return None
        kind = node[0]
        if kind == "tuple":
            return tuple(build(c) for c in node[1])
        if kind == "list":
            return [build(c) for c in node[1]]
        if kind == "dict":
            return {k: build(c) for k, c in zip(node[1], node[2])}
        return node[1](*(build(c) for c in node[2]))  # namedtuple

    return build(treedef)
