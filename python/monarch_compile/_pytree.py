"""Nested results (pytrees): tuples, lists, namedtuples, dicts with string
or integer keys (torch's optimizer `state_dict` numbers its parameters) and
None, with leaves of one type (traced Tensors while tracing, numpy arrays
when results come back).

`flatten(tree, leaf_type, static=())` gives the leaves in order (dicts in
insertion order) and a hashable `treedef`; values of the `static` types
(Python numbers, strings: an optimizer's hyperparameters) are kept in the
treedef instead. `unflatten(treedef, leaves)` rebuilds the same structure
around new leaves.
"""

LEAF = "*"
#: Python values a structure may hold beside its leaves (kept in the treedef).
STATIC = (bool, int, float, str)


class NotATree(TypeError):
    """A node that is neither a leaf nor a supported container; `path`
    names it (e.g. `[1]['w']`)."""

    def __init__(self, node, path):
        self.node = node
        self.path = path
        super().__init__(f"{type(node).__name__} at result{path}")


def flatten(tree, leaf_type, static=()):
    """(leaves, treedef) of `tree`; raises NotATree for anything else."""
    leaves = []

    def visit(node, path):
        if isinstance(node, leaf_type):
            leaves.append(node)
            return LEAF
        if node is None:
            return None
        if static and isinstance(node, static):
            return ("static", node)
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
                if not isinstance(k, (str, int)) or isinstance(k, bool):
                    raise NotATree(k, f"{path} (a dict key; keys must be "
                                   "strings or integers)")
            return ("dict", tuple(node),
                    tuple(visit(c, f"{path}[{k!r}]") for k, c in node.items()))
        raise NotATree(node, path)

    treedef = visit(tree, "")
    return leaves, treedef


def unflatten(treedef, leaves):
    """`treedef` rebuilt with `leaves` (an iterable, consumed in order)."""
    # A module-level helper, not a recursive closure: a closure that calls
    # itself is a reference cycle, which kept the leaves (a call's result
    # arrays and their storage) alive until the garbage collector ran.
    return _build(treedef, iter(leaves))


def _build(node, it):
    if node == LEAF:
        return next(it)
    if node is None:
        return None
    kind = node[0]
    if kind == "static":
        return node[1]
    if kind == "tuple":
        return tuple(_build(c, it) for c in node[1])
    if kind == "list":
        return [_build(c, it) for c in node[1]]
    if kind == "dict":
        return {k: _build(c, it) for k, c in zip(node[1], node[2])}
    return node[1](*(_build(c, it) for c in node[2]))  # namedtuple
