// Kernels that take their integers, end to end: each of 4 ranks takes its
// two elements of x (a slice at 2 * rank: the rank folds into its kernel
// as a static offset), adds 1, and the pieces are gathered (x + 1). The
// four rank kernels compile to one symbol taking the offset as a parameter
// (docs/kernels.md); with MONARCH_KERNEL_PARAMS=off each is its own. Both
// plans run on 4 local workers and give numpy's numbers.

// RUN: rm -rf %t && mkdir -p %t
// RUN: env MONARCH_DISABLE_CACHE=1 monarch-compile %s -o %t/on.mcplan
// RUN: monarch-compile --print-plan %t/on.mcplan | FileCheck %s --check-prefix=ON
// ON: cpu: {{[0-9]+}} bytes, 4 of 4 kernels compiled, 4 taking parameters
// RUN: env MONARCH_DISABLE_CACHE=1 MONARCH_KERNEL_PARAMS=off monarch-compile %s -o %t/off.mcplan
// RUN: monarch-compile --print-plan %t/off.mcplan | FileCheck %s --check-prefix=OFF
// OFF: cpu: {{[0-9]+}} bytes, 4 of 4 kernels compiled{{$}}
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.arange(8, dtype=np.float32) / 4)"
// RUN: monarch-run %t/on.mcplan --inputs %t/x.npy --outputs %t/on
// RUN: monarch-run %t/off.mcplan --inputs %t/x.npy --outputs %t/off
// RUN: %python -c "import numpy as np; x = np.load('%t/x.npy'); [np.testing.assert_array_equal(np.load('%t/' + d + '/output0.npy'), x + 1) for d in ('on', 'off')]"

#map = affine_map<(d0) -> (d0)>

shard.grid @grid(shape = 4)
monarch.proc_mesh @mesh(gpus = 4) grid @grid

monarch.actor_class @Ranks {
  monarch.endpoint @plus_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2 : index
    %i = monarch.process_index over ["gpus"] : index
    %off = arith.muli %i, %two : index
    %mine = tensor.extract_slice %x[%off] [2] [1] : tensor<8xf32> to tensor<2xf32>
    %e = tensor.empty() : tensor<2xf32>
    %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
        ins(%mine : tensor<2xf32>) outs(%e : tensor<2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.addf %in, %one : f32
      linalg.yield %s : f32
    } -> tensor<2xf32>
    %all = monarch.all_gather %y over ["gpus"] axis 0 : tensor<2xf32> -> tensor<8xf32>
    monarch.return %all : tensor<8xf32>
  }
}

monarch.actor_mesh @ranks = @Ranks on @mesh

func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %x0 = monarch.feed %x to @mesh : tensor<8xf32>
  %y = monarch.call @ranks::@plus_rank(%x0) : (tensor<8xf32>) -> tensor<8xf32>
  %out = monarch.fetch %y from @mesh : tensor<8xf32>
  return %out : tensor<8xf32>
}
