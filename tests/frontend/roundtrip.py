# RUN: env MONARCH_BUILD_DIR=%monarch_obj_root %python %s > %t.mlir
# RUN: monarch-opt %t.mlir --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=TRACED
# RUN: monarch-opt %t.mlir --monarch-compile-to-planned --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=PLANNED
#
# What ir() prints by default (with locations) is ordinary MLIR: monarch-opt
# parses it, and the user's locations survive the whole pipeline (the
# planned kernels still point at the Python lines that computed them).
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(gpus=2)


@mc.compile(mesh=mesh)
def step(x, w):
    x = mc.shard(x, gpus=0)
    h = mc.tanh(x @ w)
    return mc.replicate(h.sum(axis=0))


print(step.ir("traced", np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)))

# TRACED: shard.shard {{.*}} loc("{{.*}}roundtrip.py":17:9)
# TRACED: linalg.matmul {{.*}} loc("{{.*}}roundtrip.py":18:17)
# TRACED: math.tanh {{.*}} loc("{{.*}}roundtrip.py":18:9)
# TRACED: monarch.fetch {{.*}} loc("{{.*}}roundtrip.py":19:5)

# PLANNED: func.func private @step.worker.mesh.r0.k0
# PLANNED: linalg.matmul {{.*}} loc("{{.*}}roundtrip.py":18:17)
# PLANNED: math.tanh {{.*}} loc("{{.*}}roundtrip.py":18:9)
# PLANNED: monarch.plan @step.worker.mesh
