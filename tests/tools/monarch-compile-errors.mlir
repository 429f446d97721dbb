// Bad flags, unreadable files, modules that fail verification and programs a
// pass rejects: clear errors, a non-zero exit, never a crash.

// RUN: not monarch-compile %s --compile-to=bogus 2>&1 | FileCheck %s --check-prefix=STAGE
// STAGE: --compile-to: bogus not in {traced,partitioned,split,planned,plan}

// RUN: not monarch-compile %s --no-such-flag 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: The following argument was not expected: --no-such-flag

// RUN: not monarch-compile %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: monarch-compile: error: cannot open input file '{{.*}}does-not-exist.mlir'

// RUN: not monarch-compile %S/Inputs/unverified.mlir 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: unverified.mlir:3:1: error: 'monarch.proc_mesh' op @nogrid does not name a shard.grid

// RUN: not monarch-compile %s 2>&1 | FileCheck %s --check-prefix=PASS
// PASS: monarch-compile-errors.mlir:[[@LINE+19]]:8: error: 'linalg.add' op uses values on meshes @a and @b; move one with monarch.transfer first
// PASS: monarch-compile: compiling to 'planned' failed; reproduce with:
// The reproducer runs the stages up to the one that failed.
// PASS-NEXT: monarch-opt {{.*}}monarch-compile-errors.mlir --pass-pipeline='builtin.module(monarch-partition{engine=own lift-constants=true remarks=false})'

// RUN: monarch-compile --help | FileCheck %s --check-prefix=HELP
// HELP: --compile-to
// HELP: --compile-from
// HELP: --dump-dir
// HELP: --backend
// HELP: --verify-each

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.proc_mesh @b(gpus = 2) grid @g
func.func @mixed(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %yb = monarch.feed %y to @b : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add ins(%xa, %yb : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %s from @a : tensor<4xf32>
  return %r : tensor<4xf32>
}
