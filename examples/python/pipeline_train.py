"""Pipeline-parallel training: two stages on two slices of a mesh,
micro-batches, gradients flowing back across the stage boundary, weights
updated on their ranks, every step against numpy.

Stage 0 (`tanh(x @ w0)`) and stage 1 (`h @ w1`, mean squared error) are
actors on the halves of a 1x2 mesh. Per micro-batch, the compiled step runs
stage 0 forward, sends the activation to stage 1, which differentiates its
loss (`mc.value_and_grad` with respect to its weight and to the activation)
and sends the activation's gradient back; stage 0 recomputes its forward
and pulls the gradient through it (`mc.vjp`). Both stages accumulate
weight gradients over the micro-batches in actor state and apply SGD at the
end of the step.

    python examples/python/pipeline_train.py [steps]
"""
import sys

import numpy as np

import monarch_compile as mc

MICRO, ROWS, DIN, DHID, DOUT = 4, 4, 8, 16, 4
LR = np.float32(0.1)


class First(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)
        self.g = mc.param(np.zeros_like(w))

    @mc.endpoint
    def forward(self, x):
        return mc.tanh(x @ self.w)

    @mc.endpoint
    def backward(self, x, dh):
        _, pullback = mc.vjp(lambda w: mc.tanh(x @ w), self.w)
        (gw,) = pullback(dh)
        self.g = self.g + gw

    @mc.endpoint
    def apply(self, lr):
        self.w = self.w - lr * self.g
        self.g = self.g * 0.0


class Last(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)
        self.g = mc.param(np.zeros_like(w))

    @mc.endpoint(out=(None, None))
    def step(self, h, t):
        def loss(w, h):
            # Each micro-batch's share of the batch's mean squared error.
            return ((h @ w - t) ** 2).mean() * (1.0 / MICRO)

        value, (gw, gh) = mc.value_and_grad(loss, argnums=(0, 1))(self.w, h)
        self.g = self.g + gw
        return value, gh

    @mc.endpoint
    def apply(self, lr):
        self.w = self.w - lr * self.g
        self.g = self.g * 0.0


def numpy_step(w0, w1, xs, ts, lr):
    loss, g0, g1 = 0.0, np.zeros_like(w0), np.zeros_like(w1)
    for x, t in zip(xs, ts):
        h = np.tanh(x @ w0)
        d = (h @ w1 - t) * (2.0 / t.size / MICRO)
        loss += ((h @ w1 - t) ** 2).mean() / MICRO
        g1 += h.T @ d
        g0 += x.T @ ((d @ w1.T) * (1 - h * h))
    return loss, w0 - lr * g0, w1 - lr * g1


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rng = np.random.default_rng(0)
    w0 = (rng.standard_normal((DIN, DHID)) * 0.4).astype(np.float32)
    w1 = (rng.standard_normal((DHID, DOUT)) * 0.4).astype(np.float32)
    xs = tuple(rng.standard_normal((ROWS, DIN)).astype(np.float32)
               for _ in range(MICRO))
    ts = tuple(np.sin(x[:, :DOUT]) for x in xs)
    with mc.mesh(hosts=1, gpus=2) as mesh:
        first = mesh.slice(gpus=0).spawn("first", First, w0)
        last = mesh.slice(gpus=1).spawn("last", Last, w1)

        @mc.compile
        def train(xs, ts, lr):
            losses = []
            for x, t in zip(xs, ts):
                h = first.forward.call(x)
                value, dh = last.step.call(h, t)  # dh crosses back
                first.backward.broadcast(x, dh)
                losses.append(value)
            first.apply.broadcast(lr)
            last.apply.broadcast(lr)
            return losses

        print(train.plan_summary(xs, ts, LR))
        r0, r1 = w0.astype(np.float64), w1.astype(np.float64)
        losses = []
        for step in range(steps):
            loss = float(sum(np.asarray(v) for v in train(xs, ts, LR)))
            want, r0, r1 = numpy_step(r0, r1, xs, ts, float(LR))
            losses.append(loss)
            print(f"step {step:2d}  loss {loss:.6f}  numpy {want:.6f}")
            if not np.isclose(loss, want, rtol=1e-4, atol=1e-6):
                sys.exit(f"step {step}: loss {loss} differs from numpy {want}")
    if not losses[-1] < losses[0]:
        sys.exit("the loss did not fall")
    print(f"loss fell from {losses[0]:.6f} to {losses[-1]:.6f} over {MICRO} "
          "micro-batches a step; every step matched numpy")


if __name__ == "__main__":
    main()
