// RUN: monarch-opt %s | FileCheck %s
// RUN: monarch-opt %s --mlir-print-op-generic | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --verify-roundtrip
//
// monarch.topology and the `link` labels of planned transfers.

// CHECK: monarch.topology for @mesh hosts ["hosts"] intra nvlink(4.500000e+02 GBps, 2.000000e+00 us) inter network(2.500000e+01 GBps, 1.000000e+01 us)
// CHECK: monarch.send #monarch.buf<0, tensor<4xf32>> to 2 on @world stream 1 link network
// CHECK: monarch.recv #monarch.buf<0, tensor<4xf32>> from 1 on @world stream 1 group 0 link nvlink
// CHECK: monarch.collective all_reduce sum #monarch.buf<0, tensor<4xf32>> -> #monarch.buf<16, tensor<4xf32>> on @world stream 2 link network
shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
monarch.topology for @mesh hosts ["hosts"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)
monarch.communicator @world on @mesh ranks [0, 1, 2, 3] backend nccl
monarch.plan @step on @mesh {
  monarch.rank_program rank 0 arena 64 {
    %s = monarch.send #monarch.buf<0, tensor<4xf32>> to 2 on @world stream 1 link network : !monarch.event
    %r = monarch.recv #monarch.buf<0, tensor<4xf32>> from 1 on @world stream 1 group 0 link nvlink : !monarch.event
    %c = monarch.collective all_reduce sum #monarch.buf<0, tensor<4xf32>> -> #monarch.buf<16, tensor<4xf32>> on @world stream 2 link network : !monarch.event
    monarch.wait %s, %r, %c : !monarch.event, !monarch.event, !monarch.event
  }
}
