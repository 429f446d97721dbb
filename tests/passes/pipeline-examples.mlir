// The registered stage pipelines take every example program from traced to
// a verified, scheduled plan, and each stage's output re-parses.

// RUN: monarch-opt %examples/ir/pipeline.mlir --monarch-compile-to-planned | FileCheck %s --check-prefix=PP
// RUN: monarch-opt %examples/ir/pipeline.mlir --monarch-to-partitioned | monarch-opt --monarch-to-split | monarch-opt --monarch-to-planned | FileCheck %s --check-prefix=PP
// RUN: monarch-opt %examples/ir/data_parallel.mlir --monarch-compile-to-planned | FileCheck %s --check-prefix=DP
// RUN: monarch-opt %examples/ir/tensor_parallel.mlir --monarch-compile-to-planned | FileCheck %s --check-prefix=TP

// PP-LABEL: monarch.plan @pipeline.worker.mesh on @mesh signature (tensor<8x4xf32>) -> tensor<8x4xf32>
// PP:         monarch.rank_program rank 0 arena {{[0-9]+}} attributes {monarch.critical_path_us = {{.*}}, monarch.peak_bytes = {{[0-9]+}} : i64}
// PP:           monarch.send {{.*}} to 2 on @pipeline.worker.mesh.comm0 stream 1
// PP:         monarch.rank_program rank 2
// PP:           monarch.recv {{.*}} from 0 on @pipeline.worker.mesh.comm0 stream 1
// PP:           monarch.fetch_buffer 0
// PP-LABEL: func.func @pipeline(
// PP-NEXT:    %[[T:.*]] = monarch.control_msg to @mesh invoke [@pipeline.worker.mesh] : !monarch.token
// PP-NEXT:    monarch.feed_input %arg0 to @pipeline.worker.mesh input 0
// PP-NEXT:    monarch.fetch_output @pipeline.worker.mesh output 0
// PP-NEXT:    monarch.await %[[T]]

// DP-LABEL: monarch.plan @train_step.worker.mesh on @mesh
// Two classes of data-parallel ranks: rank 0, which returns the result, and
// ranks 1 to 3, rank 1's program and the others as its members with their
// own communicators and offsets.
// DP:         monarch.rank_program rank 0
// DP:         monarch.rank_program rank 1
// DP-COUNT-2: monarch.rank_member rank {{[23]}} of 1
// DP:       func.func @train_step(
// DP:         monarch.control_msg to @mesh invoke [@train_step.worker.mesh] args(

// TP:       monarch.collective all_gather
// TP:       monarch.collective all_reduce
