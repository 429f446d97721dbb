"""Shrinking a failing fuzz program to a small reproducer.

`shrink(program, run, signature)` tries smaller variants of the program and
keeps the first that still fails with the same signature (`Outcome.signature`:
the failure class, and for errors their normalized message), until no
variant does or the budget is spent. Variants: drop a result, call once
instead of twice, replace an op's result by one of its operands of the same
shape and dtype (this drops shardings and casts) or by a fresh input (this
cuts away everything upstream), the same inside endpoint bodies (where a
fresh value becomes a new replicated endpoint argument), drop unused endpoint
arguments, results and state, shrink a size everywhere it occurs, use a
smaller mesh or the whole mesh instead of a slice, make inputs float32. Dead
ops and unused inputs are removed after every step. Every variant must have
a valid numpy reference before it is run.
"""

import time

import reference as R
from program import Input

INPUT_DTYPES = ("float32", "float16", "int32")


def _uses(ops, results):
    used = set(results)
    for op in ops:
        used.update(op.names())
    return used


def clean(p):
    """Removes dead ops, unused inputs, uncalled endpoints and unused actors
    (in place); returns `p`."""
    changed = True
    while changed:
        changed = False
        used = set(p.results)
        keep = []
        for op in reversed(p.ops):
            if op.kind == "call" or any(o in used for o in op.out):
                keep.append(op)
                used.update(op.names())
            else:
                changed = True
        p.ops = keep[::-1]
        for actor in p.actors:
            called = {
                op.attrs["endpoint"]
                for op in p.ops
                if op.kind == "call" and op.attrs["actor"] == actor.var
            }
            actor.endpoints = [e for e in actor.endpoints if e.name in called]
            for e in actor.endpoints:
                _clean_body(e)
            read = {
                op.attrs["name"]
                for e in actor.endpoints
                for op in e.ops
                if op.kind in ("state_get", "state_set")
            }
            actor.params = [q for q in actor.params if q.name in read]
        p.actors = [a for a in p.actors if a.endpoints]
        live = {a.var for a in p.actors}
        p.ops = [op for op in p.ops if op.kind != "call" or op.attrs["actor"] in live]
    used = _uses(p.ops, p.results)
    p.inputs = [i for i in p.inputs if i.name in used]
    return p


def _clean_body(e):
    used = set(e.results)
    keep = []
    for op in reversed(e.ops):
        if op.kind == "state_set" or any(o in used for o in op.out):
            keep.append(op)
            used.update(op.names())
    e.ops = keep[::-1]


def _rename(ops, results, old, new):
    """Replaces uses of value `old` by `new` in ops and results."""
    for op in ops:
        op.args = tuple(new if a == old else a for a in op.args)
    return [new if r == old else r for r in results]


def controller_env(p):
    """Every value of the compiled function's first call (name -> Value)."""
    ev = R.Evaluation(p)
    env, dist = ev.new_env()
    for op in p.ops:
        ev.step(op, env, dist)
    return env


def _new_input_name(p):
    names = {i.name for i in p.inputs}
    n = 0
    while f"x{n}" in names:
        n += 1
    return f"x{n}"


def _seed(p, k):
    return (hash((p.tag, k, len(p.inputs))) & 0x3FFFFFFF) or 1


def variants(p):
    """Smaller variants of `p` (generated lazily, roughly biggest first)."""
    for i in range(len(p.results)):
        if len(p.results) > 1:
            q = p.copy()
            del q.results[i]
            yield q
    if p.calls > 1:
        q = p.copy()
        q.calls = 1
        yield q
    used = _uses(p.ops, p.results)
    for idx in reversed(range(len(p.ops))):
        op = p.ops[idx]
        if op.out and not any(o in used for o in op.out):
            q = p.copy()
            del q.ops[idx]
            yield q
    try:
        env = controller_env(p)
    except (R.RefError, KeyError):
        env = {}
    # Cut an op: its results become fresh inputs (latest ops first).
    for idx in reversed(range(len(p.ops))):
        op = p.ops[idx]
        if not op.out or not all(
            n in env and env[n].dtype in INPUT_DTYPES for n in op.out
        ):
            continue
        q = p.copy()
        del q.ops[idx]
        for k, name in enumerate(op.out):
            v = env[name]
            new = _new_input_name(q)
            q.inputs.append(Input(new, v.shape, v.dtype, _seed(p, (idx, k))))
            q.results = _rename(q.ops, q.results, name, new)
        yield q
    # Bypass an op: use one of its operands of the same shape and dtype.
    for idx in reversed(range(len(p.ops))):
        op = p.ops[idx]
        if len(op.out) != 1 or op.out[0] not in env:
            continue
        out = env[op.out[0]]
        for a in op.names():
            if a in env and env[a].shape == out.shape and env[a].dtype == out.dtype:
                q = p.copy()
                del q.ops[idx]
                q.results = _rename(q.ops, q.results, op.out[0], a)
                yield q
                break
    yield from _dead_variants(p)
    yield from _call_variants(p)
    yield from _body_variants(p)
    yield from _size_variants(p)
    yield from _mesh_variants(p)
    for k, i in enumerate(p.inputs):
        if i.dtype != "float32" and i.dtype != "int32":
            q = p.copy()
            q.inputs[k].dtype = "float32"
            yield q
    for a, actor in enumerate(p.actors):
        for k, prm in enumerate(actor.params):
            if prm.split:
                q = p.copy()
                q.actors[a].params[k].split = {}
                yield q
            if prm.dtype != "float32":
                q = p.copy()
                q.actors[a].params[k].dtype = "float32"
                yield q
    if not p.compile_mesh:
        q = p.copy()
        q.compile_mesh = True
        yield q


def _dead_variants(p):
    """Drop one unused input, uncalled endpoint, unused state or dead body op
    (one at a time: `clean` drops them all, which may lose the failure)."""
    used = _uses(p.ops, p.results)
    for k, i in enumerate(p.inputs):
        if i.name not in used:
            q = p.copy()
            del q.inputs[k]
            yield q
    called = {
        (op.attrs["actor"], op.attrs["endpoint"]) for op in p.ops if op.kind == "call"
    }
    for a, actor in enumerate(p.actors):
        for e, ep in enumerate(actor.endpoints):
            if (actor.var, ep.name) not in called:
                q = p.copy()
                del q.actors[a].endpoints[e]
                yield q
                continue
            body_used = _uses(ep.ops, ep.results)
            for idx in reversed(range(len(ep.ops))):
                op = ep.ops[idx]
                if op.out and not any(o in body_used for o in op.out):
                    q = p.copy()
                    del q.actors[a].endpoints[e].ops[idx]
                    yield q
        read = {
            op.attrs["name"]
            for ep in actor.endpoints
            for op in ep.ops
            if "name" in op.attrs
        }
        for k, prm in enumerate(actor.params):
            if prm.name not in read:
                q = p.copy()
                del q.actors[a].params[k]
                yield q


def _call_variants(p):
    """Drop endpoint results nobody uses, unused endpoint arguments, calls."""
    used = _uses(p.ops, p.results)
    for idx, op in enumerate(p.ops):
        if op.kind != "call":
            continue
        actor = p.actor(op.attrs["actor"])
        ep = actor.endpoint(op.attrs["endpoint"])
        a = p.actors.index(actor)
        e = actor.endpoints.index(ep)
        if not any(o in used for o in op.out):
            q = p.copy()
            del q.ops[idx]
            yield q
        for k, name in enumerate(op.out):
            if name not in used:
                q = p.copy()
                qop, qep = q.ops[idx], q.actors[a].endpoints[e]
                qop.out = tuple(n for j, n in enumerate(qop.out) if j != k)
                del qep.results[k]
                if isinstance(qep.out, tuple):
                    qep.out = tuple(s for j, s in enumerate(qep.out) if j != k)
                    if len(qep.out) == 1:
                        qep.out = qep.out[0]
                if not qep.results:
                    qop.attrs["method"] = "broadcast"
                yield q
        body_used = _uses(ep.ops, ep.results)
        for k, name in enumerate(ep.args):
            if name not in body_used:
                q = p.copy()
                qop, qep = q.ops[idx], q.actors[a].endpoints[e]
                qop.args = tuple(x for j, x in enumerate(qop.args) if j != k)
                del qep.args[k]
                yield q
        if ep.out is not None:
            q = p.copy()
            q.actors[a].endpoints[e].out = None
            yield q


def _body_variants(p):
    for a, actor in enumerate(p.actors):
        for e, ep in enumerate(actor.endpoints):
            calls = [
                i
                for i, op in enumerate(p.ops)
                if op.kind == "call"
                and op.attrs["actor"] == actor.var
                and op.attrs["endpoint"] == ep.name
            ]
            if not calls:
                continue
            call = calls[0]
            envs = _body_env(p, call)
            for idx in reversed(range(len(ep.ops))):
                op = ep.ops[idx]
                if len(op.out) != 1 or envs is None or op.out[0] not in envs[0]:
                    continue
                out = envs[0][op.out[0]]
                # Bypass.
                for x in op.names():
                    v = envs[0].get(x)
                    if v is not None and v.shape == out.shape and v.dtype == out.dtype:
                        q = p.copy()
                        qep = q.actors[a].endpoints[e]
                        del qep.ops[idx]
                        qep.results = _rename(qep.ops, qep.results, op.out[0], x)
                        yield q
                        break
                # Cut: a new replicated argument.
                if out.dtype in INPUT_DTYPES:
                    q = p.copy()
                    qep = q.actors[a].endpoints[e]
                    del qep.ops[idx]
                    arg = f"a{len(qep.args)}"
                    while arg in qep.args:
                        arg += "_"
                    qep.args.append(arg)
                    qep.results = _rename(qep.ops, qep.results, op.out[0], arg)
                    new = _new_input_name(q)
                    q.inputs.append(
                        Input(new, out.shape, out.dtype, _seed(p, ("body", e, idx)))
                    )
                    q.ops[call].args = q.ops[call].args + (new,)
                    yield q


def _body_env(p, call):
    """Rank 0's values of the body of the endpoint called by op `call`."""
    try:
        ev = R.Evaluation(p)
        env, dist = ev.new_env()
        for op in p.ops[:call]:
            ev.step(op, env, dist)
        op = p.ops[call]
        actor = p.actor(op.attrs["actor"])
        envs = ev.endpoint_args(op, env, dist, actor)
        state = [dict(s) for s in ev.state(actor)]
        dims = actor.mesh_dims(ev.mesh)
        for body_op in actor.endpoint(op.attrs["endpoint"]).ops:
            R.endpoint_op(body_op, envs, state, dims)
        return envs
    except (R.RefError, KeyError, StopIteration):
        return None


def _sizes(p):
    sizes = set()
    for i in p.inputs + [q for a in p.actors for q in a.params]:
        sizes.update(i.shape)
    return sorted((s for s in sizes if s > 1), reverse=True)


def _resize(shape, old, new):
    return tuple(new if d == old else d for d in shape)


def _size_variants(p):
    for s in _sizes(p):
        for new in sorted({1, 2, s // 2, 3, 4} - {s}):
            if new >= s or new < 1:
                continue
            q = p.copy()
            for i in q.inputs + [x for a in q.actors for x in a.params]:
                i.shape = _resize(i.shape, s, new)

            def fix(ops):
                for op in ops:
                    if op.kind == "reshape":
                        op.attrs["shape"] = _resize(op.attrs["shape"], s, new)

            fix(q.ops)
            for a in q.actors:
                for e in a.endpoints:
                    fix(e.ops)
            yield q


def _mesh_variants(p):
    dims = dict(p.mesh)
    smaller = []
    if dims.get("hosts", 1) > 1:
        smaller.append({**dims, "hosts": 1})
    if dims.get("gpus", 1) > 1:
        smaller.append({**dims, "gpus": dims["gpus"] // 2})
        smaller.append({**dims, "gpus": 1})
    for m in smaller:
        q = p.copy()
        q.mesh = tuple(m.items())
        for a in q.actors:
            if a.slice and any(b > m[d] for d, (_, b) in a.slice.items()):
                a.slice = None
        yield q
    for a, actor in enumerate(p.actors):
        if actor.slice:
            q = p.copy()
            q.actors[a].slice = None
            yield q


def valid(p):
    if not p.results:
        return False
    try:
        R.evaluate(p)
    except R.RefError:
        return False
    return True


def shrink(program, run, signature, budget=250, seconds=600, log=None):
    """The smallest variant of `program` found whose `run(program).signature`
    is `signature`; also the number of runs spent."""
    best = program
    runs = 0
    deadline = time.monotonic() + seconds
    progress = True
    while progress and runs < budget and time.monotonic() < deadline:
        progress = False
        for raw in variants(best):
            # Dead code can matter (a dead shard still shapes the partition):
            # a variant without it is tried first, then the variant as is.
            for q in (clean(raw.copy()), raw):
                if q.size() >= best.size() or not valid(q):
                    continue
                runs += 1
                if run(q).signature == signature:
                    best = q
                    progress = True
                    if log:
                        log(f"  shrunk to size {best.size()} ({runs} runs)")
                    break
                if runs >= budget or time.monotonic() >= deadline:
                    break
            if progress or runs >= budget or time.monotonic() >= deadline:
                break
    return best, runs
