"""Source locations of the user's code and conversion of native errors.

Every op records the position of the innermost frame outside this package
(the user's line, not the library's), with the column of the expression
being evaluated (Python 3.11 code positions).
"""
import itertools
import os
import sys

from . import errors
from ._native import NativeError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


# Both are asked on every traced op and every compiled call, and each used
# to cost a path normalisation or a walk over the code's positions (tens of
# microseconds per call): memoised, by file name and by (file, code,
# instruction).
_IN_PACKAGE = {}
_POSITIONS = {}


def _in_package(filename):
    inside = _IN_PACKAGE.get(filename)
    if inside is None:
        inside = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
        if len(_IN_PACKAGE) < 65536:
            _IN_PACKAGE[filename] = inside
    return inside


def _frame_loc(frame):
    code = frame.f_code
    # Code objects compare equal across files (co_filename is not part of
    # their equality): the file is part of the key.
    key = (code.co_filename, code, frame.f_lasti)
    loc = _POSITIONS.get(key)
    if loc is not None:
        return loc
    line, col = frame.f_lineno, 1
    positions = getattr(code, "co_positions", None)
    if positions is not None and frame.f_lasti >= 0:
        pos = next(itertools.islice(positions(), frame.f_lasti // 2, None), None)
        if pos is not None:
            if pos[0] is not None:
                line = pos[0]
            if pos[2] is not None:
                col = pos[2] + 1
    loc = (code.co_filename, int(line or 0), int(col))
    if len(_POSITIONS) < 65536:
        _POSITIONS[key] = loc
    return loc


def user_loc():
    """(file, line, col) of the innermost caller outside monarch_compile."""
    frame = sys._getframe(1)
    while frame is not None and _in_package(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return ("<unknown>", 0, 0)
    return _frame_loc(frame)


def def_loc(fn):
    """Where `fn` is defined (its `def` line)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ("<unknown>", 0, 0)
    return (code.co_filename, code.co_firstlineno, 1)


def convert(err, loc=None):
    """The TraceError of a NativeError's kind, at the NativeError's location
    (`loc` where it has none)."""
    if err.file:
        file, line, col = err.file, err.line, err.col
    else:
        file, line, col = loc if loc else (None, None, None)
    return errors.for_kind(err.kind)(err.message, file, line, col)


def call(fn, *args, loc=None):
    """Calls a native builder method, turning its errors into TraceErrors."""
    try:
        return fn(*args)
    except NativeError as err:
        raise convert(err, loc) from None


def fail(cls, message, loc):
    raise cls(message, *loc)
