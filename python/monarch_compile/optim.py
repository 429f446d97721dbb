"""Optimizers with the numerics of `torch.optim`: SGD (momentum, dampening,
nesterov, weight decay) and AdamW (decoupled weight decay, bias
correction), plus gradient clipping by global norm.

Two forms:

- **Stateful, in actors.** Built in `__init__` over parameters declared with
  `mc.param`; the optimizer's state (moments, step count) is actor state on
  the ranks, split like each parameter:

      class LM(mc.Actor):
          def __init__(self, params):
              self.p = [mc.param(a) for a in params]
              self.opt = mc.optim.AdamW(self.p, lr=1e-3)

          @mc.endpoint
          def step(self, x, t, lr):
              loss, g = mc.value_and_grad(loss_fn)(self.p, x, t)
              self.opt.step([mc.all_reduce(gi, "gpus", "avg") for gi in g],
                            lr=lr)        # lr: a runtime np.float32
              return loss

- **Functional, in `@mc.compile` code** that passes parameters in and out:
  `state = mc.optim.adamw_init(params)` (numpy, outside), then inside
  `params, state = mc.optim.adamw_update(params, grads, state, lr=...)`.

A learning rate may be a Python number or a traced scalar (an `np.float32`
argument), so a schedule does not retrace.

**ZeRO-1** (`shard_state="gpus"`): the optimizer keeps each replicated
parameter's moments, and a master copy of the parameter, split by rows over
that mesh dimension (state per rank divided by its size), and `step(grads,
reduce="gpus")` takes this rank's gradients: it reduce_scatters them
(averaged), updates its rows and all_gathers the new parameters. Parameters
already split, 0-d, or whose rows do not divide keep whole state (an
all_reduce). `state_dict()` gathers the moments (torch's layout, whole);
`load_state_dict` takes this rank's rows.
"""
import numpy as np

from . import _pytree, errors
from ._actors import Param, param
from ._location import user_loc
from ._ops import all_gather, all_reduce, reduce_scatter, where
from ._tensor import Tensor, active_trace, binary, cast, reduce, unary

__all__ = ["SGD", "AdamW", "sgd_init", "sgd_update", "adamw_init",
           "adamw_update", "clip_grad_norm"]


def _step_factor(t, beta, loc):
    """1 - beta ** t for a 0-d step count `t` (a tensor)."""
    return binary("sub", 1.0, unary("exp", binary("mul", t, float(np.log(beta)),
                                                  loc), loc), loc)


def _adamw(p, g, m, v, t, lr, betas, eps, weight_decay, loc):
    """One AdamW update (torch.optim.AdamW): (p, m, v) after step `t`."""
    b1, b2 = betas
    if weight_decay:
        decay = 1.0 - lr * weight_decay if not isinstance(lr, Tensor) else \
            binary("sub", 1.0, binary("mul", lr, weight_decay, loc), loc)
        p = binary("mul", p, decay, loc)
    m = binary("add", binary("mul", m, b1, loc), binary("mul", g, 1 - b1, loc),
               loc)
    v = binary("add", binary("mul", v, b2, loc),
               binary("mul", binary("mul", g, g, loc), 1 - b2, loc), loc)
    c1 = _step_factor(t, b1, loc)
    c2 = unary("sqrt", _step_factor(t, b2, loc), loc)
    denom = binary("add", binary("div", unary("sqrt", v, loc), c2, loc), eps,
                   loc)
    step = binary("div", lr, c1, loc)
    p = binary("sub", p, binary("mul", step, binary("div", m, denom, loc),
                                loc), loc)
    return p, m, v


def _sgd(p, g, buf, t, lr, momentum, dampening, nesterov, weight_decay, loc):
    """One SGD update (torch.optim.SGD): (p, buf) after step `t`."""
    d = binary("add", g, binary("mul", p, weight_decay, loc), loc) \
        if weight_decay else g
    if momentum:
        later = binary("add", binary("mul", buf, momentum, loc),
                       binary("mul", d, 1 - dampening, loc), loc)
        # torch starts the buffer at the first gradient (no dampening).
        buf = where(binary("sub", t, 1.0, loc) == 0, d, later)
        d = binary("add", d, binary("mul", buf, momentum, loc), loc) \
            if nesterov else buf
    p = binary("sub", p, binary("mul", d, lr, loc), loc)
    return p, buf


def _check_lr(lr, loc):
    if isinstance(lr, Tensor):
        if lr.shape != () or lr.dtype not in ("float32", "float16",
                                              "bfloat16"):
            raise errors.TraceError(
                f"the learning rate must be a float scalar, got a {lr.dtype} "
                f"of shape {lr.shape}", *loc)
        return lr
    if not isinstance(lr, (int, float, np.floating, np.integer)) or lr < 0:
        raise errors.TraceError(f"invalid learning rate {lr!r}", *loc)
    return float(lr)


def _leaves(tree, what, loc):
    try:
        return _pytree.flatten(tree, (Tensor, np.ndarray, np.generic))
    except _pytree.NotATree as e:
        raise errors.TraceError(f"{what}: unsupported structure ({e})",
                                *loc) from None


class _Optimizer:
    """The state and update shared by SGD and AdamW in actors."""

    slots = ()

    def __init__(self, params, shard_state=None, **hyper):
        self._loc = user_loc()
        if shard_state is not None and not isinstance(shard_state, str):
            raise errors.TraceError(
                f"{type(self).__name__}: shard_state names one mesh dimension "
                f"(e.g. 'gpus'), got {shard_state!r}", *self._loc)
        self.shard_state = shard_state
        # ZeRO-1 (shard_state): per parameter, this rank's rows of the
        # parameter in float32 (the master copy the update reads), or None
        # where the state stays whole; decided in _mc_bind (the mesh).
        self.master = {}
        try:
            leaves, self._treedef = _pytree.flatten(params, Param)
        except _pytree.NotATree:
            raise errors.TraceError(
                f"{type(self).__name__} takes the actor's parameters: "
                "mc.param values (self.p = [mc.param(a) ...]; then pass "
                "self.p)", *self._loc) from None
        if not leaves:
            raise errors.TraceError(f"{type(self).__name__}: no parameters",
                                    *self._loc)
        self.params = leaves
        self.hyper = hyper
        self.state = {}
        for slot in self.slots:
            self.state[slot] = [_zeros_like(p) for p in leaves]
        self.state["step"] = [param(np.zeros((), np.float32))]
        self.actor = None

    def _mc_bind(self, actor, name):
        for p in self.params:
            if p.owner is not actor:
                raise errors.TraceError(
                    f"{type(self).__name__}: its parameters must be state of "
                    "this actor, declared before it (self.p = [mc.param(a) "
                    "...] first)", *self._loc)
        if self.shard_state is not None:
            dims = actor._mc_mesh.dims
            d = self.shard_state
            if d not in dims:
                raise errors.MeshError(
                    f"{type(self).__name__}: shard_state={d!r}, but the "
                    f"actor's mesh has dimensions {', '.join(dims)}",
                    *self._loc)
            for i, p in enumerate(self.params):
                # Replicated parameters whose rows divide over the dimension:
                # their moments (and a master copy) keep this rank's rows.
                if (p.split or not p.shape or p.shape[0] % dims[d] or
                        dims[d] == 1):
                    continue
                for slot in self.slots:
                    self.state[slot][i] = param(np.zeros_like(p.value),
                                                **{d: 0})
                self.master[i] = param(np.array(p.value, copy=True), **{d: 0})
        for slot, ps in self.state.items():
            for i, p in enumerate(ps):
                actor._mc_register(f"{name}_{slot}_{i}", p)
        for i, p in self.master.items():
            actor._mc_register(f"{name}_master_{i}", p)
        self.actor = actor

    def step(self, grads, lr=None, reduce=None):
        """Updates the parameters (and the optimizer's state) from `grads`
        (the structure of the parameters); in an endpoint of the actor.

        `reduce` (mesh dimensions): `grads` are this rank's gradients, to
        be averaged over those dimensions first (data parallelism), with an
        all_reduce; with `shard_state`, a reduce_scatter instead, then each
        rank updates its rows and the parameters are all_gathered (ZeRO-1).
        """
        loc = user_loc()
        get = self._bound_state(loc, "step")
        leaves, _ = _leaves(grads, f"{type(self).__name__}.step", loc)
        if len(leaves) != len(self.params):
            raise errors.ShapeError(
                f"{type(self).__name__}.step: {len(leaves)} gradients for "
                f"{len(self.params)} parameters", *loc)
        hyper = dict(self.hyper)
        hyper["lr"] = _check_lr(hyper["lr"] if lr is None else lr, loc)
        reduce = None if reduce is None else _dims_list(reduce)
        if self.master and (reduce is None or self.shard_state not in reduce):
            raise errors.TraceError(
                f"{type(self).__name__}.step: with shard_state="
                f"{self.shard_state!r} the optimizer averages the gradients "
                "itself (a reduce_scatter): pass this rank's gradients and "
                f"reduce={self.shard_state!r}", *loc)
        t = binary("add", get(self.state["step"][0].state), 1.0, loc)
        get(self.state["step"][0].state, t)
        for i, (p, g) in enumerate(zip(self.params, leaves)):
            current = get(p.state)
            _same_shape(g, current, f"{type(self).__name__}.step: a gradient",
                        "a parameter", loc)
            slots = [get(self.state[s][i].state) for s in self.slots]
            if i in self.master:
                d = self.shard_state
                others = [x for x in reduce if x != d]
                if others:
                    g = all_reduce(g, others, "avg")
                g = reduce_scatter(g, d, 0, "avg")
                new = self._update(get(self.master[i].state), g, slots, t,
                                   hyper, loc)
                get(self.master[i].state, new[0])
                get(p.state, all_gather(new[0], d, 0))
            else:
                if reduce:
                    g = all_reduce(g, reduce, "avg")
                new = self._update(current, g, slots, t, hyper, loc)
                get(p.state, new[0])
            for s, value in zip(self.slots, new[1:]):
                get(self.state[s][i].state, value)


    def state_dict(self):
        """The optimizer's state in `torch.optim`'s layout, in an endpoint
        of the actor: `{"state": {i: {"step": t, <slot>: value, ...}},
        "param_groups": [{<hyperparameters>, "params": [0, 1, ...]}]}`, one
        entry per parameter in the order given to the optimizer (AdamW's
        slots are `exp_avg` and `exp_avg_sq`, SGD's `momentum_buffer`;
        `step` is the 0-d count of steps taken, shared by the parameters).
        Return it from the endpoint (the tensors come back as arrays, the
        hyperparameters as Python values) or pass it to `load_state_dict`."""
        loc = user_loc()
        get = self._bound_state(loc, "state_dict")
        step = get(self.state["step"][0].state)
        state = {}
        for i in range(len(self.params)):
            entry = {"step": step}
            for slot in self.slots:
                value = get(self.state[slot][i].state)
                if i in self.master:  # ZeRO-1: the whole moments
                    value = all_gather(value, self.shard_state, 0)
                entry[slot] = value
            state[i] = entry
        group = {k: (list(v) if isinstance(v, tuple) else v)
                 for k, v in self.hyper.items()}
        group["params"] = list(range(len(self.params)))
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict):
        """Restores the state `state_dict` gives (`state_dict()`'s layout,
        e.g. passed to an endpoint of the actor from a saved checkpoint):
        the step count and every parameter's slots. The hyperparameters are
        fixed when the optimizer is created: those of `param_groups` must
        be equal to them (create the optimizer with the loaded values)."""
        loc = user_loc()
        get = self._bound_state(loc, "load_state_dict")
        what = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict) or "state" not in state_dict:
            raise errors.TraceError(
                f"{what}: expected a dict with 'state' (and 'param_groups'), "
                f"as state_dict() returns; got {type(state_dict).__name__}",
                *loc)
        for group in state_dict.get("param_groups", []):
            for k, v in group.items():
                if k == "params" or k not in self.hyper:
                    continue
                mine = self.hyper[k]
                theirs = tuple(v) if isinstance(v, (list, tuple)) else v
                if isinstance(theirs, Tensor) or (
                        isinstance(theirs, tuple) and
                        any(isinstance(x, Tensor) for x in theirs)):
                    raise errors.TraceError(
                        f"{what}: hyperparameter {k!r} is a traced value; "
                        "pass param_groups as Python numbers", *loc)
                if theirs != mine:
                    raise errors.TraceError(
                        f"{what}: hyperparameter {k!r} is {v!r} in the state "
                        f"dict and {mine!r} in this optimizer; they are fixed "
                        "when it is created: create it with the loaded "
                        "values", *loc)
        state = state_dict["state"]
        n = len(self.params)
        if not isinstance(state, dict) or sorted(state) != list(range(n)):
            raise errors.TraceError(
                f"{what}: 'state' must have an entry for each of the "
                f"{n} parameters, keyed 0..{n - 1}; got keys "
                f"{sorted(state) if isinstance(state, dict) else state!r}",
                *loc)
        for i in range(n):
            entry = state[i]
            for slot in ("step",) + tuple(self.slots):
                value = entry.get(slot) if isinstance(entry, dict) else None
                if not isinstance(value, Tensor):
                    raise errors.TraceError(
                        f"{what}: state[{i}][{slot!r}] is missing or not a "
                        "tensor", *loc)
                if slot == "step" and i > 0:
                    continue  # one count for every parameter: entry 0's
                target = (self.state["step"][0] if slot == "step"
                          else self.state[slot][i])
                if slot != "step" and i in self.master:
                    # ZeRO-1: this rank's rows of the whole moments (a max
                    # of equal values is exact).
                    value = reduce_scatter(value, self.shard_state, 0, "max")
                # This rank's view of the state (a shard where it is split).
                current = get(target.state)
                _same_shape(value, current, f"{what}: state[{i}][{slot!r}]",
                            "the optimizer's state here", loc)
                if value.dtype != current.dtype:
                    value = cast(value, current.dtype, loc)
                get(target.state, value)
        for i, master in self.master.items():
            # The master rows follow the parameters as they are now.
            get(master.state, reduce_scatter(get(self.params[i].state),
                                             self.shard_state, 0, "max"))

    def _bound_state(self, loc, what):
        """The actor's state accessor, in one of its endpoints."""
        active_trace(loc, f"{type(self).__name__}.{what}")
        if self.actor is None:
            raise errors.TraceError(
                f"{type(self).__name__} must be an attribute of the actor "
                "(self.opt = ...) to hold its state on the ranks", *loc)
        return self.actor._mc_state


def _same_shape(value, like, what, whose, loc):
    """Refuses `value` (`what`) unless it has the shape of `like`."""
    if tuple(value.shape) != tuple(like.shape):
        raise errors.ShapeError(
            f"{what} of shape {tuple(value.shape)} for {whose} of shape "
            f"{tuple(like.shape)}", *loc)


def _dims_list(dims):
    return [dims] if isinstance(dims, str) else list(dims)


def _zeros_like(p):
    """Optimizer state for parameter `p`: zeros, split as `p` is."""
    z = param(np.zeros_like(p.value))
    z.split = dict(p.split)
    return z


class AdamW(_Optimizer):
    """`torch.optim.AdamW` (decoupled weight decay, bias correction)."""

    slots = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.01, shard_state=None):
        super().__init__(params, shard_state, lr=lr, betas=tuple(betas),
                         eps=eps, weight_decay=weight_decay)

    def _update(self, p, g, slots, t, h, loc):
        return _adamw(p, g, slots[0], slots[1], t, h["lr"], h["betas"],
                      h["eps"], h["weight_decay"], loc)


class SGD(_Optimizer):
    """`torch.optim.SGD` (momentum, dampening, nesterov, weight decay)."""

    slots = ("momentum_buffer",)

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0,
                 nesterov=False, weight_decay=0.0, shard_state=None):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise errors.TraceError(
                "nesterov momentum requires a momentum and zero dampening",
                *user_loc())
        super().__init__(params, shard_state, lr=lr, momentum=momentum,
                         dampening=dampening, nesterov=nesterov,
                         weight_decay=weight_decay)

    def _update(self, p, g, slots, t, h, loc):
        return _sgd(p, g, slots[0], t, h["lr"], h["momentum"], h["dampening"],
                    h["nesterov"], h["weight_decay"], loc)


# ---------------------------------------------------------------------------
# Functional forms
# ---------------------------------------------------------------------------


def _zeros_like_tree(params):
    leaves, treedef = _pytree.flatten(params, (np.ndarray, np.generic))
    return _pytree.unflatten(treedef, [np.zeros_like(np.asarray(a))
                                       for a in leaves])


def adamw_init(params):
    """The initial AdamW state of `params` (numpy arrays, a pytree):
    `{"step": 0-d float32, "exp_avg": zeros, "exp_avg_sq": zeros}`."""
    return {"step": np.zeros((), np.float32),
            "exp_avg": _zeros_like_tree(params),
            "exp_avg_sq": _zeros_like_tree(params)}


def sgd_init(params):
    """The initial SGD state: `{"step": 0-d, "momentum_buffer": zeros}`."""
    return {"step": np.zeros((), np.float32),
            "momentum_buffer": _zeros_like_tree(params)}


def _functional(what, params, grads, state, slots, update, loc):
    active_trace(loc, what)
    p_leaves, treedef = _leaves(params, what, loc)
    g_leaves, _ = _leaves(grads, what, loc)
    if len(g_leaves) != len(p_leaves):
        raise errors.ShapeError(
            f"{what}: {len(g_leaves)} gradients for {len(p_leaves)} "
            "parameters", *loc)
    if not isinstance(state, dict) or "step" not in state or \
            any(s not in state for s in slots):
        raise errors.TraceError(
            f"{what}: the state must be what {what.split('_')[0]}_init "
            "returned", *loc)
    slot_leaves = [_leaves(state[s], what, loc)[0] for s in slots]
    t = binary("add", state["step"], 1.0, loc)
    new_p, new_slots = [], [[] for _ in slots]
    for i, (p, g) in enumerate(zip(p_leaves, g_leaves)):
        out = update(p, g, [s[i] for s in slot_leaves], t)
        new_p.append(out[0])
        for j, value in enumerate(out[1:]):
            new_slots[j].append(value)
    new_state = {"step": t}
    for s, values in zip(slots, new_slots):
        new_state[s] = _pytree.unflatten(treedef, values)
    return _pytree.unflatten(treedef, new_p), new_state


def adamw_update(params, grads, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.01):
    """`(params, state)` after one AdamW step (in traced code)."""
    loc = user_loc()
    lr = _check_lr(lr, loc)
    return _functional(
        "adamw_update", params, grads, state, ("exp_avg", "exp_avg_sq"),
        lambda p, g, s, t: _adamw(p, g, s[0], s[1], t, lr, tuple(betas), eps,
                                  weight_decay, loc), loc)


def sgd_update(params, grads, state, lr=1e-3, momentum=0.0, dampening=0.0,
               nesterov=False, weight_decay=0.0):
    """`(params, state)` after one SGD step (in traced code)."""
    loc = user_loc()
    lr = _check_lr(lr, loc)
    return _functional(
        "sgd_update", params, grads, state, ("momentum_buffer",),
        lambda p, g, s, t: _sgd(p, g, s[0], t, lr, momentum, dampening,
                                nesterov, weight_decay, loc), loc)


def clip_grad_norm(grads, max_norm):
    """`(grads scaled to a global L2 norm of at most max_norm, the norm
    before clipping)`, as `torch.nn.utils.clip_grad_norm_` (scale
    `min(1, max_norm / (norm + 1e-6))`). The norm is over the gradients
    given: in per-rank code with split gradients, combine the ranks' sums
    of squares yourself."""
    loc = user_loc()
    active_trace(loc, "mc.optim.clip_grad_norm")
    leaves, treedef = _leaves(grads, "clip_grad_norm", loc)
    total = None
    for g in leaves:
        sq = reduce("sum", binary("mul", g, g, loc), None, False, loc)
        if sq.dtype != "float32":
            sq = cast(sq, "float32", loc)
        total = sq if total is None else binary("add", total, sq, loc)
    norm = unary("sqrt", total, loc)
    scale = binary("min", binary("div", float(max_norm),
                                 binary("add", norm, 1e-6, loc), loc), 1.0,
                   loc)
    clipped = [binary("mul", g, scale if g.dtype == "float32" else
                      cast(scale, g.dtype, loc), loc) for g in leaves]
    return _pytree.unflatten(treedef, clipped), norm
