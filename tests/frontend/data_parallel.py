# RUN: env MONARCH_BUILD_DIR=%monarch_obj_root %python %s | FileCheck %s
#
# The data-parallel step of the Python API's tour traced from Python: the batch
# is fed to the mesh and split over "gpus" (split_axes [[1]]: axis 1 of the
# 1x4 grid), the weight is fed replicated, matmul/relu/sum are linalg ops
# with global shapes, and the result is annotated replicated and fetched.
# Every op carries the line and column of the Python expression it came
# from (ir() prints locations by default). The partitioned stage, printed
# with debug_info=False, shows the all_reduce the compiler inserted.
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(hosts=1, gpus=4)
# CHECK-LABEL: module
# CHECK: shard.grid @mesh_grid(shape = 1x4) loc("{{.*}}data_parallel.py":[[@LINE-2]]:8)
# CHECK-NEXT: monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid loc("{{.*}}data_parallel.py":[[@LINE-3]]:8)


@mc.compile(mesh=mesh)
def step(x, w):
    # CHECK: func.func @step(%[[X:.*]]: tensor<8x4xf32> {{.*}}, %[[W:.*]]: tensor<4x4xf32> {{.*}}) -> tensor<4xf32> {
    x = mc.shard(x, gpus=0)
    # CHECK-NEXT: %[[XF:.*]] = monarch.feed %[[X]] to @mesh : tensor<8x4xf32> loc("{{.*}}data_parallel.py":[[@LINE-1]]:9)
    # CHECK-NEXT: %[[S:.*]] = shard.sharding @mesh_grid split_axes = {{\[\[}}1]] : !shard.sharding loc("{{.*}}data_parallel.py":[[@LINE-2]]:9)
    # CHECK-NEXT: %[[XS:.*]] = shard.shard %[[XF]] to %[[S]] : tensor<8x4xf32> loc("{{.*}}data_parallel.py":[[@LINE-3]]:9)
    y = mc.relu(x @ w)
    # CHECK-NEXT: %[[WF:.*]] = monarch.feed %[[W]] to @mesh : tensor<4x4xf32> loc("{{.*}}data_parallel.py":[[@LINE-1]]:17)
    # CHECK: %[[MM:.*]] = linalg.matmul ins(%[[XS]], %{{.*}} : tensor<8x4xf32>, tensor<4x4xf32>) {{.*}} loc("{{.*}}data_parallel.py":[[@LINE-2]]:17)
    # CHECK: linalg.generic {{.*}} ins(%[[MM]] : tensor<8x4xf32>)
    # CHECK: arith.maximumf
    # CHECK: } -> tensor<8x4xf32> loc("{{.*}}data_parallel.py":[[@LINE-5]]:9)
    return mc.replicate(y.sum(axis=0))
    # CHECK: %[[SUM:.*]] = linalg.reduce ins(%{{.*}} : tensor<8x4xf32>) {{.*}} dimensions = [0]
    # CHECK: arith.addf
    # CHECK: } loc("{{.*}}data_parallel.py":[[@LINE-3]]:25)
    # CHECK: %[[R:.*]] = shard.sharding @mesh_grid split_axes = {{\[\[}}]] : !shard.sharding loc("{{.*}}data_parallel.py":[[@LINE-4]]:12)
    # CHECK-NEXT: %[[RS:.*]] = shard.shard %[[SUM]] to %[[R]] annotate_for_users : tensor<4xf32>
    # CHECK-NEXT: %[[OUT:.*]] = monarch.fetch %[[RS]] from @mesh : tensor<4xf32> loc("{{.*}}data_parallel.py":[[@LINE-6]]:5)
    # CHECK-NEXT: return %[[OUT]] : tensor<4xf32>


x = np.zeros((8, 4), np.float32)
w = np.zeros((4, 4), np.float32)
print(step.ir("traced", x, w))

# CHECK-LABEL: monarch.actor_class @step.mesh.0.class
# CHECK: monarch.endpoint @run(%{{.*}}: tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %{{.*}}: tensor<4x4xf32>) -> tensor<4xf32>
# CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<4x4xf32>)
# CHECK: all_reduce %{{.*}} over ["gpus"] sum : tensor<4xf32>
# CHECK-LABEL: func.func @step
# CHECK: monarch.call @step.mesh.0::@run
print(step.ir("partitioned", debug_info=False))

# CHECK-LABEL: monarch.plan @step.worker.mesh on @mesh
# CHECK: monarch.rank_program rank 0
# CHECK: monarch.rank_program rank 1
# CHECK-COUNT-2: monarch.rank_member rank {{[23]}} of 1 peers [] comms [@step.worker.mesh.comm0] offsets
print(step.ir("planned"))
