"""Exceptions of monarch_compile.

Tracing errors carry the user's source position (`file`, `line`, `col`) and
their message shows it with the offending source line, like a compiler
diagnostic:

    step.py:12:9: error: matmul shape mismatch: (4,8) @ (7,3): 8 != 7
        y = x @ w
            ^
"""
import linecache


class MonarchError(Exception):
    """Base class of monarch_compile's errors."""


class TraceError(MonarchError):
    """An error in a traced program, reported at the user's source line."""

    def __init__(self, message, file=None, line=None, col=None):
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        super().__init__(format_diagnostic(message, file, line, col))


class ShapeError(TraceError, ValueError):
    """Incompatible shapes (matmul, broadcasting, reshape...)."""


class ShardingError(TraceError, ValueError):
    """A sharding that does not fit the tensor or the mesh."""


class MeshError(TraceError, ValueError):
    """An unknown mesh, mesh dimension or actor placement problem."""


class UnsupportedError(TraceError, NotImplementedError):
    """An op or dtype the compiler does not support."""


class ConcretizationError(TraceError, TypeError):
    """A traced tensor used where a concrete Python value is needed."""


class ExecutorUnavailableError(MonarchError, NotImplementedError):
    """Something that needs the executor and is not supported yet (eager
    endpoint calls)."""


class ExecutionError(MonarchError, RuntimeError):
    """Running a compiled program failed: a worker raised, crashed, hung or
    lost its connection (the message names the rank, the op and the user's
    source line), the mesh was stopped, or the program could not be compiled
    to a plan."""


def format_diagnostic(message, file, line, col):
    if not file:
        return f"error: {message}"
    head = f"{file}:{line}:{col}: error: {message}"
    source = linecache.getline(file, line) if line else ""
    if not source.strip():
        return head
    text = source.rstrip("\n")
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    caret = " " * max(0, (col or 1) - 1 - indent)
    return f"{head}\n    {stripped}\n    {caret}^"


# The exception class of each kind of native error (ErrorKind in
# support/include/monarch/Support/Status.h, by its name).
_BY_KIND = {
    "shape": ShapeError,
    "sharding": ShardingError,
    "mesh": MeshError,
    "unsupported": UnsupportedError,
}


def for_kind(kind):
    """The exception class of a native error of `kind` (TraceError for a
    mistake of no narrower kind)."""
    return _BY_KIND.get(kind, TraceError)
