//===- TraceBuilderTest.cpp - Meshes, tensor ops, lowering ------*- C++ -*-===//
//
// The controller side of the C++ TraceBuilder: meshes and slices, automatic
// feeds and fetches, sharding annotations, tensor ops with their shape and
// dtype checks (errors are values and leave the module usable), locations,
// and lowering through the stage pipelines.
//
//===----------------------------------------------------------------------===//

#include "monarch/Frontend/TraceBuilder.h"
#include "monarch/Driver/TraceCompile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

using namespace monarch::frontend;
using monarch::DType;
using monarch::driver::LowerOptions;
using monarch::driver::lowerTrace;
using monarch::driver::summarizeTrace;

namespace {

ArgType f32(std::vector<int64_t> shape) { return {std::move(shape)}; }

bool contains(const std::string &text, const std::string &piece) {
  return text.find(piece) != std::string::npos;
}

/// A builder with a 1x4 mesh and a function over `args` on it.
class TraceBuilderTest : public testing::Test {
protected:
  std::vector<Value> begin(std::vector<ArgType> args,
                           std::string mesh = "mesh") {
    EXPECT_TRUE(tb.declareMesh("mesh", {{"hosts", 1}, {"gpus", 4}}).isOk());
    auto r = tb.beginFunction("f", args, mesh);
    EXPECT_TRUE(r.isOk()) << (r ? "" : r.status().str());
    return r ? *r : std::vector<Value>{};
  }

  /// The error message of a failed result (or a marker when it succeeded).
  template <typename T> std::string err(const Result<T> &r) {
    return r ? std::string("<no error>") : r.status().message();
  }
  std::string err(const Status &s) {
    return s ? std::string("<no error>") : s.status().message();
  }
  /// The kind of a failed result (Unspecified when it succeeded).
  template <typename T> ErrorKind kind(const Result<T> &r) {
    return r ? ErrorKind::Unspecified : r.status().kind();
  }

  TraceBuilder tb;
};

TEST_F(TraceBuilderTest, MeshesAndSlices) {
  ASSERT_TRUE(tb.declareMesh("mesh", {{"hosts", 2}, {"gpus", 4}}).isOk());
  ASSERT_TRUE(tb.declareSlice("half", "mesh", {{"gpus", 0, 2}}).isOk());
  auto dims = tb.meshDims("half");
  ASSERT_TRUE(dims.isOk());
  ASSERT_EQ(dims->size(), 2u);
  EXPECT_EQ((*dims)[0].name, "hosts");
  EXPECT_EQ((*dims)[0].size, 2);
  EXPECT_EQ((*dims)[1].size, 2);
  EXPECT_TRUE(tb.hasMesh("half"));
  EXPECT_FALSE(tb.hasMesh("nope"));
  EXPECT_TRUE(contains(
      tb.str(), "monarch.mesh_slice @half of @mesh(hosts = 0 to 2, gpus = 0 "
                "to 2)"));
  EXPECT_TRUE(tb.verify().isOk());

  EXPECT_TRUE(
      contains(err(tb.declareMesh("mesh", {{"gpus", 2}})), "already declared"));
  EXPECT_TRUE(contains(err(tb.declareMesh("m2", {{"gpus", 0}})), "size 0"));
  EXPECT_TRUE(contains(err(tb.declareMesh("m3", {{"a", 1}, {"a", 2}})),
                       "appears twice"));
  EXPECT_TRUE(contains(err(tb.declareSlice("s", "mesh", {{"gpu", 0, 1}})),
                       "has no dimension 'gpu' (its dimensions: hosts, gpus)"));
  EXPECT_TRUE(contains(err(tb.declareSlice("s", "mesh", {{"gpus", 3, 9}})),
                       "out of range"));
  EXPECT_TRUE(contains(err(tb.declareSlice("s", "zzz", {})), "unknown mesh"));
  EXPECT_TRUE(tb.verify().isOk());
}

TEST_F(TraceBuilderTest, DataParallelStepLowersToEveryStage) {
  auto args = begin({f32({8, 4}), f32({4, 4})});
  auto x = tb.shard(args[0], {{"gpus", 0}});
  ASSERT_TRUE(x.isOk()) << x.status().str();
  EXPECT_EQ(tb.info(*x).mesh, "mesh");
  ASSERT_EQ(tb.info(*x).dist.split.size(), 2u);
  EXPECT_EQ(tb.info(*x).dist.split[0], std::vector<std::string>{"gpus"});
  auto y = tb.matmul(*x, args[1]);
  ASSERT_TRUE(y.isOk()) << y.status().str();
  EXPECT_EQ(tb.info(*y).shape, (std::vector<int64_t>{8, 4}));
  auto r = tb.unary(UnaryOp::Relu, *y);
  auto s = tb.reduce(ReduceOp::Sum, *r, {0});
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(tb.info(*s).shape, (std::vector<int64_t>{4}));
  auto rep = tb.replicate(*s);
  ASSERT_TRUE(rep.isOk());
  ASSERT_TRUE(tb.endFunction({*rep}).isOk());

  std::string traced = tb.str();
  EXPECT_TRUE(contains(traced, "monarch.feed %arg0 to @mesh"));
  EXPECT_TRUE(contains(traced, "split_axes = [[1]]"));
  EXPECT_TRUE(contains(traced, "linalg.matmul"));
  EXPECT_TRUE(contains(traced, "monarch.fetch"));
  for (const char *stage : {"traced", "partitioned", "split", "planned"}) {
    LowerOptions o;
    o.stage = stage;
    auto text = lowerTrace(tb, o);
    ASSERT_TRUE(text.isOk()) << stage << ": " << text.status().str();
  }
  LowerOptions o;
  o.stage = "partitioned";
  EXPECT_TRUE(contains(*lowerTrace(tb, o), "all_reduce"));
  o.stage = "bogus";
  EXPECT_TRUE(contains(err(lowerTrace(tb, o)), "unknown stage 'bogus'"));

  auto summary = summarizeTrace(tb);
  ASSERT_TRUE(summary.isOk()) << summary.status().str();
  EXPECT_EQ(summary->ranks.size(), 4u);
  EXPECT_GT(summary->globalWork, 0);
  ASSERT_EQ(summary->collectives.size(), 1u);
  EXPECT_EQ(summary->collectives[0].kind, "all_reduce");
  EXPECT_EQ(summary->collectives[0].count, 4);
  // Each rank all-reduces its 4 floats.
  EXPECT_EQ(summary->collectives[0].bytes, 4 * 16);
  for (const auto &rank : summary->ranks) {
    EXPECT_GT(rank.peakBytes, 0);
    EXPECT_LE(rank.peakBytes, rank.arenaBytes);
  }
}

TEST_F(TraceBuilderTest, LocationsAreTheCallersLines) {
  auto args = begin({f32({4, 4})});
  int line = __LINE__ + 1;
  auto y = tb.unary(UnaryOp::Exp, args[0]);
  ASSERT_TRUE(y.isOk());
  auto explicitLoc = tb.unary(UnaryOp::Tanh, *y, SourceLoc{"user.py", 7, 3});
  ASSERT_TRUE(explicitLoc.isOk());
  ASSERT_TRUE(tb.endFunction({*explicitLoc}).isOk());
  std::string text = tb.str(/*debugInfo=*/true);
  EXPECT_TRUE(contains(text, "TraceBuilderTest.cpp\":" + std::to_string(line)))
      << text;
  EXPECT_TRUE(contains(text, "math.tanh"));
  EXPECT_TRUE(contains(text, "loc(\"user.py\":7:3)")) << text;
  EXPECT_FALSE(contains(tb.str(false), "loc("));
}

TEST_F(TraceBuilderTest, ShapeErrorsAreValues) {
  auto args = begin({f32({4, 8}), f32({7, 3}), f32({8, 4})});
  auto bad = tb.matmul(args[0], args[1], SourceLoc{"step.py", 12, 9});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(),
            "matmul shape mismatch: (4,8) @ (7,3): 8 != 7");
  EXPECT_EQ(
      bad.status().str(),
      "step.py:12:9: error: matmul shape mismatch: (4,8) @ (7,3): 8 != 7");
  EXPECT_TRUE(contains(err(tb.binary(BinaryOp::Add, args[0], args[1])),
                       "cannot broadcast shapes (4,8) and (7,3)"));
  EXPECT_TRUE(
      contains(err(tb.reshape(args[0], {5, 7})), "cannot reshape a tensor"));
  EXPECT_TRUE(
      contains(err(tb.transpose(args[0], {0, 0})), "is not a permutation"));
  EXPECT_TRUE(contains(err(tb.reduce(ReduceOp::Sum, args[0], {2})),
                       "axis 2 is out of range"));
  // Each says its kind, which callers class it by (Python: ShapeError).
  EXPECT_EQ(bad.status().kind(), ErrorKind::Shape);
  EXPECT_EQ(kind(tb.binary(BinaryOp::Add, args[0], args[1])), ErrorKind::Shape);
  EXPECT_EQ(kind(tb.reshape(args[0], {5, 7})), ErrorKind::Shape);
  EXPECT_EQ(kind(tb.transpose(args[0], {0, 0})), ErrorKind::Shape);
  EXPECT_EQ(kind(tb.reduce(ReduceOp::Sum, args[0], {2})), ErrorKind::Shape);
  // Context keeps the kind and the location.
  Status wrapped = bad.status().withContext("while tracing f");
  EXPECT_EQ(wrapped.kind(), ErrorKind::Shape);
  EXPECT_EQ(wrapped.loc().line, 12u);
  // After the errors, tracing goes on and the module verifies.
  auto ok = tb.matmul(args[0], args[2]);
  ASSERT_TRUE(ok.isOk());
  ASSERT_TRUE(tb.endFunction({*ok}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
}

TEST_F(TraceBuilderTest, ShardingErrors) {
  auto args = begin({f32({6, 8})});
  EXPECT_EQ(err(tb.shard(args[0], {{"gpus", 0}})),
            "cannot split dimension 0 of size 6 of tensor (6,8) over mesh "
            "dimension 'gpus' of size 4: 6 is not divisible by 4");
  EXPECT_EQ(err(tb.shard(args[0], {{"gpu", 1}})),
            "mesh 'mesh' has no dimension 'gpu' (its dimensions: hosts, gpus)");
  EXPECT_TRUE(contains(err(tb.shard(args[0], {{"gpus", 2}})),
                       "tensor dimension 2 is out of range"));
  EXPECT_EQ(kind(tb.shard(args[0], {{"gpus", 0}})), ErrorKind::Sharding);
  EXPECT_EQ(kind(tb.shard(args[0], {{"gpu", 1}})), ErrorKind::Mesh);
  EXPECT_EQ(kind(tb.shard(args[0], {{"gpus", 2}})), ErrorKind::Shape);
  auto ok = tb.shard(args[0], {{"gpus", 1}});
  ASSERT_TRUE(ok.isOk());
  EXPECT_TRUE(tb.endFunction({*ok}).isOk());
}

TEST_F(TraceBuilderTest, ControllerValuesNeedAMesh) {
  auto args = begin({f32({4})}, /*mesh=*/"");
  EXPECT_TRUE(
      contains(err(tb.unary(UnaryOp::Neg, args[0])), "needs a mesh to run on"));
  EXPECT_EQ(kind(tb.unary(UnaryOp::Neg, args[0])), ErrorKind::Program);
  // Sharding a controller value records the sharding for its feed.
  auto s = tb.shard(args[0], {{"gpus", 0}}, "mesh");
  ASSERT_TRUE(s.isOk()) << s.status().str();
  EXPECT_EQ(tb.info(*s).mesh, "mesh");
  auto n = tb.unary(UnaryOp::Neg, *s);
  ASSERT_TRUE(n.isOk());
  ASSERT_TRUE(tb.endFunction({*n}).isOk());
}

// The DType is support's, shared with the plan and the data plane; what a
// trace may hold is a subset, and every entry point refuses the rest at the
// caller's line instead of tracing a type the pipeline cannot lower.
TEST_F(TraceBuilderTest, ElementTypesATraceCannotHoldAreRefused) {
  ArgType wide{{4}, DType::F64};
  auto f = tb.beginFunction("f", {f32({4}), wide}, "");
  EXPECT_EQ(err(f), "element type float64 cannot be traced (supported: "
                    "float32, float16, bfloat16, int32, bool)");
  auto args = begin({f32({4})});
  EXPECT_TRUE(contains(err(tb.constant(1.0, DType::I64)), "int64"));
  EXPECT_TRUE(contains(err(tb.cast(args[0], DType::UI8)), "uint8"));
  EXPECT_TRUE(contains(
      err(tb.constantTensor(std::string(8, '\0'), {4}, DType::I16)), "int16"));
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I1})
    EXPECT_TRUE(isTraceableDType(d)) << dtypeName(d);
}

TEST_F(TraceBuilderTest, BroadcastingReductionsAndCasts) {
  auto args = begin({f32({8, 1}), f32({4}), f32({8, 4})});
  auto sum = tb.binary(BinaryOp::Add, args[0], args[1]);
  ASSERT_TRUE(sum.isOk()) << sum.status().str();
  EXPECT_EQ(tb.info(*sum).shape, (std::vector<int64_t>{8, 4}));
  auto two = tb.constant(2.0, DType::F32);
  ASSERT_TRUE(two.isOk());
  EXPECT_TRUE(tb.info(*two).scalar);
  auto scaled = tb.binary(BinaryOp::Mul, *two, *sum);
  ASSERT_TRUE(scaled.isOk());
  auto mean = tb.reduce(ReduceOp::Mean, *scaled, {-1}, /*keepDims=*/true);
  ASSERT_TRUE(mean.isOk()) << mean.status().str();
  EXPECT_EQ(tb.info(*mean).shape, (std::vector<int64_t>{8, 1}));
  auto all = tb.reduce(ReduceOp::Max, args[2], {});
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(tb.info(*all).shape, std::vector<int64_t>{});
  auto soft = tb.softmax(args[2], 1);
  ASSERT_TRUE(soft.isOk());
  EXPECT_EQ(tb.info(*soft).shape, (std::vector<int64_t>{8, 4}));
  auto half = tb.cast(*soft, DType::BF16);
  ASSERT_TRUE(half.isOk());
  EXPECT_EQ(tb.info(*half).dtype, DType::BF16);
  auto ints = tb.cast(args[2], DType::I32);
  ASSERT_TRUE(ints.isOk());
  // numpy's promotion: exp of int32, int32 + float32 and int32 / int32 are
  // float (float64 in numpy, float32 here); int32 // int32 stays int32.
  auto expInts = tb.unary(UnaryOp::Exp, *ints);
  ASSERT_TRUE(expInts.isOk());
  EXPECT_EQ(tb.info(*expInts).dtype, DType::F32);
  auto mixed = tb.binary(BinaryOp::Add, *ints, args[2]);
  ASSERT_TRUE(mixed.isOk());
  EXPECT_EQ(tb.info(*mixed).dtype, DType::F32);
  auto quotient = tb.binary(BinaryOp::Div, *ints, *ints);
  ASSERT_TRUE(quotient.isOk());
  EXPECT_EQ(tb.info(*quotient).dtype, DType::F32);
  auto floored = tb.binary(BinaryOp::FloorDiv, *ints, *ints);
  ASSERT_TRUE(floored.isOk());
  EXPECT_EQ(tb.info(*floored).dtype, DType::I32);
  auto halfPlusFloat = tb.binary(BinaryOp::Mul, *half, args[2]);
  ASSERT_TRUE(halfPlusFloat.isOk());
  EXPECT_EQ(tb.info(*halfPlusFloat).dtype, DType::F32);
  EXPECT_TRUE(
      contains(err(tb.binary(BinaryOp::Pow, *ints, *ints)), "unsupported op"));
  auto cmp = tb.compare(CompareOp::Gt, args[2], *two);
  ASSERT_TRUE(cmp.isOk());
  EXPECT_EQ(tb.info(*cmp).dtype, DType::I1);
  auto sel = tb.select(*cmp, args[2], *two);
  ASSERT_TRUE(sel.isOk()) << sel.status().str();
  // A general reshape in controller code runs on whole values.
  auto merged = tb.reshape(*sel, {-1});
  ASSERT_TRUE(merged.isOk()) << merged.status().str();
  EXPECT_EQ(tb.info(*merged).shape, (std::vector<int64_t>{32}));
  auto flat = tb.reshape(*sel, {8, 1, 4});
  ASSERT_TRUE(flat.isOk()) << flat.status().str();
  EXPECT_EQ(tb.info(*flat).shape, (std::vector<int64_t>{8, 1, 4}));
  auto t = tb.transpose(*half);
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(tb.info(*t).shape, (std::vector<int64_t>{4, 8}));
  ASSERT_TRUE(tb.endFunction({*mean, *all, *t, *flat, *merged}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
  LowerOptions planned;
  planned.stage = "planned";
  EXPECT_TRUE(lowerTrace(tb, planned).isOk());
  std::string text = tb.str();
  // Only the general reshape collapses; size-1 dimensions are generics.
  EXPECT_TRUE(contains(text, "tensor.collapse_shape"));
  EXPECT_FALSE(contains(text, "tensor.expand_shape"));
  EXPECT_TRUE(contains(text, "linalg.transpose"));
  EXPECT_TRUE(contains(text, "arith.truncf"));
}

TEST_F(TraceBuilderTest, DeadTensorWorkIsDropped) {
  auto args = begin({f32({4})});
  auto dead = tb.unary(UnaryOp::Exp, args[0]);
  ASSERT_TRUE(dead.isOk());
  ASSERT_TRUE(tb.endFunction({args[0]}).isOk());
  EXPECT_FALSE(contains(tb.str(), "math.exp"));
  LowerOptions o;
  o.stage = "planned";
  EXPECT_TRUE(lowerTrace(tb, o).isOk());
}

TEST_F(TraceBuilderTest, GathersReadACapturedTable) {
  auto args = begin({f32({10, 4}), ArgType{{2, 3}, DType::I32},
                     ArgType{{2, 3}, DType::I1}, f32({4})});
  auto rows = tb.take(args[0], args[1], 0);
  ASSERT_TRUE(rows.isOk()) << rows.status().str();
  EXPECT_EQ(tb.info(*rows).shape, (std::vector<int64_t>{2, 3, 4}));
  auto cols = tb.take(args[0], args[1], -1);
  ASSERT_TRUE(cols.isOk()) << cols.status().str();
  EXPECT_EQ(tb.info(*cols).shape, (std::vector<int64_t>{10, 2, 3}));
  auto masks = tb.take(args[2], args[1], 1);
  ASSERT_TRUE(masks.isOk()) << masks.status().str();
  EXPECT_EQ(tb.info(*masks).dtype, DType::I1);
  EXPECT_TRUE(contains(err(tb.take(args[0], args[0], 0)),
                       "indices must be an integer tensor"));
  EXPECT_TRUE(contains(err(tb.take(args[0], args[2], 0)),
                       "indices must be an integer tensor"));
  EXPECT_TRUE(contains(err(tb.take(args[0], args[1], 2)), "out of range"));
  auto two = tb.constant(2.0, DType::I32);
  ASSERT_TRUE(two.isOk());
  EXPECT_TRUE(contains(err(tb.take(args[0], *two, 0)), "got a scalar"));
  // A 0-d index of a 1-D table gives a 0-d result.
  auto first = tb.take(args[1], args[1], 0);
  ASSERT_TRUE(first.isOk());
  ASSERT_TRUE(tb.endFunction({*rows, *cols, *masks}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
  std::string text = tb.str();
  EXPECT_TRUE(contains(text, "tensor.extract %"));
  EXPECT_TRUE(contains(text, "arith.minsi"));
  LowerOptions planned;
  planned.stage = "planned";
  EXPECT_TRUE(lowerTrace(tb, planned).isOk());
}

TEST_F(TraceBuilderTest, ProductIsOneReductionAndBooleansMultiplyAsInts) {
  auto args = begin({f32({6, 4}), ArgType{{6}, DType::I1}});
  auto rows = tb.reduce(ReduceOp::Prod, args[0], {1});
  ASSERT_TRUE(rows.isOk()) << rows.status().str();
  EXPECT_EQ(tb.info(*rows).shape, (std::vector<int64_t>{6}));
  auto all = tb.reduce(ReduceOp::Prod, args[1], {});
  ASSERT_TRUE(all.isOk()) << all.status().str();
  EXPECT_EQ(tb.info(*all).dtype, DType::I32);
  ASSERT_TRUE(tb.endFunction({*rows, *all}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
  std::string text = tb.str();
  EXPECT_TRUE(contains(text, "linalg.reduce"));
  EXPECT_TRUE(contains(text, "arith.mulf"));
  EXPECT_TRUE(contains(text, "arith.muli"));
  EXPECT_TRUE(contains(text, "1.000000e+00"));
}

TEST_F(TraceBuilderTest, EinsumIsOneGenericWithTheLabelsAsLoops) {
  auto args = begin({f32({2, 3, 4, 5}), f32({2, 3, 6, 5}), f32({4}),
                     ArgType{{6}, DType::I32}, ArgType{{4}, DType::I1}});
  // Attention scores: b and h batch, d contracted.
  auto scores = tb.einsum(args[0], args[1], "bhqd", "bhkd", "bhqk");
  ASSERT_TRUE(scores.isOk()) << scores.status().str();
  EXPECT_EQ(tb.info(*scores).shape, (std::vector<int64_t>{2, 3, 4, 6}));
  // A label of one operand summed, a 0-d result, int32 promoted to float32.
  auto dot = tb.einsum(args[2], args[2], "q", "q", "");
  ASSERT_TRUE(dot.isOk()) << dot.status().str();
  EXPECT_TRUE(tb.info(*dot).shape.empty());
  auto outer = tb.einsum(args[2], args[3], "q", "k", "kq");
  ASSERT_TRUE(outer.isOk()) << outer.status().str();
  EXPECT_EQ(tb.info(*outer).shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(tb.info(*outer).dtype, DType::F32);
  EXPECT_TRUE(contains(err(tb.einsum(args[0], args[1], "bhqd", "bhqd", "b")),
                       "label 'q' has sizes 4 and 6"));
  EXPECT_TRUE(contains(err(tb.einsum(args[0], args[1], "bhq", "bhkd", "b")),
                       "3 labels for an operand of shape"));
  EXPECT_TRUE(contains(err(tb.einsum(args[0], args[1], "bhqq", "bhkd", "b")),
                       "is not a letter or is repeated"));
  EXPECT_TRUE(contains(err(tb.einsum(args[0], args[1], "bhqd", "bhkd", "z")),
                       "in neither operand"));
  EXPECT_TRUE(contains(err(tb.einsum(args[4], args[2], "q", "q", "q")),
                       "einsum of bool tensors"));
  ASSERT_TRUE(tb.endFunction({*scores, *dot, *outer}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
  std::string text = tb.str();
  // Loops: the result's labels first (b h q k), then d.
  EXPECT_TRUE(contains(text, "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, "
                             "d2, d4)>"));
  EXPECT_TRUE(contains(text, "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, "
                             "d3, d4)>"));
  EXPECT_TRUE(contains(text, "\"parallel\", \"parallel\", \"parallel\", "
                             "\"parallel\", \"reduction\""));
  LowerOptions planned;
  planned.stage = "planned";
  EXPECT_TRUE(lowerTrace(tb, planned).isOk());
}

TEST_F(TraceBuilderTest, TakeAlongGathersAtTheResultsOwnCoordinates) {
  auto args = begin({f32({4, 6}), ArgType{{4, 2}, DType::I32},
                     ArgType{{3, 2}, DType::I32}, ArgType{{4, 6}, DType::I1}});
  auto picked = tb.takeAlong(args[0], args[1], 1);
  ASSERT_TRUE(picked.isOk()) << picked.status().str();
  EXPECT_EQ(tb.info(*picked).shape, (std::vector<int64_t>{4, 2}));
  auto masks = tb.takeAlong(args[3], args[1], -1);
  ASSERT_TRUE(masks.isOk()) << masks.status().str();
  EXPECT_EQ(tb.info(*masks).dtype, DType::I1);
  // Off the axis the indices must have the tensor's shape.
  EXPECT_TRUE(contains(err(tb.takeAlong(args[0], args[2], 1)),
                       "shape except along the axis"));
  EXPECT_TRUE(contains(err(tb.takeAlong(args[0], args[1], 0)),
                       "shape except along the axis"));
  ASSERT_TRUE(tb.endFunction({*picked, *masks}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
  // One gather over the result's loops: the row coordinate is an arange
  // read along the first loop, the column the clamped index.
  std::string text = tb.str();
  EXPECT_TRUE(contains(text, "dense<[0, 1, 2, 3]> : tensor<4xi32>"));
  EXPECT_TRUE(contains(text, "tensor.extract %"));
  LowerOptions planned;
  planned.stage = "planned";
  EXPECT_TRUE(lowerTrace(tb, planned).isOk());
}

TEST_F(TraceBuilderTest, ScatterAddIsTheGathersAdjoint) {
  // take's adjoint: values (2, [3, 4], 5) into 7 rows at axis 1; take
  // along's: values (4, 2) into 6 columns. One compare-and-add generic
  // each, summed over the index loops, with the rows' coordinates as an
  // arange input (the form ScatterLoops.cpp lowers to a scatter loop).
  auto args =
      begin({f32({2, 3, 4, 5}), ArgType{{3, 4}, DType::I32}, f32({4, 2}),
             ArgType{{4, 2}, DType::I32}, ArgType{{4, 2}, DType::I1}});
  auto rows = tb.scatterAdd(args[0], args[1], 7, 1);
  ASSERT_TRUE(rows.isOk()) << rows.status().str();
  EXPECT_EQ(tb.info(*rows).shape, (std::vector<int64_t>{2, 7, 5}));
  auto cols = tb.scatterAddAlong(args[2], args[3], 6, -1);
  ASSERT_TRUE(cols.isOk()) << cols.status().str();
  EXPECT_EQ(tb.info(*cols).shape, (std::vector<int64_t>{4, 6}));
  EXPECT_TRUE(contains(err(tb.scatterAdd(args[0], args[1], 7, 0)),
                       "do not match indices"));
  EXPECT_TRUE(contains(err(tb.scatterAddAlong(args[0], args[3], 6, 1)),
                       "do not match indices"));
  EXPECT_TRUE(contains(err(tb.scatterAdd(args[0], args[0], 7, 1)),
                       "indices must be an integer tensor"));
  EXPECT_TRUE(contains(err(tb.scatterAdd(args[4], args[3], 7, 0)), "boolean"));
  EXPECT_TRUE(
      contains(err(tb.scatterAdd(args[0], args[1], 0, 1)), "positive size"));
  EXPECT_TRUE(
      contains(err(tb.scatterAdd(args[0], args[1], 7, 3)), "out of range"));
  ASSERT_TRUE(tb.endFunction({*rows, *cols}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
  std::string text = tb.str();
  EXPECT_TRUE(contains(text, "dense<[0, 1, 2, 3, 4, 5, 6]> : tensor<7xi32>"));
  EXPECT_TRUE(contains(text, "\"parallel\", \"parallel\", "
                             "\"parallel\", \"reduction\", "
                             "\"reduction\""));
  EXPECT_TRUE(contains(text, "arith.cmpi eq"));
  EXPECT_FALSE(contains(text, "linalg.matmul"));
  LowerOptions planned;
  planned.stage = "planned";
  EXPECT_TRUE(lowerTrace(tb, planned).isOk());
}

} // namespace

// The driver's dump of a trace: monarch-compile --dump-dir's layout, every
// stage named, nothing left in the traced module itself.
TEST_F(TraceBuilderTest, DumpTraceWritesEveryPassAndStage) {
  auto args = begin({f32({8, 4})});
  auto x = tb.shard(args[0], {{"gpus", 0}});
  ASSERT_TRUE(x.isOk());
  auto r = tb.unary(UnaryOp::Relu, *x);
  ASSERT_TRUE(r.isOk());
  ASSERT_TRUE(tb.endFunction({*tb.replicate(*r)}).isOk());
  std::string before = tb.str();
  std::string dir = testing::TempDir() + "/monarch-dump-trace";
  std::filesystem::remove_all(dir);
  monarch::Status dumped = monarch::driver::dumpTrace(tb, dir);
  ASSERT_TRUE(dumped.isOk()) << dumped.str();
  for (const std::string &stage : monarch::driver::stageNames())
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + stage + ".mlir")) << stage;
  EXPECT_TRUE(std::filesystem::exists(dir + "/00-input.mlir"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/01-monarch-partition.mlir"));
  EXPECT_EQ(tb.str(), before);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(
      monarch::driver::stageNames(),
      (std::vector<std::string>{"traced", "partitioned", "split", "planned"}));
}
