"""`python -m monarch_compile knobs`: the table of MONARCH_* variables."""
import sys

from . import knobs


def main(argv):
    if argv == ["knobs"]:
        print(knobs.markdown())
        return 0
    print("usage: python -m monarch_compile knobs   (print every MONARCH_* "
          "variable as a Markdown table)", file=sys.stderr)
    return 2


sys.exit(main(sys.argv[1:]))
