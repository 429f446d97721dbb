"""Gradients by float64 central differences, the reference every gradient
test compares `mc.grad`/`mc.value_and_grad` with."""
import numpy as np


def finite_differences(f, args, eps=1e-6):
    """d sum(f(*args)) / d args[i] for every argument, in float64."""
    args = [np.asarray(a, np.float64) for a in args]
    grads = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in args]
            minus = [x.copy() for x in args]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (np.sum(f(*plus)) - np.sum(f(*minus))) / (2 * eps)
        grads.append(g)
    return grads
