"""Running fuzz programs end to end and checking the contract.

`run_program(program, workdir)` writes the program's source to a file,
executes it from there (so tracing errors point into that file), runs it on
the mesh's workers and checks every result against the numpy reference. The
contract (docs/frontend.md): a program computes what numpy computes, within
dtype tolerance, or raises an `mc.TraceError` whose `.file`/`.line` point into
the program's own file. Everything else is a failure, in one of the classes
of `CLASSES`.

Meshes are expensive to start, so each process keeps one mesh per shape
(`mesh_for`) and reuses it across programs; a mesh is replaced after a job
failure (the executor makes it unusable) and every `RECYCLE` programs. `Pool`
runs programs in child processes with a per-program timeout: a hang or a
crash kills the child (its workers die with it) and a fresh one takes over.
"""

import dataclasses
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import time
import traceback

import numpy as np

import reference as R
from program import render

CLASSES = ("wrong-number", "internal-error", "unlocated-refusal", "crash/hang", "other")

# Messages of errors that are the compiler's fault, not a refusal.
INTERNAL = re.compile(
    r"internal error|does not verify|cannot parse|failed to verify|verif(y|ication) "
    r"fail|pass failed|failed to legalize|LLVM ERROR|Assertion|not implemented|"
    r"segmentation|unreachable",
    re.I,
)
JOB_FAILURE = re.compile(
    r"^rank \d+ |\bdied\b|\bhung\b|heartbeat|timed out|killed|lost", re.I
)
RECYCLE = 60


@dataclasses.dataclass
class Outcome:
    """What running one program gave: `status` is "pass", "refused" or
    "fail"; `cls` the failure class; `reason` a refusal's normalized
    message; `message` the details."""

    status: str
    cls: str = None
    reason: str = None
    message: str = ""
    seconds: float = 0.0

    @property
    def signature(self):
        """What the shrinker keeps: the class, and for errors their message."""
        if self.status != "fail":
            return (self.status,)
        if self.cls == "wrong-number":
            return (self.cls,)
        if self.cls == "crash/hang":
            for kind in ("died", "timed out"):
                if kind in self.message:
                    return (self.cls, kind)
        return (self.cls, normalize(self.message)[:60])


def normalize(message):
    """A message with its numbers, names and locations replaced."""
    lines = [line.strip() for line in message.strip().splitlines()]
    text = " | ".join(
        line for line in lines[:3] if line and not line.startswith("(program file")
    )
    text = re.sub(r"cannot compile \w+\(\) to a plan: ", "", text)
    text = re.sub(r"compiling to '\w+' failed: \|? ?", "", text)
    text = re.sub(r'loc\("[^"]*":\d+:\d+\): ', "", text)
    text = re.sub(r"\S+\.py:\d+(:\d+)?:? ?", "", text)
    text = re.sub(r"@[\w.]+", "@X", text)
    text = re.sub(r"'[^']*'", "'X'", text)
    text = re.sub(r"\b(v|x|t|a|p)\d+\b", "X", text)
    text = re.sub(r"\d+", "N", text)
    return text[:100]


# ---------------------------------------------------------------------------
# In the executing process
# ---------------------------------------------------------------------------

_meshes = {}  # dims tuple -> [mesh, programs run]
_runs = [0]


def mesh_for(dims):
    """The process's mesh of shape `dims`, created once (and replaced after
    failures and every RECYCLE programs)."""
    import monarch_compile as mc

    entry = _meshes.get(dims)
    if entry is not None and entry[1] >= RECYCLE:
        drop_mesh(dims)
        entry = None
    if entry is None:
        entry = [mc.mesh(**dict(dims)), 0]  # MESH_LINE
        _meshes[dims] = entry
    entry[1] += 1
    return entry[0]


def drop_mesh(dims):
    entry = _meshes.pop(dims, None)
    if entry is not None:
        try:
            entry[0].stop()
        except Exception:  # noqa: BLE001 - a broken mesh may not stop cleanly
            pass


def _mesh_location():
    with open(__file__) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith("# MESH_LINE"):
                return (os.path.abspath(__file__), n)
    return (None, None)


MESH_LOCATION = _mesh_location()


def for_execution(program, run):
    """The program with actor and class names unique to this run: state is
    initialized once per actor name on a mesh that outlives the program."""
    p = program.copy()
    for a in p.actors:
        a.spawn_name = f"{a.spawn_name}_r{run}"
        a.cls = f"{a.cls}_r{run}"
    return p


def run_program(program, workdir):
    """Runs `program` in this process; its Outcome."""
    import monarch_compile as mc

    _runs[0] += 1
    run = _runs[0]
    start = time.monotonic()
    try:
        expected = R.evaluate(program)
    except R.RefError as err:
        expected = err
    exe = for_execution(program, run)
    src = render(exe)
    path = os.path.abspath(
        os.path.join(workdir, f"{program.tag}_{os.getpid()}_{run}.py")
    )
    with open(path, "w") as f:
        f.write(src)
    outcome = None
    try:
        ns = {"__name__": "fuzz_program", "__file__": path}
        exec(compile(src, path, "exec"), ns)
        mesh = mesh_for(program.mesh)
        fn = ns["program"](mesh)
        got = []
        for _ in range(program.calls):
            got.append(fn(*ns["inputs"]()))
    except Exception as err:  # noqa: BLE001 - every exception is classified
        outcome = classify_exception(err, path, mc)
        if isinstance(err, mc.ExecutionError):
            drop_mesh(program.mesh)
    if outcome is None:
        if isinstance(expected, R.RefError):
            outcome = Outcome(
                "fail", "other", message=f"accepted a program numpy rejects: {expected}"
            )
        else:
            outcome = check_results(program, got, expected)
    if outcome.status == "pass" and os.environ.get("MONARCH_FUZZ_KERNEL_CHECK"):
        outcome = check_kernels(fn, ns["inputs"](), path) or outcome
    outcome.seconds = time.monotonic() - start
    if outcome.status != "fail":
        os.unlink(path)
    else:
        outcome.message += f"\n(program file: {path})"
    return outcome


def monarch_kernels():
    """The monarch-kernels tool of the build tree."""
    build = os.environ.get("MONARCH_BUILD_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
    return os.path.join(build, "bin", "monarch-kernels")


def check_kernels(fn, inputs, path):
    """Below the runtime: every kernel of the program's plan, optimized,
    against the reference lowering on random inputs through the kernel ABI
    (`monarch-kernels --emit=check`). None when they agree."""
    planned = path[:-3] + ".planned.mlir"
    with open(planned, "w") as f:
        f.write(fn.ir("planned", *inputs))
    try:
        out = subprocess.run([monarch_kernels(), "--emit=check", planned],
                             capture_output=True, text=True, timeout=300)
    finally:
        os.unlink(planned)
    if out.returncode == 0 or "no kernels to compile" in out.stderr:
        return None
    return Outcome("fail", "kernel-mismatch",
                   message=(out.stdout + out.stderr).strip()[-2000:])


def classify_exception(err, path, mc):
    text = f"{type(err).__name__}: {err}"
    if isinstance(err, mc.TraceError):
        if INTERNAL.search(str(err.message)):
            return Outcome("fail", "internal-error", message=text)
        here = err.file and os.path.abspath(err.file) == path and (err.line or 0) >= 1
        at_mesh = err.file and (os.path.abspath(err.file), err.line) == MESH_LOCATION
        if here or at_mesh:
            return Outcome(
                "refused", reason=f"{type(err).__name__}: {normalize(err.message)}"
            )
        where = f"{err.file}:{err.line}" if err.file else "no location"
        return Outcome("fail", "unlocated-refusal", message=f"{text} (at {where})")
    if isinstance(err, mc.ExecutionError):
        # A job that failed while running (a rank raised, crashed or hung);
        # any other ExecutionError is a plan the compiler should not have made.
        if JOB_FAILURE.search(str(err)) and not INTERNAL.search(str(err)):
            return Outcome("fail", "crash/hang", message=text)
        return Outcome("fail", "internal-error", message=text)
    if isinstance(err, mc.MonarchError):
        return Outcome("fail", "unlocated-refusal", message=text)
    tb = traceback.format_exception(type(err), err, err.__traceback__)
    return Outcome("fail", "other", message=text + "\n" + "".join(tb[-3:]))


def check_results(program, got, expected):
    n = len(program.results)
    for call, (out, want) in enumerate(zip(got, expected)):
        if n == 1:
            out = (out,)
        if not isinstance(out, tuple) or len(out) != n:
            return Outcome(
                "fail",
                "wrong-number",
                message=f"call {call}: got {type(out).__name__} for {n} results",
            )
        for i, (g, w) in enumerate(zip(out, want)):
            problem = compare(g, w)
            if problem:
                name = program.results[i]
                where = f"call {call}, " if program.calls > 1 else ""
                return Outcome(
                    "fail",
                    "wrong-number",
                    message=f"{where}result {i} ({name}): {problem}",
                )
    return Outcome("pass")


def compare(g, w):
    """What is wrong with result `g` against reference value `w`, or None."""
    if not isinstance(g, np.ndarray):
        return f"a {type(g).__name__}, not a numpy array"
    if tuple(g.shape) != w.shape:
        return f"shape {tuple(g.shape)}, numpy {w.shape}"
    if g.dtype.name != w.dtype:
        return f"dtype {g.dtype.name}, numpy {w.dtype}"
    bad = R.mismatches(g, w)
    if not bad.any():
        return None
    tol = R.tolerance(w)
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    gv = g[idx] if g.ndim else g[()]
    return (
        f"{int(bad.sum())} of {bad.size} elements differ; first at {idx}: "
        f"got {gv!r}, numpy {w.ref[idx]!r} (tolerance {tol[idx]:.3g})"
    )


# ---------------------------------------------------------------------------
# Child processes
# ---------------------------------------------------------------------------


def _send(f, obj):
    data = pickle.dumps(obj)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _recv(f):
    head = f.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


def serve(workdir):
    """A child process's loop: programs in on stdin, Outcomes (as dicts) out
    on the original stdout; the programs' own output goes to stderr."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    while True:
        try:
            program = _recv(requests)
        except EOFError:
            break
        if program is None:
            break
        try:
            outcome = run_program(program, workdir)
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            outcome = Outcome("fail", "other", message=f"fuzz runner: {err!r}")
        _send(replies, dataclasses.asdict(outcome))
    for dims in list(_meshes):
        drop_mesh(dims)


class _Child:
    """A process running `serve`; its stderr goes to `log`."""

    def __init__(self, workdir, log):
        here = os.path.dirname(os.path.abspath(__file__))
        code = f"import sys; sys.path.insert(0, {here!r}); import runner; runner.serve({workdir!r})"
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        self.program = None
        self.started = None

    def send(self, program):
        self.program = program
        self.started = time.monotonic()
        _send(self.proc.stdin, program)

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def close(self):
        try:
            _send(self.proc.stdin, None)
            self.proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            self.kill()
        self.log.close()


class Pool:
    """`jobs` child processes running programs, each within `timeout`
    seconds; a child that crashes or hangs is replaced. Use as a context
    manager."""

    def __init__(self, workdir, jobs=1, timeout=90):
        self.workdir = workdir
        self.jobs = jobs
        self.timeout = timeout
        self.log = os.path.join(workdir, "programs.log")
        self.children = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        for c in self.children:
            c.close()
        self.children = []

    def run(self, program):
        """Runs one program; its Outcome."""
        return next(iter(self.map([program])))[1]

    def map(self, programs):
        """Yields (program, Outcome) as programs finish (in any order)."""
        pending = list(programs)[::-1]
        while len(self.children) < min(self.jobs, max(len(pending), 1)):
            self.children.append(_Child(self.workdir, self.log))
        busy = {}  # stdout fd -> child
        while pending or busy:
            for c in self.children:
                if c not in busy.values() and pending:
                    c.send(pending.pop())
                    busy[c.proc.stdout.fileno()] = c
            ready, _, _ = select.select(list(busy), [], [], 1.0)
            now = time.monotonic()
            for fd in list(busy):
                c = busy[fd]
                outcome, replace = None, False
                if fd in ready:
                    try:
                        outcome = Outcome(**_recv(c.proc.stdout))
                    except (EOFError, OSError):
                        code = c.proc.wait()
                        outcome = Outcome(
                            "fail",
                            "crash/hang",
                            message=f"the fuzz process died (exit code {code})",
                        )
                        replace = True
                elif now - c.started > self.timeout:
                    outcome = Outcome(
                        "fail",
                        "crash/hang",
                        message=f"timed out after {self.timeout:g} s",
                    )
                    replace = True
                if outcome is None:
                    continue
                del busy[fd]
                if replace:
                    outcome.seconds = now - c.started
                    c.kill()
                    self.children[self.children.index(c)] = _Child(
                        self.workdir, self.log
                    )
                yield c.program, outcome
