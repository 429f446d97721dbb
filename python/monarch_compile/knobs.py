"""Every MONARCH_* environment variable, typed (like Triton's `knobs`).

The table is the C++ registry (monarch/Support/Knobs.h), read through the
native extension, so Python and C++ parse each variable the same way::

    import monarch_compile as mc
    mc.knobs.log_level              # $MONARCH_LOG_LEVEL, else its default "info"
    mc.knobs.comm_timeout_ms        # an int (milliseconds)
    mc.knobs.log_level = "debug"    # checked, then set in os.environ: workers
                                    # started afterwards inherit it
    del mc.knobs.log_level          # unset it
    mc.knobs.is_set("MONARCH_SHM")  # set in the environment?
    mc.knobs.table()                # every variable: name, type, default, doc

`python -m monarch_compile knobs` prints the README's table. A bad value
raises ValueError naming the variable and what it expects. (MONARCH_BUILD_DIR
is also read, directly, by the code that finds the native extension.)
"""
import os
import sys
import types
from dataclasses import dataclass

from ._native import native as _native


@dataclass(frozen=True)
class Knob:
    name: str
    type: str          # string, path, bool, int, ms, choice
    default: str       # "" when there is none
    min: int
    max: int
    choices: str       # "a|b" for choice
    readers: str       # "compiler, controller, worker, python"
    compile_input: bool  # changes compiled output (part of the cache key)
    doc: str

    @property
    def attribute(self):
        return self.name[len("MONARCH_"):].lower()


_TABLE = [Knob(**k) for k in _native.knob_table()]
_BY_NAME = {k.name: k for k in _TABLE}
_BY_ATTR = {k.attribute: k for k in _TABLE}


def table():
    """Every variable of the registry, in declaration order."""
    return list(_TABLE)


def _knob(name):
    k = _BY_NAME.get(name) or _BY_ATTR.get(name)
    if k is None:
        raise AttributeError(f"{name!r} is not a monarch variable; see "
                             "monarch_compile.knobs.table()")
    return k


def _convert(k, text):
    if k.type == "bool":
        return text.lower() in ("1", "true", "on", "yes")
    if k.type in ("int", "ms"):
        return int(text)
    return text


def is_set(name):
    """True when the variable is set (to a non-empty value)."""
    return bool(os.environ.get(_knob(name).name))


def get(name):
    """The typed value of `name` (MONARCH_X or x): the environment's when
    set, else the default (None when the variable has no default)."""
    k = _knob(name)
    text = os.environ.get(k.name, "")
    if text:
        error = _native.knob_check(k.name, text)
        if error:
            raise ValueError(error)
        return _convert(k, text)
    return _convert(k, k.default) if k.default != "" else None


def set(name, value):
    """Checks `value` and sets the variable (None unsets it)."""
    k = _knob(name)
    if value is None:
        os.environ.pop(k.name, None)
        return
    if isinstance(value, bool):
        text = "1" if value else "0"
    else:
        text = str(value)
    error = _native.knob_check(k.name, text)
    if error:
        raise ValueError(error)
    os.environ[k.name] = text


def markdown():
    """The README's table of the variables."""
    lines = ["| variable | read by | default | meaning |", "|---|---|---|---|"]
    for k in _TABLE:
        default = f"`{k.default}`" if k.default else "unset"
        lines.append(f"| `{k.name}` | {k.readers} | {default} | {k.doc} |")
    return "\n".join(lines)


class _Module(types.ModuleType):
    def __getattr__(self, attr):
        if attr in _BY_ATTR:
            return get(attr)
        raise AttributeError(f"module 'monarch_compile.knobs' has no "
                             f"attribute {attr!r}")

    def __setattr__(self, attr, value):
        if attr in _BY_ATTR:
            set(attr, value)
        else:
            super().__setattr__(attr, value)

    def __delattr__(self, attr):
        if attr in _BY_ATTR:
            set(attr, None)
        else:
            super().__delattr__(attr)

    def __dir__(self):
        return sorted(list(super().__dir__()) + list(_BY_ATTR))


sys.modules[__name__].__class__ = _Module
