"""`# ERR:<name>` markers: tests put one on each statement that must raise,
and check the error's position against the marker's line."""
import functools


@functools.lru_cache(maxsize=None)
def source_lines(path):
    with open(path) as f:
        return tuple(f.read().splitlines())


def marker_line(path, marker):
    """The 1-based line of `path` that ends with `# ERR:<marker>`."""
    hits = [i + 1 for i, text in enumerate(source_lines(path))
            if text.rstrip().endswith(f"# ERR:{marker}")]
    assert len(hits) == 1, marker
    return hits[0]
