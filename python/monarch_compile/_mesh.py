"""Meshes: named multi-dimensional groups of processes, and their slices."""
import atexit
import weakref

from . import _runtime, errors, knobs
from ._location import user_loc

_live = weakref.WeakSet()


class Mesh:
    """A mesh of processes with named dimensions (`mc.mesh(hosts=1, gpus=4)`).

    Workers start lazily at the first run; `stop()` (or leaving a `with`
    block, or interpreter exit) stops them.
    """

    def __init__(self, dims, parent=None, ranges=None, loc=None,
                 launcher="local"):
        self._dims = dict(dims)
        self.loc = loc or ("<unknown>", 0, 0)
        self.parent = parent
        self.ranges = dict(ranges or {})
        # How the root mesh's workers start: "local" processes, or "env"
        # (workers started by someone else join the controller).
        self.launcher = parent.launcher if parent is not None else launcher
        self._stopped = False
        _live.add(self)

    @property
    def dims(self):
        """{dimension name: size}, e.g. {"hosts": 1, "gpus": 4}."""
        return dict(self._dims)

    @property
    def size(self):
        n = 1
        for s in self._dims.values():
            n *= s
        return n

    def slice(self, **ranges):
        """A sub-mesh: `mesh.slice(gpus=slice(0, 2))`; unnamed dims whole."""
        loc = user_loc()
        dims = dict(self._dims)
        rng = {}
        for name, r in ranges.items():
            if name not in self._dims:
                raise errors.MeshError(
                    f"mesh has no dimension '{name}' (its dimensions: "
                    f"{', '.join(self._dims)})", *loc)
            size = self._dims[name]
            if isinstance(r, int):
                if not -size <= r < size:
                    raise errors.MeshError(
                        f"index {r} of dimension '{name}' is out of range "
                        f"(size {size})", *loc)
                r = slice(r % size, r % size + 1)
            if not isinstance(r, slice) or r.step not in (None, 1):
                raise errors.MeshError(
                    f"slice of dimension '{name}' must be an int or a "
                    "contiguous slice(start, stop)", *loc)
            # A mesh slice is the ranks asked for, never fewer: numpy's
            # clamping of out-of-range bounds would hand back a smaller mesh.
            for bound in (r.start, r.stop):
                if bound is not None and not -size <= bound <= size:
                    raise errors.MeshError(
                        f"slice {r.start}:{r.stop} of dimension '{name}' "
                        f"goes past it (size {size}): bounds must lie in "
                        f"-{size}..{size}", *loc)
            start, stop, _ = r.indices(size)
            if start >= stop:
                raise errors.MeshError(
                    f"slice {start}:{stop} of dimension '{name}' (size {size}) "
                    "is empty", *loc)
            rng[name] = (start, stop)
            dims[name] = stop - start
        return Mesh(dims, parent=self, ranges=rng, loc=loc)

    def spawn(self, name, cls, *args, **kwargs):
        """Spawns actor class `cls` on every rank of this mesh as `name`."""
        from ._actors import spawn
        return spawn(self, name, cls, args, kwargs, user_loc())

    def stop(self):
        """Stops this mesh's workers (idempotent)."""
        if not self._stopped:
            self._stopped = True
            _runtime.stop_mesh(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        dims = ", ".join(f"{k}={v}" for k, v in self._dims.items())
        return f"Mesh({dims})" if self.parent is None else f"MeshSlice({dims})"


_LAUNCHERS = ("local", "env", "slurm")


def mesh(launcher="local", **dims):
    """`mc.mesh(hosts=1, gpus=4)`: a mesh with named dimensions.

    `launcher` says how its workers start: "local" (default) forks one
    `monarch-worker` per rank on this machine; "env" waits for workers
    started by someone else (a batch system, `srun`, a script) to join: they
    and this process share MONARCH_CONTROLLER (host:port the controller
    listens on) and MONARCH_JOB_TOKEN, and each worker gets MONARCH_RANK and
    MONARCH_WORLD_SIZE (docs/executor.md); "slurm" runs one `srun` job
    step of every rank: the `hosts` dimension is the nodes, the others the
    tasks on each (inside an allocation it runs there; outside one it asks
    for one with salloc and gives it back when the mesh stops;
    MONARCH_SLURM_ARGS adds srun and salloc options; set MONARCH_BIND_HOST
    to an address of this machine the nodes reach)."""
    loc = user_loc()
    if launcher not in _LAUNCHERS:
        raise errors.MeshError(
            f"mc.mesh: launcher must be one of {', '.join(_LAUNCHERS)}, got "
            f"{launcher!r}", *loc)
    if launcher == "slurm":
        import shutil
        srun = knobs.slurm_srun
        if shutil.which(srun) is None:
            raise errors.MeshError(
                f"mc.mesh(launcher='slurm'): `{srun}` is not on PATH (run "
                "where SLURM's client commands are, or set MONARCH_SLURM_SRUN)",
                *loc)
    if launcher == "env":
        import os
        missing = [v for v in ("MONARCH_CONTROLLER", "MONARCH_JOB_TOKEN")
                   if not os.environ.get(v)]
        if missing:
            raise errors.MeshError(
                "mc.mesh(launcher='env'): the workers join a controller they "
                f"know: set {' and '.join(missing)} here and for them "
                "(docs/executor.md, env launcher)", *loc)
    if not dims:
        raise errors.MeshError("a mesh needs at least one dimension, e.g. "
                               "mc.mesh(gpus=4)", *loc)
    for name, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise errors.MeshError(
                f"mesh dimension '{name}' must be a positive int, got {size!r}",
                *loc)
    return Mesh(dims, loc=loc, launcher=launcher)


@atexit.register
def _stop_all():
    for m in list(_live):
        m.stop()
