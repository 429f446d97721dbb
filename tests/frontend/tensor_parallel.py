# RUN: env MONARCH_BUILD_DIR=%monarch_obj_root %python %s | FileCheck %s
#
# A tensor-parallel (Megatron) MLP traced from Python: w1 split by columns
# (split_axes [[], [0]] on the 1-D grid), w2 by rows, x replicated. The
# traced IR keeps global shapes; partitioning gives each rank its 16 hidden
# units and sums the partial products with one all_reduce.
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(gpus=4)


@mc.compile(mesh=mesh)
def mlp(x, w1, w2):
    # CHECK-LABEL: func.func @mlp
    w1 = mc.shard(w1, gpus=1)
    # CHECK: %[[W1F:.*]] = monarch.feed %arg1 to @mesh : tensor<16x64xf32> loc("{{.*}}tensor_parallel.py":[[@LINE-1]]:10)
    # CHECK-NEXT: %[[C:.*]] = shard.sharding @mesh_grid split_axes = {{\[\[}}], [0]] : !shard.sharding loc("{{.*}}tensor_parallel.py":[[@LINE-2]]:10)
    # CHECK-NEXT: %[[W1:.*]] = shard.shard %[[W1F]] to %[[C]] : tensor<16x64xf32>
    w2 = mc.shard(w2, gpus=0)
    # CHECK-NEXT: %[[W2F:.*]] = monarch.feed %arg2 to @mesh : tensor<64x8xf32> loc("{{.*}}tensor_parallel.py":[[@LINE-1]]:10)
    # CHECK-NEXT: %[[R:.*]] = shard.sharding @mesh_grid split_axes = {{\[\[}}0]] : !shard.sharding
    # CHECK-NEXT: %[[W2:.*]] = shard.shard %[[W2F]] to %[[R]] : tensor<64x8xf32>
    h = mc.gelu(x @ w1)
    # CHECK-NEXT: %[[XF:.*]] = monarch.feed %arg0 to @mesh : tensor<8x16xf32> loc("{{.*}}tensor_parallel.py":[[@LINE-1]]:17)
    # CHECK: linalg.matmul ins(%{{.*}}, %[[W1]] : tensor<8x16xf32>, tensor<16x64xf32>) {{.*}} -> tensor<8x64xf32> loc("{{.*}}tensor_parallel.py":[[@LINE-2]]:17)
    # CHECK: math.tanh
    # CHECK: } -> tensor<8x64xf32> loc("{{.*}}tensor_parallel.py":[[@LINE-4]]:9)
    y = h @ w2
    # CHECK: linalg.matmul ins(%{{.*}}, %[[W2]] : tensor<8x64xf32>, tensor<64x8xf32>) {{.*}} -> tensor<8x8xf32> loc("{{.*}}tensor_parallel.py":[[@LINE-1]]:9)
    return mc.replicate(y)
    # CHECK: shard.sharding @mesh_grid split_axes = {{\[\[}}]]
    # CHECK: monarch.fetch %{{.*}} from @mesh : tensor<8x8xf32> loc("{{.*}}tensor_parallel.py":[[@LINE-2]]:5)


x = np.zeros((8, 16), np.float32)
w1 = np.zeros((16, 64), np.float32)
w2 = np.zeros((64, 8), np.float32)
print(mlp.ir("traced", x, w1, w2))  # with locations: the default

# CHECK-LABEL: monarch.endpoint @run
# CHECK-SAME: tensor<16x16xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\]\]}}>}
# CHECK-SAME: tensor<16x8xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}
# CHECK-SAME: tensor<8x16xf32>
# CHECK-SAME: -> tensor<8x8xf32>
# CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x16xf32>)
# CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>)
# CHECK-NEXT: all_reduce %{{.*}} over ["gpus"] sum : tensor<8x8xf32>
# CHECK-NOT: all_reduce
# CHECK-LABEL: func.func @mlp
print(mlp.ir("partitioned"))
