"""The state of one trace: a TraceBuilder plus the Python objects (meshes,
actors, endpoints) already declared in its module, and the scope stack.

One trace builds one module holding one compiled function and everything it
uses. Meshes, actor classes and actor meshes are declared in the module the
first time the traced code touches them.
"""
import re
import threading

from . import _location, errors
from ._native import TraceBuilder
from ._primitives import PRIMITIVES
from ._settings import Settings

_local = threading.local()


def current():
    """The innermost active trace, or None."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def _sanitize(name):
    name = re.sub(r"[^A-Za-z0-9_]", "_", name or "fn")
    return name if name and not name[0].isdigit() else "_" + name


class Trace:
    def __init__(self, name, settings=None):
        self.name = _sanitize(name)
        self.builder = TraceBuilder()
        self.mesh_names = {}  # id(Mesh) -> symbol
        self.meshes = {}  # symbol -> Mesh
        self.class_names = {}  # (type, state key) -> symbol
        self.actor_names = {}  # id(actor) -> actor mesh symbol
        self.actors = {}  # actor mesh symbol -> actor
        self.actor_classes = {}  # actor mesh symbol -> class symbol
        self.endpoints = {}  # (class, method, key) -> (sym, treedef, probes)
        self.endpoint_stack = []  # EndpointTrace objects
        self.used = set()
        # The specialisation's settings (_settings.py), resolved once.
        self.settings = settings or Settings.resolve()
        # MONARCH_CHECK_REPLICATED=1: endpoint results declared replicated
        # are checked after each call (_actors._replication_probes).
        self.check_replicated = self.settings.check_replicated
        self.replication_probes = []  # (endpoint, index, dtype, loc, d, m)
        # Called as observer(primitive, args, result, loc) after every
        # builder call: mc.vjp's tapes (_tape.Tape).
        self.observers = []

    # Activation -------------------------------------------------------------
    def __enter__(self):
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _local.stack.pop()
        return False

    def call(self, method, *args, loc=None):
        """Builder method `method` (a primitive of `_primitives.PRIMITIVES`)
        on `args`, its errors raised at the user's line `loc`; the
        observers see the call."""
        prim = PRIMITIVES.get(method)
        if prim is None:
            raise errors.MonarchError(
                f"internal error: the builder method {method!r} has no "
                "primitive (python/monarch_compile/_primitives.py)")
        out = _location.call(getattr(self.builder, method), *args, loc=loc)
        for observer in self.observers:
            observer(prim, args, out, loc)
        return out

    # Meshes -----------------------------------------------------------------
    def mesh_symbol(self, mesh, loc):
        """Declares `mesh` (and its parents) in the module, located where the
        user created it; its symbol."""
        key = id(mesh)
        if key in self.mesh_names:
            return self.mesh_names[key]
        loc = mesh.loc
        if mesh.parent is None:
            base = "mesh"
            name = base
            i = 1
            while name in self.meshes:
                name = f"{base}_{i}"
                i += 1
            self.call("declare_mesh", name, list(mesh.dims.items()), loc, loc=loc)
        else:
            parent = self.mesh_symbol(mesh.parent, loc)
            parts = [f"{d}{a}_{b}" for d, (a, b) in mesh.ranges.items()]
            base = f"{parent}_" + "_".join(parts) if parts else f"{parent}_all"
            name = base
            i = 1
            while name in self.meshes:
                name = f"{base}_{i}"
                i += 1
            ranges = [(d, a, b) for d, (a, b) in mesh.ranges.items()]
            self.call("declare_slice", name, parent, ranges, loc, loc=loc)
        self.mesh_names[key] = name
        self.meshes[name] = mesh
        return name
