"""Source positions found by reading a function's code (not its frames)."""
import ast
import inspect
import textwrap

from ._location import def_loc

_cache = {}


def return_loc(fn):
    """(file, line, col) of the last `return` of `fn`, else its def line."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return def_loc(fn)
    if code in _cache:
        return _cache[code]
    loc = def_loc(fn)
    try:
        lines, first = inspect.getsourcelines(fn)
        source = textwrap.dedent("".join(lines))
        indent = len(lines[0]) - len(lines[0].lstrip())
        tree = ast.parse(source)
        returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)]
        if returns:
            last = max(returns, key=lambda n: (n.lineno, n.col_offset))
            loc = (code.co_filename, first + last.lineno - 1,
                   last.col_offset + indent + 1)
    except (OSError, TypeError, SyntaxError, IndexError):
        pass
    _cache[code] = loc
    return loc
