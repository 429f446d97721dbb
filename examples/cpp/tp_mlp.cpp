//===- tp_mlp.cpp - Trace a tensor-parallel MLP layer from C++ --*- C++ -*-===//
//
// Builds, with the C++ TraceBuilder, a Megatron-style MLP layer on a 1x4
// mesh, twice: once as a controller function whose weights are sharded with
// `shard` (the compiler partitions it and inserts the all_reduce), once as
// an actor whose endpoint holds the per-rank shards and calls `allReduce`
// itself. Prints the traced module (with locations: they point at this
// file), then the `partitioned` stage. Every call returns an error value;
// the program stops at the first one with `file:line:col: error: ...`.
//
//   build/bin/monarch-example-tp-mlp [--stage=planned] [--no-debug-info]
//
//===----------------------------------------------------------------------===//

#include "monarch/Driver/TraceCompile.h"
#include "monarch/Frontend/TraceBuilder.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace monarch::frontend;
using monarch::driver::LowerOptions;
using monarch::driver::lowerTrace;

namespace {

/// Prints the error and exits when `r` holds one.
template <typename T> T orDie(Result<T> r) {
  if (!r) {
    std::fprintf(stderr, "%s\n", r.status().str().c_str());
    std::exit(1);
  }
  return std::move(*r);
}

void orDie(const Status &s) {
  if (!s) {
    std::fprintf(stderr, "%s\n", s.status().str().c_str());
    std::exit(1);
  }
}

ArgType f32(std::vector<int64_t> shape) { return {std::move(shape)}; }

/// y = gelu(x @ w1) @ w2 with w1 split by columns and w2 by rows.
void controllerLayer(TraceBuilder &tb) {
  std::vector<Value> args = orDie(tb.beginFunction(
      "mlp", {f32({8, 16}), f32({16, 64}), f32({64, 8})}, "mesh"));
  Value x = args[0];
  Value w1 = orDie(tb.shard(args[1], {{"gpus", 1}}));
  Value w2 = orDie(tb.shard(args[2], {{"gpus", 0}}));
  Value h = orDie(tb.unary(UnaryOp::Gelu, orDie(tb.matmul(x, w1))));
  Value y = orDie(tb.replicate(orDie(tb.matmul(h, w2))));
  orDie(tb.endFunction({y}));
}

/// The same layer as per-rank code: each rank keeps its shards as state.
void actorLayer(TraceBuilder &tb) {
  orDie(tb.declareActorClass("TPLayer"));
  orDie(tb.addState("TPLayer", "w1", f32({16, 16})));
  orDie(tb.addState("TPLayer", "w2", f32({16, 8})));
  std::vector<Value> in =
      orDie(tb.beginEndpoint("TPLayer", "forward", {f32({8, 16})}, {}, "mesh"));
  Value w1 = orDie(tb.stateGet("w1"));
  Value w2 = orDie(tb.stateGet("w2"));
  Value h = orDie(tb.unary(UnaryOp::Gelu, orDie(tb.matmul(in[0], w1))));
  Value partial = orDie(tb.matmul(h, w2));
  Value y = orDie(tb.allReduce(partial, {"gpus"}, ReduceKind::Sum));
  orDie(tb.endEndpoint({y}, {}));
  orDie(tb.declareActorMesh("tp", "TPLayer", "mesh"));

  std::vector<Value> args =
      orDie(tb.beginFunction("mlp_actor", {f32({8, 16})}));
  std::vector<Value> out = orDie(tb.call("tp", "forward", {args[0]}));
  orDie(tb.endFunction(out));
}

} // namespace

int main(int argc, char **argv) {
  LowerOptions options;
  options.stage = "partitioned";
  options.debugInfo = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--stage=", 8) == 0)
      options.stage = argv[i] + 8;
    else if (std::strcmp(argv[i], "--no-debug-info") == 0)
      options.debugInfo = false;
  }

  TraceBuilder tb;
  orDie(tb.declareMesh("mesh", {{"hosts", 1}, {"gpus", 4}}));
  controllerLayer(tb);
  actorLayer(tb);
  orDie(tb.verify());

  std::printf("// ===== traced\n%s\n", tb.str(options.debugInfo).c_str());
  LowerOptions lowered = options;
  lowered.debugInfo = false;
  std::printf("// ===== %s\n%s\n", options.stage.c_str(),
              orDie(lowerTrace(tb, lowered)).c_str());

  // Errors are values: a shape mismatch is reported, not fatal.
  TraceBuilder bad;
  orDie(bad.declareMesh("mesh", {{"gpus", 4}}));
  std::vector<Value> a =
      orDie(bad.beginFunction("bad", {f32({4, 8}), f32({7, 3})}, "mesh"));
  Result<Value> mm = bad.matmul(a[0], a[1]);
  std::printf("// expected error: %s\n",
              mm ? "(none)" : mm.status().str().c_str());
  return mm ? 1 : 0;
}
