//===- OpsKernelTest.cpp - Reductions, softmax, dtypes -------- -*- C++ -*-===//
//
// One kernel per op family the planned kernels contain (linalg reductions,
// softmax, math functions, transposes, tensor reshapes/concat/slices, i32,
// f16 and bf16), each compiled twice, with the optimized CPU pipeline and
// with the reference lowering (scalar loops), and both compared with numpy.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

using namespace monarch::test;

namespace {

struct Case {
  const char *numpyCase;
  std::string source;
  std::vector<HostBuffer> inputs;
  std::vector<HostBuffer> outputs; // shapes and dtypes of the results
  double rtol = 1e-5, atol = 1e-6;
};

class OpsKernelTest : public KernelTest {
protected:
  /// Compiles `c.source` (one kernel, @k) in both modes and checks both
  /// against numpy.
  void check(Case c) {
    std::vector<HostBuffer> expected =
        numpyReference(c.numpyCase, c.inputs, c.outputs);
    ASSERT_EQ(expected.size(), c.outputs.size());
    for (bool reference : {false, true}) {
      SCOPED_TRACE(reference ? "reference lowering" : "optimized pipeline");
      monarch::codegen::KernelCompileOptions options;
      options.referenceLowering = reference;
      ASSERT_TRUE(compile(c.source, {"k"}, options));
      std::vector<HostBuffer> inputs = c.inputs, outputs = c.outputs;
      ASSERT_TRUE(run("k", inputs, outputs));
      for (size_t i = 0; i < outputs.size(); ++i)
        EXPECT_TRUE(allClose(outputs[i], expected[i], c.rtol, c.atol))
            << "output " << i;
    }
  }
  std::mt19937 rng{42};
};

TEST_F(OpsKernelTest, RowSum) {
  check({"row_sum",
         R"mlir(
func.func private @k(%a: tensor<37x50xf32>, %out: memref<37xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %r = linalg.reduce ins(%a : tensor<37x50xf32>) outs(%z : tensor<37xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<37xf32>, memref<37xf32>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {37, 50}, rng)},
         {HostBuffer("f32", {37})}});
}

TEST_F(OpsKernelTest, ColumnMax) {
  check({"col_max",
         R"mlir(
func.func private @k(%a: tensor<40x24xf32>, %out: memref<24xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<24xf32>
  %z = linalg.fill ins(%ninf : f32) outs(%e : tensor<24xf32>) -> tensor<24xf32>
  %r = linalg.reduce ins(%a : tensor<40x24xf32>) outs(%z : tensor<24xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<24xf32>, memref<24xf32>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {40, 24}, rng)},
         {HostBuffer("f32", {24})}});
}

TEST_F(OpsKernelTest, FullReductionToScalar) {
  check({"full_sum_scaled",
         R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<() -> ()>
func.func private @k(%a: tensor<16x64xf32>, %out: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 9.765625e-04 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %sq = linalg.mul ins(%a, %a : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<16x64xf32>) outs(%z : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %mean = linalg.generic {indexing_maps = [#s, #s], iterator_types = []}
      ins(%sum : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %inv : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  bufferization.materialize_in_destination %mean in restrict writable %out : (tensor<f32>, memref<f32>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {16, 64}, rng)},
         {HostBuffer("f32", {})}});
}

TEST_F(OpsKernelTest, Softmax) {
  check({"softmax",
         R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @k(%a: tensor<32x100xf32>, %out: memref<32x100xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<32xf32>
  %e = tensor.empty() : tensor<32x100xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<32xf32>) -> tensor<32xf32>
  %max = linalg.reduce ins(%a : tensor<32x100xf32>) outs(%m0 : tensor<32xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %max : tensor<32x100xf32>, tensor<32xf32>) outs(%e : tensor<32x100xf32>) {
  ^bb0(%x: f32, %mx: f32, %o: f32):
    %d = arith.subf %x, %mx : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<32x100xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%er : tensor<32xf32>) -> tensor<32xf32>
  %sum = linalg.reduce ins(%ex : tensor<32x100xf32>) outs(%s0 : tensor<32xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %sm = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<32x100xf32>, tensor<32xf32>) outs(%e : tensor<32x100xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %v = arith.divf %x, %s : f32
    linalg.yield %v : f32
  } -> tensor<32x100xf32>
  bufferization.materialize_in_destination %sm in restrict writable %out : (tensor<32x100xf32>, memref<32x100xf32>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {32, 100}, rng, -4, 4)},
         {HostBuffer("f32", {32, 100})},
         2e-6,
         1e-7});
}

TEST_F(OpsKernelTest, MathChain2d) {
  check({"chain2d",
         R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<17x33xf32>, %b: tensor<17x33xf32>, %out: memref<17x33xf32>) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<17x33xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<17x33xf32>, tensor<17x33xf32>) outs(%e : tensor<17x33xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = math.tanh %x : f32
    %y2 = arith.mulf %y, %y : f32
    %n = arith.negf %y2 : f32
    %g = math.exp %n : f32
    %p = arith.mulf %t, %g : f32
    %s = arith.addf %p, %one : f32
    linalg.yield %s : f32
  } -> tensor<17x33xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<17x33xf32>, memref<17x33xf32>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {17, 33}, rng, -3, 3),
          randomBuffer("f32", {17, 33}, rng, -2, 2)},
         {HostBuffer("f32", {17, 33})},
         1e-5,
         1e-6});
}

TEST_F(OpsKernelTest, Int32Arithmetic) {
  check({"add_i32",
         R"mlir(
func.func private @k(%a: tensor<100xi32>, %b: tensor<100xi32>, %out: memref<100xi32>) {
  %three = arith.constant dense<3> : tensor<100xi32>
  %e = tensor.empty() : tensor<100xi32>
  %m = linalg.mul ins(%a, %three : tensor<100xi32>, tensor<100xi32>) outs(%e : tensor<100xi32>) -> tensor<100xi32>
  %s = linalg.add ins(%m, %b : tensor<100xi32>, tensor<100xi32>) outs(%e : tensor<100xi32>) -> tensor<100xi32>
  bufferization.materialize_in_destination %s in restrict writable %out : (tensor<100xi32>, memref<100xi32>) -> ()
  return
}
)mlir",
         {randomBuffer("i32", {100}, rng, -100000, 100000),
          randomBuffer("i32", {100}, rng, -100000, 100000)},
         {HostBuffer("i32", {100})},
         0,
         0});
}

TEST_F(OpsKernelTest, MixedFloat16AndFloat32) {
  check({"mixed_f16",
         R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func private @k(%a: tensor<70xf16>, %b: tensor<70xf32>, %out: memref<70xf32>) {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<70xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<70xf16>, tensor<70xf32>) outs(%e : tensor<70xf32>) {
  ^bb0(%x: f16, %y: f32, %o: f32):
    %xf = arith.extf %x : f16 to f32
    %m = arith.mulf %xf, %two : f32
    %s = arith.addf %m, %y : f32
    linalg.yield %s : f32
  } -> tensor<70xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<70xf32>, memref<70xf32>) -> ()
  return
}
)mlir",
         {randomBuffer("f16", {70}, rng), randomBuffer("f32", {70}, rng)},
         {HostBuffer("f32", {70})}});
}

TEST_F(OpsKernelTest, BFloat16ArithmeticAndReduction) {
  // a*b-1 in bf16 arithmetic (each op rounded to bf16; numpy rounds once)
  // and the f32 row sums of the exact products.
  check(
      {"mixed_bf16",
       R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @k(%a: tensor<8x40xbf16>, %b: tensor<8x40xbf16>, %out: memref<8x40xbf16>, %sums: memref<8xf32>) {
  %one = arith.constant 1.0 : bf16
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x40xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<8x40xbf16>, tensor<8x40xbf16>) outs(%e : tensor<8x40xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o: bf16):
    %m = arith.mulf %x, %y : bf16
    %s = arith.subf %m, %one : bf16
    linalg.yield %s : bf16
  } -> tensor<8x40xbf16>
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a, %b : tensor<8x40xbf16>, tensor<8x40xbf16>) outs(%z : tensor<8xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8x40xbf16>, memref<8x40xbf16>) -> ()
  bufferization.materialize_in_destination %sum in restrict writable %sums : (tensor<8xf32>, memref<8xf32>) -> ()
  return
}
)mlir",
       {randomBuffer("bf16", {8, 40}, rng), randomBuffer("bf16", {8, 40}, rng)},
       {HostBuffer("bf16", {8, 40}), HostBuffer("f32", {8})},
       1e-2,
       1e-2});
}

TEST_F(OpsKernelTest, TransposeAdd) {
  check(
      {"transpose_add",
       R"mlir(
func.func private @k(%a: tensor<24x40xf32>, %b: tensor<40x24xf32>, %out: memref<40x24xf32>) {
  %e = tensor.empty() : tensor<40x24xf32>
  %t = linalg.transpose ins(%a : tensor<24x40xf32>) outs(%e : tensor<40x24xf32>) permutation = [1, 0]
  %s = linalg.add ins(%t, %b : tensor<40x24xf32>, tensor<40x24xf32>) outs(%e : tensor<40x24xf32>) -> tensor<40x24xf32>
  bufferization.materialize_in_destination %s in restrict writable %out : (tensor<40x24xf32>, memref<40x24xf32>) -> ()
  return
}
)mlir",
       {randomBuffer("f32", {24, 40}, rng), randomBuffer("f32", {40, 24}, rng)},
       {HostBuffer("f32", {40, 24})}});
}

TEST_F(OpsKernelTest, ConcatAndSlice) {
  check({"concat_slice",
         R"mlir(
func.func private @k(%a: tensor<6x5xf32>, %b: tensor<6x7xf32>, %out: memref<6x8xf32>) {
  %c = tensor.concat dim(1) %a, %b : (tensor<6x5xf32>, tensor<6x7xf32>) -> tensor<6x12xf32>
  %s = tensor.extract_slice %c[0, 2] [6, 8] [1, 1] : tensor<6x12xf32> to tensor<6x8xf32>
  bufferization.materialize_in_destination %s in restrict writable %out : (tensor<6x8xf32>, memref<6x8xf32>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {6, 5}, rng), randomBuffer("f32", {6, 7}, rng)},
         {HostBuffer("f32", {6, 8})},
         0,
         0});
}

TEST_F(OpsKernelTest, ReshapeReduceScale) {
  check({"reshape_scale",
         R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<8x8xf32>, %out: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %x = tensor.expand_shape %a [[0, 1], [2]] output_shape [4, 2, 8] : tensor<8x8xf32> into tensor<4x2x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = linalg.reduce ins(%x : tensor<4x2x8xf32>) outs(%z : tensor<4x8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %d = arith.mulf %v, %two : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {8, 8}, rng)},
         {HostBuffer("f32", {4, 8})}});
}

// Booleans are one byte per element in memory (numpy's bool): a comparison
// result, a mask input and a logical and of the two, over a row length (37)
// that 16 does not divide so both the vector and the remainder code run.
// Compared byte for byte: a bit-packed vector store does not pass.
TEST_F(OpsKernelTest, BooleanInputsAndOutputsAreBytes) {
  check({"compare_select",
         R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<4x37xf32>, %m: tensor<4x37xi1>, %gt: memref<4x37xi1>, %sel: memref<4x37xf32>, %both: memref<4x37xi1>) {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<4x37xi1>
  %ef = tensor.empty() : tensor<4x37xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x37xf32>) outs(%eb : tensor<4x37xi1>) {
  ^bb0(%x: f32, %o: i1):
    %c = arith.cmpf ogt, %x, %zero : f32
    linalg.yield %c : i1
  } -> tensor<4x37xi1>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %m : tensor<4x37xf32>, tensor<4x37xi1>) outs(%ef : tensor<4x37xf32>) {
  ^bb0(%x: f32, %mm: i1, %o: f32):
    %n = arith.negf %x : f32
    %r = arith.select %mm, %x, %n : f32
    linalg.yield %r : f32
  } -> tensor<4x37xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %m : tensor<4x37xi1>, tensor<4x37xi1>) outs(%eb : tensor<4x37xi1>) {
  ^bb0(%x: i1, %y: i1, %o: i1):
    %r = arith.andi %x, %y : i1
    linalg.yield %r : i1
  } -> tensor<4x37xi1>
  bufferization.materialize_in_destination %g in restrict writable %gt : (tensor<4x37xi1>, memref<4x37xi1>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %sel : (tensor<4x37xf32>, memref<4x37xf32>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %both : (tensor<4x37xi1>, memref<4x37xi1>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {4, 37}, rng),
          randomBuffer("i1", {4, 37}, rng, 0, 1)},
         {HostBuffer("i1", {4, 37}), HostBuffer("f32", {4, 37}),
          HostBuffer("i1", {4, 37})},
         0,
         0});
}

TEST_F(OpsKernelTest, MatmulBiasRelu) {
  check(
      {"matmul_bias_relu",
       R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<32x64xf32>, %b: tensor<64x32xf32>, %c: tensor<32x32xf32>, %out: memref<32x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x32xf32>) outs(%z : tensor<32x32xf32>) -> tensor<32x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %c : tensor<32x32xf32>, tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<32x32xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<32x32xf32>, memref<32x32xf32>) -> ()
  return
}
)mlir",
       {randomBuffer("f32", {32, 64}, rng), randomBuffer("f32", {64, 32}, rng),
        randomBuffer("f32", {32, 32}, rng)},
       {HostBuffer("f32", {32, 32})},
       1e-5,
       1e-5});
}

// Two matmuls writing two outputs from one zero-filled init (what CSE makes
// of `return x @ w1, x @ w2`): the second result came back as the first when
// empty-tensor elimination rooted the shared fill in the first output.
// N = 12 takes the generic tile-and-vectorize path, N = 16 the packed
// matmul schedule.
TEST_F(OpsKernelTest, TwoMatmulsSharingOneInit) {
  for (int n : {8, 12, 16}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::string t =
        "tensor<" + std::to_string(n) + "x" + std::to_string(n) + "xf32>";
    std::string m =
        "memref<" + std::to_string(n) + "x" + std::to_string(n) + "xf32>";
    std::string source =
        "func.func private @k(%a: " + t + ", %b: " + t + ", %c: " + t +
        ", %o1: " + m + ", %o2: " + m +
        ") {\n"
        "  %zero = arith.constant 0.0 : f32\n"
        "  %e = tensor.empty() : " +
        t +
        "\n"
        "  %z = linalg.fill ins(%zero : f32) outs(%e : " +
        t + ") -> " + t +
        "\n"
        "  %m1 = linalg.matmul ins(%a, %b : " +
        t + ", " + t + ") outs(%z : " + t + ") -> " + t +
        "\n"
        "  %m2 = linalg.matmul ins(%a, %c : " +
        t + ", " + t + ") outs(%z : " + t + ") -> " + t +
        "\n"
        "  bufferization.materialize_in_destination %m1 in restrict writable "
        "%o1 : (" +
        t + ", " + m +
        ") -> ()\n"
        "  bufferization.materialize_in_destination %m2 in restrict writable "
        "%o2 : (" +
        t + ", " + m +
        ") -> ()\n"
        "  return\n}\n";
    std::vector<int64_t> shape = {n, n};
    check({"two_matmuls",
           source,
           {randomBuffer("f32", shape, rng), randomBuffer("f32", shape, rng),
            randomBuffer("f32", shape, rng)},
           {HostBuffer("f32", shape), HostBuffer("f32", shape)},
           1e-5,
           1e-5});
  }
}

// A comparison that fusion leaves in memory, read through a slice and a
// transpose: vector stores packed its bits while the transpose read a byte
// per element (found by the differential fuzzer as `mc.shard(b.T, gpus=0)`
// of `b = x == x`). Boolean temporaries are bytes now.
TEST_F(OpsKernelTest, BooleanTemporaryReadThroughASliceAndATranspose) {
  check({"slice_transpose_bool",
         R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<4x37xf32>, %out: memref<20x4xi1>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x37xi1>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x37xf32>) outs(%e : tensor<4x37xi1>) {
  ^bb0(%x: f32, %o: i1):
    %c = arith.cmpf ogt, %x, %zero : f32
    linalg.yield %c : i1
  } -> tensor<4x37xi1>
  %s = tensor.extract_slice %g[0, 5] [4, 20] [1, 1] : tensor<4x37xi1> to tensor<4x20xi1>
  %e2 = tensor.empty() : tensor<20x4xi1>
  %t = linalg.transpose ins(%s : tensor<4x20xi1>) outs(%e2 : tensor<20x4xi1>) permutation = [1, 0]
  bufferization.materialize_in_destination %t in restrict writable %out : (tensor<20x4xi1>, memref<20x4xi1>) -> ()
  return
}
)mlir",
         {randomBuffer("f32", {4, 37}, rng)},
         {HostBuffer("i1", {20, 4})},
         0,
         0});
}

// A zero fill that a reduction accumulates into and that is also a result
// (what `return v, v - v` of int32 becomes once `v - v` folds to zeros):
// the reduction ran in place in the fill, which empty-tensor elimination had
// rooted in the second output, so both outputs held the sum (fuzzer seed
// 32058).
TEST_F(OpsKernelTest, ReductionIntoAnInitThatIsAlsoAResult) {
  check({"sum_and_its_init",
         R"mlir(
func.func private @k(%a: tensor<4x3xi32>, %o1: memref<3xi32>, %o2: memref<3xi32>) {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3xi32>
  %z = linalg.fill ins(%zero : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%a : tensor<4x3xi32>) outs(%z : tensor<3xi32>) dimensions = [0]
    (%in: i32, %acc: i32) {
      %s = arith.addi %in, %acc : i32
      linalg.yield %s : i32
    }
  bufferization.materialize_in_destination %r in restrict writable %o1 : (tensor<3xi32>, memref<3xi32>) -> ()
  bufferization.materialize_in_destination %z in restrict writable %o2 : (tensor<3xi32>, memref<3xi32>) -> ()
  return
}
)mlir",
         {randomBuffer("i32", {4, 3}, rng, -100, 100)},
         {HostBuffer("i32", {3}), HostBuffer("i32", {3})},
         0,
         0});
}

} // namespace
