//===- IRBuilderTracedTest.cpp - Actors and traced programs --- -*- C++ -*-===//
//
// Builds the traced stage of the dialect through the C++ API: actor classes
// with state and endpoints (`state`, `endpoint`, `return`, `state_get`,
// `state_set`, the mesh collectives `all_reduce`, `all_gather`,
// `reduce_scatter`, `broadcast_from`), `actor_mesh`, and the controller
// program (`feed`, `call`, `broadcast`, `transfer`, `fetch`), then checks
// accessors, verifier diagnostics and the print/parse round trip.
//
//===----------------------------------------------------------------------===//

#include "MonarchTestUtils.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace monarch;
using namespace monarch::test;

namespace {

class TracedTest : public MonarchIRTest {
protected:
  /// The actor class used by most tests:
  ///
  ///   monarch.actor_class @Stage {
  ///     monarch.state @w : tensor<4x4xf32>
  ///     monarch.state @steps : i64
  ///     monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32>
  ///     monarch.endpoint @update(%g: tensor<4x4xf32>, %lr: f32)
  ///     monarch.endpoint @sharded(%x: tensor<4x4xf32> {dist [[gpus], []]})
  ///         -> (tensor<8x4xf32>, tensor<4x4xf32> {dist [[], []] partial sum})
  ///   }
  ActorClassOp buildStage() {
    OpBuilder::InsertionGuard guard(b);
    auto cls = ActorClassOp::create(b, loc, "Stage");
    b.setInsertionPointToStart(&cls.getBody().front());
    state = StateOp::create(b, loc, "w", tensor({4, 4}));
    StateOp::create(b, loc, "steps", b.getI64Type());

    {
      OpBuilder::InsertionGuard inner(b);
      forward = endpoint("forward", {tensor({8, 4})}, {tensor({8, 4})});
      Value x = forward.getArgument(0);
      weightGet = StateGetOp::create(b, loc, tensor({4, 4}), "w");
      Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{8, 4},
                                           b.getF32Type());
      Value y =
          linalg::MatmulOp::create(b, loc, ValueRange{x, weightGet.getResult()},
                                   ValueRange{init})
              .getResult(0);
      forwardReturn = ReturnOp::create(b, loc, ValueRange{y});
    }
    {
      OpBuilder::InsertionGuard inner(b);
      update = endpoint("update", {tensor({4, 4}), b.getF32Type()}, {});
      allReduce = AllReduceOp::create(b, loc, update.getArgument(0),
                                      strs({"gpus"}), ReductionKind::Sum);
      Value w = StateGetOp::create(b, loc, tensor({4, 4}), "w");
      Value w2 = arith::SubFOp::create(b, loc, w, allReduce.getResult());
      stateSet = StateSetOp::create(b, loc, "w", w2);
      ReturnOp::create(b, loc);
    }
    {
      OpBuilder::InsertionGuard inner(b);
      sharded = endpoint("sharded", {tensor({4, 4})},
                         {tensor({8, 4}), tensor({4, 4})});
      sharded.setArgAttr(0, MonarchDialect::getDistAttrName(),
                         dist({{"gpus"}, {}}));
      sharded.setResultAttr(1, MonarchDialect::getDistAttrName(),
                            dist({{}, {}}, ReductionKind::Sum));
      allGather = AllGatherOp::create(b, loc, tensor({8, 4}),
                                      sharded.getArgument(0), strs({"gpus"}),
                                      /*axis=*/uint64_t{0});
      reduceScatter = ReduceScatterOp::create(
          b, loc, tensor({4, 4}), allGather.getResult(), strs({"gpus"}),
          /*axis=*/uint64_t{0}, ReductionKind::Avg);
      broadcastFrom = BroadcastFromOp::create(b, loc, reduceScatter.getResult(),
                                              strs({"gpus"}),
                                              /*root=*/uint64_t{1});
      ReturnOp::create(
          b, loc, ValueRange{allGather.getResult(), broadcastFrom.getResult()});
    }
    return cls;
  }

  /// Meshes, @Stage, and actor meshes @s0 on @s0_mesh and @s1 on @s1_mesh.
  void buildActors() {
    buildPipelineMeshes();
    stage = buildStage();
    s0 = ActorMeshOp::create(b, loc, "s0", "Stage", "s0_mesh");
    s1 = ActorMeshOp::create(b, loc, "s1", "Stage", "s1_mesh");
  }

  /// A func.func @main(<in>) -> () in which the builder is left, for tests
  /// that add a single controller op.
  func::FuncOp mainFunc(ArrayRef<Type> in) {
    func::FuncOp fn = func("main", in, {});
    b.setInsertionPoint(func::ReturnOp::create(b, loc));
    return fn;
  }

  ActorClassOp stage;
  StateOp state;
  EndpointOp forward, update, sharded;
  StateGetOp weightGet;
  StateSetOp stateSet;
  ReturnOp forwardReturn;
  AllReduceOp allReduce;
  AllGatherOp allGather;
  ReduceScatterOp reduceScatter;
  BroadcastFromOp broadcastFrom;
  ActorMeshOp s0, s1;
};

//===----------------------------------------------------------------------===//
// Actor classes, state and endpoints
//===----------------------------------------------------------------------===//

TEST_F(TracedTest, ActorClassStateAndEndpoints) {
  buildActors();
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(stage.getSymName(), "Stage");
  SymbolTable classSymbols(stage);
  EXPECT_EQ(classSymbols.lookup<StateOp>("w"), state);
  auto steps = classSymbols.lookup<StateOp>("steps");
  ASSERT_TRUE(steps);
  EXPECT_EQ(steps.getType(), b.getI64Type());
  EXPECT_EQ(state.getType(), tensor({4, 4}));
  EXPECT_EQ(classSymbols.lookup<EndpointOp>("forward"), forward);
  EXPECT_EQ(classSymbols.lookup<EndpointOp>("sharded"), sharded);
  EXPECT_EQ(llvm::range_size(stage.getBody().getOps<EndpointOp>()), 3u);
  EXPECT_EQ(llvm::range_size(stage.getBody().getOps<StateOp>()), 2u);

  EXPECT_EQ(forward.getSymName(), "forward");
  EXPECT_EQ(forward.getArgumentTypes(), ArrayRef<Type>({tensor({8, 4})}));
  EXPECT_EQ(forward.getResultTypes(), ArrayRef<Type>({tensor({8, 4})}));
  EXPECT_EQ(forward.getFunctionType(),
            b.getFunctionType({tensor({8, 4})}, {tensor({8, 4})}));
  EXPECT_EQ(forward.getCallableRegion(), &forward.getBody());
  EXPECT_EQ(EndpointOp::getDefaultDialect(), "monarch");
  EXPECT_EQ(update.getNumArguments(), 2u);
  EXPECT_EQ(update.getNumResults(), 0u);
  EXPECT_EQ(update.getArgument(1).getType(), b.getF32Type());

  // Without a monarch.dist attribute, values are replicated (null dist).
  EXPECT_FALSE(forward.getArgDist(0));
  EXPECT_FALSE(forward.getResultDist(0));
  EXPECT_EQ(sharded.getArgDist(0), dist({{"gpus"}, {}}));
  EXPECT_FALSE(sharded.getResultDist(0));
  DistAttr partial = sharded.getResultDist(1);
  ASSERT_TRUE(partial);
  EXPECT_EQ(partial.getPartial(), ReductionKind::Sum);

  EXPECT_EQ(weightGet.getState(), "w");
  EXPECT_EQ(weightGet.getStateAttr(), sym("w"));
  EXPECT_EQ(weightGet.getType(), tensor({4, 4}));
  EXPECT_EQ(stateSet.getState(), "w");
  EXPECT_EQ(stateSet.getValue().getType(), tensor({4, 4}));
  EXPECT_EQ(forwardReturn.getOperands().size(), 1u);
  EXPECT_EQ(forwardReturn->getParentOp(), forward.getOperation());
  EXPECT_TRUE(forwardReturn->hasTrait<OpTrait::IsTerminator>());

  EXPECT_EQ(s0.getSymName(), "s0");
  EXPECT_EQ(s0.getActorClass(), "Stage");
  EXPECT_EQ(s0.getMesh(), "s0_mesh");
  EXPECT_EQ(s1.getMeshAttr(), sym("s1_mesh"));
  EXPECT_TRUE(roundTrips(*module));
}

TEST_F(TracedTest, MeshCollectivesInEndpoints) {
  buildActors();
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(allReduce.getReduction(), ReductionKind::Sum);
  EXPECT_EQ(allReduce.getDims(), strs({"gpus"}));
  EXPECT_EQ(allReduce.getType(), tensor({4, 4}));
  EXPECT_EQ(allReduce.getInput(), update.getArgument(0));

  EXPECT_EQ(allGather.getAxis(), 0u);
  EXPECT_EQ(allGather.getDims(), strs({"gpus"}));
  EXPECT_EQ(allGather.getInput().getType(), tensor({4, 4}));
  EXPECT_EQ(allGather.getType(), tensor({8, 4}));

  EXPECT_EQ(reduceScatter.getAxis(), 0u);
  EXPECT_EQ(reduceScatter.getReduction(), ReductionKind::Avg);
  EXPECT_EQ(reduceScatter.getType(), tensor({4, 4}));

  EXPECT_EQ(broadcastFrom.getRoot(), 1u);
  // SameOperandsAndResultType lets the builder infer the result type.
  EXPECT_EQ(broadcastFrom.getType(), tensor({4, 4}));
  EXPECT_TRUE(isPure(allReduce));

  std::string text = printOp(stage);
  EXPECT_NE(text.find("all_reduce %arg0 over [\"gpus\"] sum : "
                      "tensor<4x4xf32>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reduce_scatter %0 over [\"gpus\"] axis 0 avg : "
                      "tensor<8x4xf32> -> tensor<4x4xf32>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("broadcast_from %1 over [\"gpus\"] root 1"),
            std::string::npos)
      << text;
  EXPECT_TRUE(roundTrips(*module));
}

//===----------------------------------------------------------------------===//
// The controller program: feed, call, broadcast, transfer, fetch
//===----------------------------------------------------------------------===//

TEST_F(TracedTest, PipelineProgram) {
  buildActors();
  func::FuncOp fn =
      func("pipeline", {tensor({8, 4}), tensor({4, 4}), b.getF32Type()},
           {tensor({8, 4}), tensor({8, 4})});
  auto feed = FeedOp::create(b, loc, fn.getArgument(0), "s0_mesh");
  auto call0 =
      CallOp::create(b, loc, TypeRange{tensor({8, 4})}, nested("s0", "forward"),
                     ValueRange{feed.getResult()});
  auto transfer = TransferOp::create(b, loc, tensor({8, 4}), call0.getResult(0),
                                     "s0_mesh", "s1_mesh");
  auto call1 =
      CallOp::create(b, loc, TypeRange{tensor({8, 4})}, nested("s1", "forward"),
                     ValueRange{transfer.getResult()});
  auto grad = FeedOp::create(b, loc, fn.getArgument(1), "s1_mesh");
  auto bcast =
      BroadcastOp::create(b, loc, nested("s1", "update"),
                          ValueRange{grad.getResult(), fn.getArgument(2)});
  auto x8 = FeedOp::create(b, loc, fn.getArgument(0), "s0_mesh");
  auto callSharded =
      CallOp::create(b, loc, TypeRange{tensor({8, 4}), tensor({4, 4})},
                     nested("s0", "sharded"), ValueRange{x8.getResult()});
  auto fetch = FetchOp::create(b, loc, call1.getResult(0), "s1_mesh");
  auto fetch2 = FetchOp::create(b, loc, callSharded.getResult(0), "s0_mesh");
  func::ReturnOp::create(b, loc,
                         ValueRange{fetch.getResult(), fetch2.getResult()});
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(feed.getMesh(), "s0_mesh");
  EXPECT_EQ(feed.getType(), tensor({8, 4}));
  EXPECT_EQ(feed.getInput(), fn.getArgument(0));
  EXPECT_EQ(call0.getCallee(), nested("s0", "forward"));
  EXPECT_EQ(call0.getActorMeshName().getValue(), "s0");
  EXPECT_EQ(call0.getEndpointName().getValue(), "forward");
  EXPECT_EQ(call0.getArgs().size(), 1u);
  EXPECT_EQ(call0.getResults().size(), 1u);
  EXPECT_EQ(transfer.getFrom(), "s0_mesh");
  EXPECT_EQ(transfer.getTo(), "s1_mesh");
  EXPECT_EQ(transfer.getInput(), call0.getResult(0));
  EXPECT_EQ(bcast.getActorMeshName().getValue(), "s1");
  EXPECT_EQ(bcast.getEndpointName().getValue(), "update");
  EXPECT_EQ(bcast.getArgs().size(), 2u);
  EXPECT_EQ(bcast->getNumResults(), 0u);
  EXPECT_EQ(callSharded.getResultTypes(),
            TypeRange({tensor({8, 4}), tensor({4, 4})}));
  EXPECT_EQ(fetch.getMesh(), "s1_mesh");
  EXPECT_EQ(fetch.getType(), tensor({8, 4}));

  // Each op resolves its symbols to the ops built above.
  SymbolTableCollection tables;
  EXPECT_EQ(lookupMesh(feed, feed.getMeshAttr(), &tables).getOperation(),
            SymbolTable::lookupSymbolIn(*module, "s0_mesh"));
  EXPECT_EQ(tables.lookupNearestSymbolFrom<ActorMeshOp>(
                call1, FlatSymbolRefAttr::get(call1.getActorMeshName())),
            s1);

  std::string text = printOp(fn);
  for (StringRef expected :
       {"monarch.feed %arg0 to @s0_mesh : tensor<8x4xf32>",
        "monarch.call @s0::@forward(%0) : (tensor<8x4xf32>) -> "
        "tensor<8x4xf32>",
        "monarch.transfer %1 from @s0_mesh to @s1_mesh : tensor<8x4xf32> -> "
        "tensor<8x4xf32>",
        "monarch.broadcast @s1::@update(%4, %arg2) : tensor<4x4xf32>, f32",
        "monarch.fetch %3 from @s1_mesh : tensor<8x4xf32>"})
    EXPECT_NE(text.find(expected.str()), std::string::npos)
        << "missing: " << expected.str() << "\nin:\n"
        << text;
  EXPECT_TRUE(roundTrips(*module));
}

/// The two-stage pipeline as first written in examples/ir/pipeline.mlir.
constexpr const char *kPipelineText = R"mlir(
shard.grid @mesh_grid(shape = 1x4)
shard.grid @half_grid(shape = 1x2)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid
monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid
monarch.mesh_slice @s1_mesh of @mesh(hosts = 0 to 1, gpus = 2 to 4) grid @half_grid

monarch.actor_class @Stage {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %w = monarch.state_get @w : tensor<4x4xf32>
    %init = tensor.empty() : tensor<8x4xf32>
    %zero = arith.constant 0.0 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
    monarch.return %y : tensor<8x4xf32>
  }
  monarch.endpoint @update(%g: tensor<4x4xf32>, %lr: f32) {
    %g2 = monarch.all_reduce %g over ["gpus"] sum : tensor<4x4xf32>
    %w = monarch.state_get @w : tensor<4x4xf32>
    monarch.state_set @w = %w : tensor<4x4xf32>
    monarch.return
  }
}
monarch.actor_mesh @s0 = @Stage on @s0_mesh
monarch.actor_mesh @s1 = @Stage on @s1_mesh

func.func @pipeline(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %x = monarch.feed %arg0 to @s0_mesh : tensor<8x4xf32>
  %h = monarch.call @s0::@forward(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %h1 = monarch.transfer %h from @s0_mesh to @s1_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
  %y = monarch.call @s1::@forward(%h1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = monarch.fetch %y from @s1_mesh : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
)mlir";

/// Builds kPipelineText op by op and checks that it prints exactly like the
/// parsed text.
TEST_F(TracedTest, BuildsTheExamplePipeline) {
  buildPipelineMeshes();
  {
    OpBuilder::InsertionGuard guard(b);
    auto cls = ActorClassOp::create(b, loc, "Stage");
    b.setInsertionPointToStart(&cls.getBody().front());
    StateOp::create(b, loc, "w", tensor({4, 4}));
    {
      OpBuilder::InsertionGuard inner(b);
      EndpointOp ep = endpoint("forward", {tensor({8, 4})}, {tensor({8, 4})});
      Value w = StateGetOp::create(b, loc, tensor({4, 4}), "w");
      Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{8, 4},
                                           b.getF32Type());
      Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
      Value acc =
          linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{init})
              .getResult(0);
      Value y = linalg::MatmulOp::create(
                    b, loc, ValueRange{ep.getArgument(0), w}, ValueRange{acc})
                    .getResult(0);
      ReturnOp::create(b, loc, ValueRange{y});
    }
    {
      OpBuilder::InsertionGuard inner(b);
      EndpointOp ep = endpoint("update", {tensor({4, 4}), b.getF32Type()}, {});
      AllReduceOp::create(b, loc, ep.getArgument(0), strs({"gpus"}),
                          ReductionKind::Sum);
      Value w = StateGetOp::create(b, loc, tensor({4, 4}), "w");
      StateSetOp::create(b, loc, "w", w);
      ReturnOp::create(b, loc);
    }
  }
  ActorMeshOp::create(b, loc, "s0", "Stage", "s0_mesh");
  ActorMeshOp::create(b, loc, "s1", "Stage", "s1_mesh");
  func::FuncOp fn = func("pipeline", {tensor({8, 4})}, {tensor({8, 4})});
  Value x = FeedOp::create(b, loc, fn.getArgument(0), "s0_mesh");
  Value h = CallOp::create(b, loc, TypeRange{tensor({8, 4})},
                           nested("s0", "forward"), ValueRange{x})
                .getResult(0);
  Value h1 =
      TransferOp::create(b, loc, tensor({8, 4}), h, "s0_mesh", "s1_mesh");
  Value y = CallOp::create(b, loc, TypeRange{tensor({8, 4})},
                           nested("s1", "forward"), ValueRange{h1})
                .getResult(0);
  Value r = FetchOp::create(b, loc, y, "s1_mesh");
  func::ReturnOp::create(b, loc, ValueRange{r});
  ASSERT_TRUE(verifies(*module));

  DiagnosticCapture diags(ctx);
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(kPipelineText, &ctx);
  ASSERT_TRUE(parsed) << diags.joined();
  ASSERT_TRUE(verifies(*parsed));
  EXPECT_EQ(printOp(*module), printOp(*parsed));
  EXPECT_TRUE(roundTrips(*module));
}

/// The example shipped in the repository parses, verifies and round-trips,
/// and its calls resolve through the C++ accessors.
TEST_F(TracedTest, ExamplePipelineFileVerifies) {
  std::string path = MONARCH_SOURCE_DIR "/examples/ir/pipeline.mlir";
  auto file = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(file)) << "cannot read " << path;
  DiagnosticCapture diags(ctx);
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>((*file)->getBuffer(), &ctx);
  ASSERT_TRUE(parsed) << diags.joined();
  ASSERT_TRUE(verifies(*parsed));
  EXPECT_TRUE(roundTrips(*parsed));

  SymbolTableCollection tables;
  int calls = 0;
  parsed->walk([&](CallOp call) {
    ++calls;
    auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
        call, FlatSymbolRefAttr::get(call.getActorMeshName()));
    ASSERT_TRUE(actorMesh);
    MeshOpInterface mesh = lookupMesh(actorMesh, actorMesh.getMeshAttr());
    ASSERT_TRUE(mesh);
    MeshOpInterface whole = lookupMesh(*parsed, sym("mesh"), &tables);
    ASSERT_TRUE(whole);
    EXPECT_TRUE(isSameOrSliceOf(mesh, whole, tables));
  });
  EXPECT_GE(calls, 2);
}

//===----------------------------------------------------------------------===//
// Invalid actors and endpoints
//===----------------------------------------------------------------------===//

TEST_F(TracedTest, StateAccessMustMatchTheClass) {
  buildActors();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forwardReturn);
    StateGetOp::create(b, loc, tensor({8, 8}), "w");
    EXPECT_TRUE(failsToVerify(*module, "type 'tensor<8x8xf32>' does not match "
                                       "state @w of type 'tensor<4x4xf32>'"));
    forwardReturn->getPrevNode()->erase();
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forwardReturn);
    StateGetOp::create(b, loc, tensor({4, 4}), "nope");
    EXPECT_TRUE(
        failsToVerify(*module, "actor class @Stage has no state @nope"));
    forwardReturn->getPrevNode()->erase();
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forwardReturn);
    StateSetOp::create(b, loc, "w", forward.getArgument(0));
    EXPECT_TRUE(failsToVerify(*module, "type 'tensor<8x4xf32>' does not match "
                                       "state @w of type 'tensor<4x4xf32>'"));
    forwardReturn->getPrevNode()->erase();
  }
  {
    // state_get outside an endpoint.
    OpBuilder::InsertionGuard guard(b);
    mainFunc({});
    StateGetOp::create(b, loc, tensor({4, 4}), "w");
    EXPECT_TRUE(failsToVerify(*module, "must be inside a monarch.endpoint"));
  }
}

TEST_F(TracedTest, InvalidActorClassContents) {
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    EXPECT_TRUE(failsToVerify(
        *m, "is not allowed in a monarch.actor_class; only monarch.state and "
            "monarch.endpoint are"));
  }
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    StateOp::create(b, loc, "w", tensor({ShapedType::kDynamic, 4}));
    EXPECT_TRUE(failsToVerify(
        *m, "state must have a static shape, got 'tensor<?x4xf32>'"));
  }
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    StateOp::create(b, loc, "w", b.getIndexType());
    EXPECT_TRUE(failsToVerify(*m, "state must be a statically shaped tensor "
                                  "or a scalar, got 'index'"));
  }
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    EndpointOp::create(b, loc, "e", b.getFunctionType({}, {}));
    EXPECT_TRUE(failsToVerify(*m, "must have a body"));
  }
  {
    // state outside an actor class.
    auto m = newModule();
    StateOp::create(b, loc, "w", tensor({4}));
    EXPECT_TRUE(failsToVerify(*m, "expects parent op 'monarch.actor_class'"));
  }
}

TEST_F(TracedTest, InvalidReturns) {
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    endpoint("e", {tensor({4})}, {tensor({4})});
    ReturnOp::create(b, loc);
    EXPECT_TRUE(
        failsToVerify(*m, "returns 0 values but endpoint @e declares 1"));
  }
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    EndpointOp ep = endpoint("e", {tensor({4}), tensor({8})}, {tensor({4})});
    ReturnOp::create(b, loc, ValueRange{ep.getArgument(1)});
    EXPECT_TRUE(failsToVerify(*m, "value #0 has type 'tensor<8xf32>' but "
                                  "endpoint @e returns 'tensor<4xf32>'"));
  }
}

// The attribute name in these diagnostics is streamed as a StringAttr and
// so prints as '"monarch.dist"' (quotes inside quotes; see the report): the
// checks match the name and the rest of the message separately.
TEST_F(TracedTest, InvalidDistAttributes) {
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    EndpointOp ep = endpoint("e", {tensor({4, 4})}, {});
    ReturnOp::create(b, loc);
    ep.setArgAttr(0, MonarchDialect::getDistAttrName(), dist({{"gpus"}}));
    EXPECT_TRUE(
        failsToVerify(*m, {"monarch.dist", "' on argument #0 has 1 entries but "
                                           "the tensor has rank 2"}));
  }
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    EndpointOp ep = endpoint("e", {}, {b.getF32Type()});
    Value c = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    ReturnOp::create(b, loc, ValueRange{c});
    ep.setResultAttr(0, MonarchDialect::getDistAttrName(), dist({}));
    EXPECT_TRUE(failsToVerify(
        *m, {"monarch.dist",
             "' on result #0 requires a ranked tensor, got 'f32'"}));
  }
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    EndpointOp ep = endpoint("e", {tensor({4})}, {});
    ReturnOp::create(b, loc);
    ep.setArgAttr(0, MonarchDialect::getDistAttrName(), b.getUnitAttr());
    EXPECT_TRUE(failsToVerify(
        *m, {"monarch.dist", "' must be a #monarch.dist attribute"}));
  }
  {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    EndpointOp ep = endpoint("e", {tensor({4})}, {});
    ReturnOp::create(b, loc);
    ep.setArgAttr(0, "monarch.layout", b.getUnitAttr());
    EXPECT_TRUE(failsToVerify(
        *m, {"unknown monarch argument attribute '", "monarch.layout"}));
  }
  {
    // monarch.dist is not an op attribute.
    auto m = newModule();
    func::FuncOp fn = func("f", {}, {});
    func::ReturnOp::create(b, loc);
    fn->setAttr(MonarchDialect::getDistAttrName(), dist({}));
    EXPECT_TRUE(failsToVerify(*m, {"monarch.dist",
                                   "' is only valid on endpoint arguments and "
                                   "results"}));
    fn->removeAttr(MonarchDialect::getDistAttrName());
    fn->setAttr("monarch.other", b.getUnitAttr());
    EXPECT_TRUE(
        failsToVerify(*m, {"unknown monarch attribute '", "monarch.other"}));
  }
}

TEST_F(TracedTest, InvalidMeshCollectives) {
  auto inEndpoint = [&](ArrayRef<Type> in) {
    auto m = newModule();
    auto cls = ActorClassOp::create(b, loc, "C");
    b.setInsertionPointToStart(&cls.getBody().front());
    EndpointOp ep = endpoint("e", in, {});
    b.setInsertionPoint(ReturnOp::create(b, loc));
    return std::make_pair(std::move(m), ep);
  };
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    AllReduceOp::create(b, loc, ep.getArgument(0), strs({}),
                        ReductionKind::Sum);
    EXPECT_TRUE(failsToVerify(*m, "must name at least one mesh dimension"));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    AllReduceOp::create(b, loc, ep.getArgument(0), strs({"gpus", "gpus"}),
                        ReductionKind::Sum);
    EXPECT_TRUE(failsToVerify(*m, "duplicate mesh dimension \"gpus\""));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    AllGatherOp::create(b, loc, tensor({8, 4}, b.getF16Type()),
                        ep.getArgument(0), strs({"gpus"}), uint64_t{0});
    EXPECT_TRUE(failsToVerify(*m, "element types differ: 'f32' vs 'f16'"));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    AllGatherOp::create(b, loc, tensor({8, 4}), ep.getArgument(0),
                        strs({"gpus"}), uint64_t{2});
    EXPECT_TRUE(failsToVerify(*m, "axis 2 is out of range for rank 2"));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    AllGatherOp::create(b, loc, tensor({8, 8}), ep.getArgument(0),
                        strs({"gpus"}), uint64_t{0});
    EXPECT_TRUE(failsToVerify(
        *m, "dimension 1 must be equal on both sides, got 4 and 8"));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    AllGatherOp::create(b, loc, tensor({6, 4}), ep.getArgument(0),
                        strs({"gpus"}), uint64_t{0});
    EXPECT_TRUE(failsToVerify(*m, "axis 0 of size 6 is not a multiple of 4"));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    ReduceScatterOp::create(b, loc, tensor({4}), ep.getArgument(0),
                            strs({"gpus"}), uint64_t{0}, ReductionKind::Sum);
    EXPECT_TRUE(failsToVerify(*m, "operand and result ranks differ"));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    ReduceScatterOp::create(b, loc, tensor({3, 4}), ep.getArgument(0),
                            strs({"gpus"}), uint64_t{0}, ReductionKind::Sum);
    EXPECT_TRUE(failsToVerify(*m, "axis 0 of size 4 is not a multiple of 3"));
  }
  {
    auto [m, ep] = inEndpoint({tensor({4, 4})});
    BroadcastFromOp::create(b, loc, ep.getArgument(0), strs({}), uint64_t{0});
    EXPECT_TRUE(failsToVerify(*m, "must name at least one mesh dimension"));
  }
  {
    // Mesh collectives name actor mesh dimensions: only inside endpoints.
    auto m = newModule();
    func::FuncOp fn = func("f", {tensor({4})}, {});
    AllReduceOp::create(b, loc, fn.getArgument(0), strs({"gpus"}),
                        ReductionKind::Sum);
    func::ReturnOp::create(b, loc);
    EXPECT_TRUE(failsToVerify(*m, "names actor mesh dimensions and must be "
                                  "inside a monarch.endpoint"));
  }
}

TEST_F(TracedTest, CollectivesAreCheckedWhereTheClassIsSpawned) {
  {
    // @Stage's collectives name "gpus"; @flat has only "x".
    buildActors();
    grid("flat_grid", {2});
    procMesh("flat", {"x"}, {2}, "flat_grid");
    ActorMeshOp::create(b, loc, "bad", "Stage", "flat");
    EXPECT_TRUE(failsToVerify(
        *module, "names mesh dimension \"gpus\" but actor mesh @bad is "
                 "spawned on @flat which has dimensions [x]"));
  }
  {
    // On the whole mesh "gpus" has 4 ranks, but @sharded gathers 4 -> 8.
    module = newModule();
    buildActors();
    ActorMeshOp::create(b, loc, "wide", "Stage", "mesh");
    EXPECT_TRUE(failsToVerify(*module,
                              {"all_gather", "axis 0", "group size", "@wide"}));
  }
  {
    // broadcast_from root 1 does not exist in a group of one rank.
    module = newModule();
    buildActors();
    grid("one_grid", {1, 1});
    slice("one", "mesh", {"hosts", "gpus"}, {0, 3}, {1, 4}, "one_grid");
    sharded.getBody().front().clear();
    b.setInsertionPointToStart(&sharded.getBody().front());
    broadcastFrom = BroadcastFromOp::create(b, loc, sharded.getArgument(0),
                                            strs({"gpus"}), uint64_t{1});
    ReturnOp::create(
        b, loc, ValueRange{sharded.getArgument(0), sharded.getArgument(0)});
    sharded.setType(
        b.getFunctionType({tensor({4, 4})}, {tensor({4, 4}), tensor({4, 4})}));
    b.setInsertionPointToEnd(module->getBody());
    ASSERT_TRUE(verifies(*module));
    ActorMeshOp::create(b, loc, "tiny", "Stage", "one");
    EXPECT_TRUE(failsToVerify(
        *module, "root 1 is outside the 1 ranks of the group on @tiny"));
  }
  {
    module = newModule();
    buildActors();
    ActorMeshOp::create(b, loc, "orphan", "NoClass", "s0_mesh");
    EXPECT_TRUE(failsToVerify(
        *module, {"NoClass", "does not name a monarch.actor_class"}));
  }
  {
    module = newModule();
    buildActors();
    ActorMeshOp::create(b, loc, "lost", "Stage", "nowhere");
    EXPECT_TRUE(failsToVerify(*module, {"nowhere", "does not name a "
                                                   "monarch.proc_mesh or "
                                                   "monarch.mesh_slice"}));
  }
}

//===----------------------------------------------------------------------===//
// Invalid calls, transfers, feeds and fetches
//===----------------------------------------------------------------------===//

TEST_F(TracedTest, CallArgumentsMustMatchTheEndpoint) {
  buildActors();
  func::FuncOp fn = mainFunc(
      {tensor({4, 4}), tensor({8, 4}), tensor({7, 4}), b.getF32Type()});
  Value t44 = fn.getArgument(0), t84 = fn.getArgument(1),
        t74 = fn.getArgument(2), lr = fn.getArgument(3);

  expectRejected(
      CallOp::create(b, loc, TypeRange{tensor({8, 4})}, nested("s0", "forward"),
                     ValueRange{t44}),
      "argument #0 has type 'tensor<4x4xf32>' but endpoint @forward expects "
      "'tensor<8x4xf32>'");
  expectRejected(CallOp::create(b, loc, TypeRange{tensor({8, 4})},
                                nested("s0", "forward"), ValueRange{t84, t84}),
                 "passes 2 arguments but endpoint @forward takes 1");
  expectRejected(CallOp::create(b, loc, TypeRange{}, nested("s0", "forward"),
                                ValueRange{t84}),
                 "expects 0 results but endpoint @forward returns 1");
  expectRejected(
      CallOp::create(b, loc, TypeRange{tensor({4, 4})}, nested("s0", "forward"),
                     ValueRange{t84}),
      "result #0 has type 'tensor<4x4xf32>' but endpoint @forward expects "
      "'tensor<8x4xf32>'");
  expectRejected(
      CallOp::create(b, loc, TypeRange{}, nested("s0", "nope"), ValueRange{}),
      "actor class @Stage has no endpoint @nope");
  expectRejected(CallOp::create(b, loc, TypeRange{}, nested("s9", "forward"),
                                ValueRange{}),
                 {"s9", "does not name a monarch.actor_mesh"});
  expectRejected(CallOp::create(b, loc, TypeRange{}, sym("s0"), ValueRange{}),
                 "callee @s0 must have the form @actor_mesh::@endpoint");
  // The sharded argument of @sharded is 4x4 per rank: 8x4 globally on the
  // two "gpus" of @s0_mesh.
  expectRejected(
      CallOp::create(b, loc, TypeRange{tensor({8, 4}), tensor({4, 4})},
                     nested("s0", "sharded"), ValueRange{t44}),
      "argument #0 of type 'tensor<4x4xf32>' is split by "
      "#monarch.dist<[[\"gpus\"], []]> into per-rank 'tensor<2x4xf32>' but "
      "endpoint @sharded expects 'tensor<4x4xf32>'");
  expectRejected(
      CallOp::create(b, loc, TypeRange{tensor({8, 4}), tensor({4, 4})},
                     nested("s0", "sharded"), ValueRange{t74}),
      "argument #0: tensor dimension 0 of size 7 is not divisible by 2 ranks");
  expectRejected(
      CallOp::create(b, loc, TypeRange{tensor({8, 4}), tensor({4, 4})},
                     nested("s0", "sharded"), ValueRange{lr}),
      "argument #0 of type 'f32' cannot be distributed to endpoint @sharded "
      "type 'tensor<4x4xf32>'");
  expectRejected(
      BroadcastOp::create(b, loc, nested("s1", "update"), ValueRange{t84, lr}),
      "argument #0 has type 'tensor<8x4xf32>' but endpoint @update expects "
      "'tensor<4x4xf32>'");
  expectRejected(
      BroadcastOp::create(b, loc, nested("s1", "update"), ValueRange{t44}),
      "passes 1 arguments but endpoint @update takes 2");

  // A valid sharded call: 8x4 global splits into 4x4 per rank.
  CallOp ok = CallOp::create(b, loc, TypeRange{tensor({8, 4}), tensor({4, 4})},
                             nested("s0", "sharded"), ValueRange{t84});
  EXPECT_TRUE(verifies(*module));
  EXPECT_EQ(ok.getEndpointName().getValue(), "sharded");
}

TEST_F(TracedTest, PartialArgumentsAreRejected) {
  buildActors();
  sharded.setArgAttr(0, MonarchDialect::getDistAttrName(),
                     dist({{"gpus"}, {}}, ReductionKind::Sum));
  ASSERT_TRUE(verifies(*module));
  func::FuncOp fn = mainFunc({tensor({8, 4})});
  CallOp::create(b, loc, TypeRange{tensor({8, 4}), tensor({4, 4})},
                 nested("s0", "sharded"), ValueRange{fn.getArgument(0)});
  EXPECT_TRUE(failsToVerify(
      *module, "argument #0 of endpoint @sharded cannot be partial"));
}

TEST_F(TracedTest, InvalidTransfersFeedsAndFetches) {
  buildActors();
  func::FuncOp fn = mainFunc({tensor({8, 4})});
  Value x = fn.getArgument(0);
  expectRejected(
      TransferOp::create(b, loc, tensor({8, 4}), x, "s0_mesh", "s0_mesh"),
      "transfers from @s0_mesh to itself; use shard.shard to reshard inside "
      "a mesh");
  expectRejected(
      TransferOp::create(b, loc, tensor({4, 8}), x, "s0_mesh", "s1_mesh"),
      "shape changes from 'tensor<8x4xf32>' to 'tensor<4x8xf32>'; both ends "
      "must hold the same tensor");
  expectRejected(
      TransferOp::create(b, loc, tensor({8, 4}, b.getF16Type()), x, "s0_mesh",
                         "s1_mesh"),
      "element type changes from 'f32' to 'f16'; transfers move bytes and "
      "cannot cast");
  expectRejected(
      TransferOp::create(b, loc, tensor({8, 4}), x, "s0_mesh", "Stage"),
      {"Stage", "does not name a monarch.proc_mesh or monarch.mesh_slice"});
  expectRejected(
      FeedOp::create(b, loc, x, "mesh_grid"),
      {"mesh_grid", "does not name a monarch.proc_mesh or monarch.mesh_slice"});
  expectRejected(
      FetchOp::create(b, loc, x, "s0"),
      {"s0", "does not name a monarch.proc_mesh or monarch.mesh_slice"});
  // feed and fetch keep the type (SameOperandsAndResultType).
  expectRejected(FeedOp::create(b, loc, tensor({4, 8}), x, "s0_mesh"),
                 "requires the same type for all operands and results");
}

} // namespace
