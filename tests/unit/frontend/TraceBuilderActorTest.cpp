//===- TraceBuilderActorTest.cpp - Actors --------------------- -*- C++ -*-===//
//
// Actor classes, state, endpoints with their collectives, actor meshes on
// slices, calls and broadcasts from controller functions (feeds and
// transfers inserted automatically), and the errors of each.
//
//===----------------------------------------------------------------------===//

#include "monarch/Driver/TraceCompile.h"
#include "monarch/Frontend/TraceBuilder.h"

#include <gtest/gtest.h>

#include <string>

using namespace monarch::frontend;
using monarch::DType;
using monarch::driver::LowerOptions;
using monarch::driver::lowerTrace;
using monarch::driver::summarizeTrace;

namespace {

ArgType f32(std::vector<int64_t> shape) { return {std::move(shape)}; }
ArgType scalarF32() { return {{}, DType::F32, true}; }

bool contains(const std::string &text, const std::string &piece) {
  return text.find(piece) != std::string::npos;
}

class ActorTest : public testing::Test {
protected:
  /// @mesh (hosts=1, gpus=4), halves @s0_mesh and @s1_mesh, class @Stage
  /// with state @w and endpoint @forward(x: 8x4) -> 8x4.
  void SetUp() override {
    ASSERT_TRUE(tb.declareMesh("mesh", {{"hosts", 1}, {"gpus", 4}}).isOk());
    ASSERT_TRUE(tb.declareSlice("s0_mesh", "mesh", {{"gpus", 0, 2}}).isOk());
    ASSERT_TRUE(tb.declareSlice("s1_mesh", "mesh", {{"gpus", 2, 4}}).isOk());
    ASSERT_TRUE(tb.declareActorClass("Stage").isOk());
    ASSERT_TRUE(tb.addState("Stage", "w", f32({4, 4})).isOk());
    auto in =
        tb.beginEndpoint("Stage", "forward", {f32({8, 4})}, {}, "s0_mesh");
    ASSERT_TRUE(in.isOk()) << in.status().str();
    EXPECT_TRUE(tb.inEndpoint());
    auto w = tb.stateGet("w");
    ASSERT_TRUE(w.isOk());
    auto y = tb.matmul((*in)[0], *w);
    ASSERT_TRUE(y.isOk());
    ASSERT_TRUE(tb.endEndpoint({*y}, {}).isOk());
    EXPECT_FALSE(tb.inEndpoint());
    ASSERT_TRUE(tb.declareActorMesh("s0", "Stage", "s0_mesh").isOk());
    ASSERT_TRUE(tb.declareActorMesh("s1", "Stage", "s1_mesh").isOk());
  }

  template <typename T> std::string err(const Result<T> &r) {
    return r ? std::string("<no error>") : r.status().message();
  }
  std::string err(const Status &s) {
    return s ? std::string("<no error>") : s.status().message();
  }

  TraceBuilder tb;
};

TEST_F(ActorTest, PipelineFeedsTransfersAndFetches) {
  auto args = tb.beginFunction("pipeline", {f32({8, 4})});
  ASSERT_TRUE(args.isOk());
  auto h = tb.call("s0", "forward", {(*args)[0]});
  ASSERT_TRUE(h.isOk()) << h.status().str();
  EXPECT_EQ(tb.info((*h)[0]).mesh, "s0_mesh");
  auto y = tb.call("s1", "forward", {(*h)[0]});
  ASSERT_TRUE(y.isOk()) << y.status().str();
  EXPECT_EQ(tb.info((*y)[0]).mesh, "s1_mesh");
  ASSERT_TRUE(tb.endFunction({(*y)[0]}).isOk());
  std::string text = tb.str();
  EXPECT_TRUE(contains(text, "monarch.feed %arg0 to @s0_mesh"));
  EXPECT_TRUE(contains(text, "monarch.call @s0::@forward"));
  EXPECT_TRUE(contains(text, "monarch.transfer %1 from @s0_mesh to @s1_mesh"))
      << text;
  EXPECT_TRUE(contains(text, "from @s1_mesh : tensor<8x4xf32>"));
  LowerOptions o;
  o.stage = "planned";
  auto planned = lowerTrace(tb, o);
  ASSERT_TRUE(planned.isOk()) << planned.status().str();
  EXPECT_TRUE(contains(*planned, "monarch.send"));
  auto summary = summarizeTrace(tb);
  ASSERT_TRUE(summary.isOk());
  // Stage 0's two ranks each send the 8x4 activation to stage 1.
  ASSERT_EQ(summary->links.size(), 2u);
  for (const auto &link : summary->links)
    EXPECT_EQ(link.bytes, 8 * 4 * 4);
}

TEST_F(ActorTest, ShardedArgumentsAndResults) {
  // Per-rank 2x4 rows of a global 4x4 over s0_mesh's two gpus; the result
  // is split the same way.
  Dist rows{{{"gpus"}, {}}, std::nullopt};
  auto in = tb.beginEndpoint("Stage", "rows", {f32({2, 4})}, {rows}, "s0_mesh");
  ASSERT_TRUE(in.isOk());
  auto g = tb.allGather((*in)[0], {"gpus"}, 0);
  ASSERT_TRUE(g.isOk());
  EXPECT_EQ(tb.info(*g).shape, (std::vector<int64_t>{4, 4}));
  auto rs = tb.reduceScatter(*g, {"gpus"}, 0, ReduceKind::Avg);
  ASSERT_TRUE(rs.isOk());
  EXPECT_EQ(tb.info(*rs).shape, (std::vector<int64_t>{2, 4}));
  auto b = tb.broadcastFrom(*rs, {"gpus"}, 1);
  ASSERT_TRUE(b.isOk());
  EXPECT_TRUE(contains(err(tb.broadcastFrom(*rs, {"gpus"}, 2)),
                       "root 2 is out of range for 2 ranks"));
  EXPECT_TRUE(
      contains(err(tb.allReduce(*rs, {"gpu"})), "has no dimension 'gpu'"));
  EXPECT_TRUE(contains(err(tb.reduceScatter(*rs, {"gpus"}, 1)), "<no error>"));
  ASSERT_TRUE(tb.endEndpoint({*b}, {rows}).isOk());

  auto args = tb.beginFunction("f", {f32({4, 4}), f32({6, 4}), f32({5, 4})});
  ASSERT_TRUE(args.isOk());
  auto x = tb.shard((*args)[0], {{"gpus", 0}}, "s0_mesh");
  ASSERT_TRUE(x.isOk()) << x.status().str();
  auto y = tb.call("s0", "rows", {*x});
  ASSERT_TRUE(y.isOk()) << y.status().str();
  EXPECT_EQ(tb.info((*y)[0]).shape, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(tb.info((*y)[0]).dist.split[0], std::vector<std::string>{"gpus"});
  // A 6x4 is 3x4 per rank, not what the endpoint was traced for; a 5x4
  // does not split.
  EXPECT_EQ(err(tb.call("s0", "rows", {(*args)[1]})),
            "argument #0 of rows: got tensor<6x4xf32> (per rank "
            "tensor<3x4xf32>) but the endpoint was traced for per-rank "
            "tensor<2x4xf32>");
  EXPECT_TRUE(contains(err(tb.call("s0", "rows", {(*args)[2]})),
                       "tensor dimension 0 of size 5 is not divisible by 2"));
  EXPECT_TRUE(
      contains(err(tb.call("s0", "nope", {*x})), "has no endpoint 'nope'"));
  EXPECT_TRUE(contains(err(tb.call("s0", "rows", {})), "takes 1 arguments"));
  EXPECT_TRUE(
      contains(err(tb.call("zz", "rows", {*x})), "unknown actor mesh 'zz'"));
  ASSERT_TRUE(tb.endFunction({(*y)[0]}).isOk());
  EXPECT_TRUE(tb.verify().isOk());
}

TEST_F(ActorTest, StateUpdatesAndScalars) {
  auto in = tb.beginEndpoint("Stage", "update", {f32({4, 4}), scalarF32()}, {},
                             "s0_mesh");
  ASSERT_TRUE(in.isOk());
  auto g = tb.allReduce((*in)[0], {"gpus"}, ReduceKind::Avg);
  ASSERT_TRUE(g.isOk());
  // Per-rank code may reshape freely (it is not partitioned).
  auto flat = tb.reshape(*g, {2, 8});
  ASSERT_TRUE(flat.isOk()) << flat.status().str();
  auto back = tb.reshape(*flat, {4, 4});
  ASSERT_TRUE(back.isOk());
  g = back;
  auto w = tb.stateGet("w");
  auto step = tb.binary(BinaryOp::Mul, (*in)[1], *g);
  ASSERT_TRUE(step.isOk()) << step.status().str();
  auto w2 = tb.binary(BinaryOp::Sub, *w, *step);
  ASSERT_TRUE(w2.isOk());
  auto wrong = tb.reduce(ReduceOp::Sum, *w2, {0});
  EXPECT_TRUE(contains(err(tb.stateSet("w", *wrong)),
                       "state 'w' has type tensor<4x4xf32> but is assigned a "
                       "value of type tensor<4xf32>"));
  EXPECT_TRUE(contains(err(tb.stateGet("v")), "has no state 'v'"));
  EXPECT_TRUE(tb.stateSet("w", *w2).isOk());
  ASSERT_TRUE(tb.endEndpoint({}, {}).isOk());

  auto args = tb.beginFunction("apply", {f32({4, 4}), scalarF32()});
  ASSERT_TRUE(args.isOk());
  EXPECT_TRUE(tb.broadcast("s0", "update", *args).isOk());
  EXPECT_TRUE(tb.broadcast("s1", "update", *args).isOk());
  // Collectives belong to per-rank code.
  EXPECT_TRUE(contains(err(tb.allReduce((*args)[0], {"gpus"})),
                       "explicit collective of per-rank code"));
  ASSERT_TRUE(tb.endFunction({}).isOk());
  EXPECT_TRUE(contains(tb.str(), "tensor.collapse_shape"));
  EXPECT_TRUE(contains(tb.str(), "tensor.expand_shape"));
  LowerOptions o;
  o.stage = "planned";
  auto planned = lowerTrace(tb, o);
  EXPECT_TRUE(planned.isOk()) << planned.status().str();
}

TEST_F(ActorTest, ScopesAreIsolated) {
  auto in = tb.beginEndpoint("Stage", "leak", {f32({4})}, {}, "s0_mesh");
  ASSERT_TRUE(in.isOk());
  Value inner = (*in)[0];
  ASSERT_TRUE(tb.endEndpoint({inner}, {}).isOk());
  auto args = tb.beginFunction("f", {f32({4})});
  ASSERT_TRUE(args.isOk());
  EXPECT_TRUE(contains(err(tb.fetch(inner)), "belongs to an endpoint body"));
  EXPECT_TRUE(contains(err(tb.beginFunction("g", {})), "already being traced"));
  ASSERT_TRUE(tb.endFunction({}).isOk());

  // An endpoint abandoned after an error leaves no trace.
  auto bad = tb.beginEndpoint("Stage", "broken", {f32({4})}, {}, "s0_mesh");
  ASSERT_TRUE(bad.isOk());
  tb.abandonEndpoint();
  EXPECT_FALSE(tb.hasEndpoint("Stage", "broken"));
  EXPECT_TRUE(tb.hasEndpoint("Stage", "forward"));
  EXPECT_TRUE(tb.verify().isOk());
}

TEST_F(ActorTest, FunctionsAndActorsHaveSeparateNames) {
  // A function named like a mesh gets a fresh symbol at once.
  auto f = tb.beginFunction("s0_mesh", {f32({8, 4})});
  ASSERT_TRUE(f.isOk()) << err(f);
  EXPECT_EQ(tb.functionName(), "s0_mesh_fn");
  auto y = tb.call("s0", "forward", {(*f)[0]});
  ASSERT_TRUE(y.isOk()) << err(y);
  ASSERT_TRUE(tb.endFunction(*y).isOk());
  EXPECT_TRUE(tb.verify().isOk());

  // An actor mesh declared while a function of its name is traced keeps the
  // name; the function is renamed.
  TraceBuilder other;
  ASSERT_TRUE(other.declareMesh("mesh", {{"gpus", 2}}).isOk());
  ASSERT_TRUE(other.declareActorClass("Echo").isOk());
  auto e = other.beginEndpoint("Echo", "echo", {f32({4})}, {}, "mesh");
  ASSERT_TRUE(e.isOk()) << err(e);
  ASSERT_TRUE(other.endEndpoint({(*e)[0]}, {}).isOk());
  auto g = other.beginFunction("echo", {f32({4})});
  ASSERT_TRUE(g.isOk()) << err(g);
  EXPECT_EQ(other.functionName(), "echo");
  ASSERT_TRUE(other.declareActorMesh("echo", "Echo", "mesh").isOk());
  EXPECT_EQ(other.functionName(), "echo_fn");
  EXPECT_TRUE(other.hasActorMesh("echo"));
  auto r = other.call("echo", "echo", {(*g)[0]});
  ASSERT_TRUE(r.isOk()) << err(r);
  ASSERT_TRUE(other.endFunction(*r).isOk());
  EXPECT_TRUE(other.verify().isOk());
  // Two actor meshes still cannot share a name.
  EXPECT_TRUE(contains(err(other.declareActorMesh("echo", "Echo", "mesh")),
                       "already declared"));
}

} // namespace
