# RUN: env MONARCH_BUILD_DIR=%monarch_obj_root %python %s | FileCheck %s
#
# The two-stage actor pipeline of the Python API's tour traced from Python:
# one actor class with its state and per-rank endpoints, two actor meshes on
# the halves of the mesh, and a controller function that feeds stage 0,
# transfers its activation to stage 1's slice and fetches the result. The
# endpoint body is located at the method's lines; the update endpoint has
# the explicit all_reduce and the state update.
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(hosts=1, gpus=4)
# CHECK-LABEL: module
# CHECK: monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid loc("{{.*}}pipeline.py":[[@LINE-2]]:8)
# CHECK: monarch.mesh_slice @[[S0:.*]] of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @{{.*}} loc("{{.*}}pipeline.py":[[@LINE+25]]:6)


class Stage(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)
        # CHECK: monarch.actor_class @Stage {
        # CHECK-NEXT: monarch.state @w : tensor<4x4xf32> loc("{{.*}}pipeline.py":[[@LINE-2]]:18)

    @mc.endpoint
    def forward(self, x):
        return mc.relu(x @ self.w)
        # CHECK: monarch.endpoint @forward(%[[X:.*]]: tensor<8x4xf32> {{.*}}) -> tensor<8x4xf32> {
        # CHECK-NEXT: %[[W:.*]] = state_get @w : tensor<4x4xf32> loc("{{.*}}pipeline.py":[[@LINE-2]]:28)
        # CHECK: linalg.matmul ins(%[[X]], %[[W]] : tensor<8x4xf32>, tensor<4x4xf32>) {{.*}} loc("{{.*}}pipeline.py":[[@LINE-3]]:24)
        # CHECK: return %{{.*}} : tensor<8x4xf32> loc("{{.*}}pipeline.py":[[@LINE-4]]:9)

    @mc.endpoint
    def update(self, g, lr):
        g = mc.all_reduce(g, "gpus", "avg")
        self.w = self.w - lr * g


w0 = np.ones((4, 4), np.float32)
w1 = np.ones((4, 4), np.float32)
s0 = mesh.slice(gpus=slice(0, 2)).spawn("s0", Stage, w0)
s1 = mesh.slice(gpus=slice(2, 4)).spawn("s1", Stage, w1)
# CHECK: monarch.actor_mesh @s0 = @Stage on @[[S0]]
# CHECK: monarch.mesh_slice @[[S1:.*]] of @mesh(hosts = 0 to 1, gpus = 2 to 4)
# CHECK: monarch.actor_mesh @s1 = @Stage on @[[S1]]


@mc.compile
def pipeline(x):
    return s1.forward.call(s0.forward.call(x))
    # CHECK: func.func @pipeline(%[[A:.*]]: tensor<8x4xf32> {{.*}}) -> tensor<8x4xf32> {
    # CHECK-NEXT: %[[XF:.*]] = monarch.feed %[[A]] to @[[S0]] : tensor<8x4xf32> loc("{{.*}}pipeline.py":[[@LINE-2]]:28)
    # CHECK-NEXT: %[[H:.*]] = monarch.call @s0::@forward(%[[XF]]) : (tensor<8x4xf32>) -> tensor<8x4xf32> loc("{{.*}}pipeline.py":[[@LINE-3]]:28)
    # CHECK-NEXT: %[[T:.*]] = monarch.transfer %[[H]] from @[[S0]] to @[[S1]] : tensor<8x4xf32> -> tensor<8x4xf32> loc("{{.*}}pipeline.py":[[@LINE-4]]:12)
    # CHECK-NEXT: %[[Y:.*]] = monarch.call @s1::@forward(%[[T]]) : (tensor<8x4xf32>) -> tensor<8x4xf32> loc("{{.*}}pipeline.py":[[@LINE-5]]:12)
    # CHECK-NEXT: %[[R:.*]] = monarch.fetch %[[Y]] from @[[S1]] : tensor<8x4xf32> loc("{{.*}}pipeline.py":[[@LINE-6]]:5)
    # CHECK-NEXT: return %[[R]]


print(pipeline.ir("traced", np.ones((8, 4), np.float32)))  # with locations: the default


@mc.compile
def apply_update(g0, g1):
    s0.update.broadcast(g0, 0.5)
    s1.update.broadcast(g1, 0.5)


# CHECK-LABEL: monarch.endpoint @update(%{{.*}}: tensor<4x4xf32>, %{{.*}}: f32) {
# CHECK-NEXT: all_reduce %arg0 over ["gpus"] avg : tensor<4x4xf32>
# CHECK-NEXT: state_get @w
# CHECK: arith.mulf %arg1, %{{.*}} : f32
# CHECK: arith.subf
# CHECK: state_set @w = %{{.*}} : tensor<4x4xf32>
# CHECK-LABEL: func.func @apply_update
# CHECK: %[[LR:.*]] = arith.constant 5.000000e-01 : f32
# CHECK: monarch.broadcast @s0::@update(%{{.*}}, %[[LR]]) : tensor<4x4xf32>, f32
# CHECK: monarch.broadcast @s1::@update(%{{.*}}, %{{.*}}) : tensor<4x4xf32>, f32
print(apply_update.ir("traced", w0, w1, debug_info=False))

# The s0 -> s1 edge is planned as sends from stage 0's ranks to stage 1's.
# CHECK-LABEL: monarch.plan @pipeline.worker.mesh on @mesh
# CHECK: monarch.send
# CHECK: monarch.recv
print(pipeline.ir("planned"))
