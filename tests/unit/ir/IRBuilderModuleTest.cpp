//===- IRBuilderModuleTest.cpp - A whole module --------------- -*- C++ -*-===//
//
// Builds one small module that goes through every stage of the dialect
// (meshes, actors, the traced program, control messages and channels, and a
// per-rank plan), verifies it, checks that it uses every registered monarch
// op, walks it through the interfaces, and round-trips it through the
// printer and the parser.
//
//===----------------------------------------------------------------------===//

#include "MonarchTestUtils.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace monarch;
using namespace monarch::test;

namespace {

class WholeModuleTest : public MonarchIRTest {
protected:
  void buildMeshesAndActors() {
    buildPipelineMeshes();
    // Hosts of @mesh: one per "hosts" coordinate.
    TopologyOp::create(b, loc, "mesh", strs({"hosts"}), LinkKind::Nvlink,
                       llvm::APFloat(450.0), llvm::APFloat(2.0),
                       LinkKind::Network, llvm::APFloat(25.0),
                       llvm::APFloat(10.0));
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
      Value y = linalg::MatmulOp::create(
                    b, loc, ValueRange{ep.getArgument(0), w}, ValueRange{init})
                    .getResult(0);
      ReturnOp::create(b, loc, ValueRange{y});
    }
    {
      OpBuilder::InsertionGuard inner(b);
      EndpointOp ep = endpoint("update", {tensor({4, 4}), b.getF32Type()}, {});
      Value g = AllReduceOp::create(b, loc, ep.getArgument(0), strs({"gpus"}),
                                    ReductionKind::Sum);
      Value w = StateGetOp::create(b, loc, tensor({4, 4}), "w");
      StateSetOp::create(b, loc, "w", arith::SubFOp::create(b, loc, w, g));
      ReturnOp::create(b, loc);
    }
    {
      OpBuilder::InsertionGuard inner(b);
      EndpointOp ep = endpoint("sharded", {tensor({4, 4})}, {tensor({4, 4})});
      ep.setArgAttr(0, MonarchDialect::getDistAttrName(), dist({{"gpus"}, {}}));
      ep.setResultAttr(0, MonarchDialect::getDistAttrName(),
                       dist({{"gpus"}, {}}));
      Value full =
          AllGatherOp::create(b, loc, tensor({8, 4}), ep.getArgument(0),
                              strs({"gpus"}), uint64_t{0});
      Value part =
          ReduceScatterOp::create(b, loc, tensor({4, 4}), full, strs({"gpus"}),
                                  uint64_t{0}, ReductionKind::Sum);
      Value moved =
          AllToAllOp::create(b, loc, tensor({8, 2}), part, strs({"gpus"}),
                             uint64_t{1}, uint64_t{0});
      EXPECT_EQ(cast<AllToAllOp>(moved.getDefiningOp()).getSplit(), 1u);
      Value same =
          BroadcastFromOp::create(b, loc, part, strs({"gpus"}), uint64_t{0});
      Value index = ProcessIndexOp::create(b, loc, strs({"gpus"}));
      EXPECT_TRUE(index.getType().isIndex());
      DebugPrintOp::create(b, loc, "part {0} at {1}", ValueRange{part, index},
                           FlatSymbolRefAttr());
      ReturnOp::create(b, loc, ValueRange{same});
    }
  }

  /// The whole program; returns the module.
  void buildEverything() {
    buildMeshesAndActors();
    ActorMeshOp::create(b, loc, "s0", "Stage", "s0_mesh");
    ActorMeshOp::create(b, loc, "s1", "Stage", "s1_mesh");

    // Traced controller program.
    {
      OpBuilder::InsertionGuard guard(b);
      func::FuncOp fn =
          func("pipeline", {tensor({8, 4}), tensor({4, 4}), b.getF32Type()},
               {tensor({8, 4})});
      Value x = FeedOp::create(b, loc, fn.getArgument(0), "s0_mesh");
      Value h = CallOp::create(b, loc, TypeRange{tensor({8, 4})},
                               nested("s0", "forward"), ValueRange{x})
                    .getResult(0);
      Value hs = CallOp::create(b, loc, TypeRange{tensor({8, 4})},
                                nested("s0", "sharded"), ValueRange{h})
                     .getResult(0);
      Value h1 =
          TransferOp::create(b, loc, tensor({8, 4}), hs, "s0_mesh", "s1_mesh");
      Value y = CallOp::create(b, loc, TypeRange{tensor({8, 4})},
                               nested("s1", "forward"), ValueRange{h1})
                    .getResult(0);
      Value g = FeedOp::create(b, loc, fn.getArgument(1), "s1_mesh");
      BroadcastOp::create(b, loc, nested("s1", "update"),
                          ValueRange{g, fn.getArgument(2)});
      Value r = FetchOp::create(b, loc, y, "s1_mesh");
      func::ReturnOp::create(b, loc, ValueRange{r});
    }

    // Split stage: one control message per mesh, data on channels.
    ChannelOp::create(b, loc, "c0", "s0_mesh", "s1_mesh", tensor({8, 4}));
    {
      // A worker program of @mesh, fed and fetched by the controller.
      OpBuilder::InsertionGuard guard(b);
      func::FuncOp worker = func("worker", {tensor({8, 4})}, {tensor({8, 4})});
      worker->setAttr(MonarchDialect::getWorkerForAttrName(),
                      FlatSymbolRefAttr::get(b.getContext(), "mesh"));
      func::ReturnOp::create(b, loc, ValueRange{worker.getArgument(0)});
    }
    {
      OpBuilder::InsertionGuard guard(b);
      func::FuncOp fn = func("drive", {tensor({8, 4})}, {tensor({8, 4})});
      Value t = ControlMsgOp::create(
          b, loc, "mesh",
          b.getArrayAttr({FlatSymbolRefAttr::get(b.getContext(), "worker")}),
          ValueRange{});
      FeedInputOp::create(b, loc, fn.getArgument(0), "worker", uint64_t{0});
      Value out =
          FetchOutputOp::create(b, loc, tensor({8, 4}), "worker", uint64_t{0});
      AwaitOp::create(b, loc, ValueRange{t});
      func::ReturnOp::create(b, loc, ValueRange{out});
    }
    {
      OpBuilder::InsertionGuard guard(b);
      func::FuncOp fn = func("split_step", {b.getF32Type(), tensor({8, 4})},
                             {tensor({8, 4})});
      Value t0 = ControlMsgOp::create(
          b, loc, "mesh",
          b.getArrayAttr({nested("s0", "forward"), nested("s1", "forward")}),
          ValueRange{});
      Value t1 = ControlMsgOp::create(b, loc, "s1_mesh",
                                      b.getArrayAttr({nested("s1", "update")}),
                                      ValueRange{fn.getArgument(0)});
      ChannelSendOp::create(b, loc, "c0", fn.getArgument(1));
      Value v = ChannelRecvOp::create(b, loc, tensor({8, 4}), "c0");
      AwaitOp::create(b, loc, ValueRange{t0, t1});
      func::ReturnOp::create(b, loc, ValueRange{v});
    }

    // Planned stage: a kernel, communicators and a two-rank plan.
    {
      OpBuilder::InsertionGuard guard(b);
      func("k0", {tensor({8, 4}), tensor({4, 4}), tensor({8, 4})}, {});
      func::ReturnOp::create(b, loc);
    }
    CommunicatorOp::create(b, loc, "world", "mesh",
                           ArrayRef<int64_t>{0, 1, 2, 3}, Backend::Nccl);
    CommunicatorOp::create(b, loc, "pp", "mesh", ArrayRef<int64_t>{1, 2},
                           Backend::Gloo);
    auto plan = PlanOp::create(b, loc, "step", "mesh");
    OpBuilder::InsertionGuard guard(b);
    auto bufs = [&](ArrayRef<BufferAttr> list) {
      return b.getArrayAttr(SmallVector<Attribute>(list.begin(), list.end()));
    };
    BufferAttr x = buf(0, {8, 4}), w = buf(128, {4, 4}), y = buf(192, {8, 4});
    for (int64_t rank : {0, 1, 2, 3}) {
      b.setInsertionPointToEnd(&plan.getBody().front());
      auto prog = RankProgramOp::create(b, loc, rank, 320);
      b.setInsertionPointToEnd(&prog.getBody().front());
      StateBufferOp::create(b, loc, nested(rank < 2 ? "s0" : "s1", "w"), w);
      SmallVector<Value> events;
      if (rank == 0)
        FeedBufferOp::create(b, loc, uint64_t{0}, x);
      if (rank == 2) {
        auto recv = RecvOp::create(b, loc, x, uint64_t{1}, "pp", uint64_t{1},
                                   b.getI64IntegerAttr(0), LinkKindAttr());
        WaitOp::create(b, loc, ValueRange{recv});
      }
      auto launch =
          LaunchOp::create(b, loc, "k0", bufs({x, w}), bufs({y}), uint64_t{0});
      WaitOp::create(b, loc, ValueRange{launch});
      if (rank == 1)
        events.push_back(SendOp::create(b, loc, y, uint64_t{2}, "pp",
                                        uint64_t{1}, b.getI64IntegerAttr(0),
                                        LinkKindAttr()));
      events.push_back(CollectiveOp::create(
          b, loc, CollectiveKind::AllReduce,
          ReductionKindAttr::get(&ctx, ReductionKind::Avg), w, w, "world",
          IntegerAttr(), uint64_t{1}, IntegerAttr(), LinkKindAttr()));
      WaitOp::create(b, loc, events);
      if (rank == 3)
        FetchBufferOp::create(b, loc, uint64_t{0}, y);
      PrintBuffersOp::create(b, loc, "y {0}", bufs({y}));
    }
    // A class of ranks: rank 1 runs rank 0's program on its own
    // communicator (monarch.rank_member).
    b.setInsertionPointAfter(plan);
    auto classPlan = PlanOp::create(b, loc, "classes", "mesh");
    b.setInsertionPointToEnd(&classPlan.getBody().front());
    auto first = RankProgramOp::create(b, loc, 0, 64);
    RankMemberOp::create(
        b, loc, 3, 0, b.getDenseI64ArrayAttr({}),
        b.getArrayAttr({FlatSymbolRefAttr::get(&ctx, "world")}),
        b.getArrayAttr({}));
    b.setInsertionPointToEnd(&first.getBody().front());
    Value reduce =
        CollectiveOp::create(b, loc, CollectiveKind::AllReduce,
                             ReductionKindAttr::get(&ctx, ReductionKind::Sum),
                             buf(0, {4}), buf(0, {4}), "world", IntegerAttr(),
                             uint64_t{1}, IntegerAttr(), LinkKindAttr());
    WaitOp::create(b, loc, ValueRange{reduce});
  }
};

TEST_F(WholeModuleTest, VerifiesAndRoundTrips) {
  buildEverything();
  ASSERT_TRUE(verifies(*module));
  EXPECT_TRUE(roundTrips(*module));

  // The module still verifies after a round trip through the generic form.
  std::string generic;
  {
    llvm::raw_string_ostream os(generic);
    module->print(os, OpPrintingFlags().printGenericOpForm());
  }
  DiagnosticCapture diags(ctx);
  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(generic, &ctx);
  ASSERT_TRUE(reparsed) << diags.joined();
  EXPECT_TRUE(verifies(*reparsed));
  EXPECT_EQ(printOp(*reparsed), printOp(*module));
}

TEST_F(WholeModuleTest, UsesEveryRegisteredMonarchOp) {
  buildEverything();
  ASSERT_TRUE(verifies(*module));
  llvm::StringSet<> used;
  module->walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "monarch")
      used.insert(op->getName().getStringRef());
  });
  size_t registered = 0;
  for (RegisteredOperationName name : ctx.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "monarch")
      continue;
    ++registered;
    EXPECT_TRUE(used.contains(name.getStringRef()))
        << name.getStringRef().str() << " is not built by this test";
  }
  EXPECT_EQ(registered, used.size());
  EXPECT_EQ(registered, 42u);
}

TEST_F(WholeModuleTest, InterfacesAndSymbolsOfTheWholeModule) {
  buildEverything();
  ASSERT_TRUE(verifies(*module));
  SymbolTableCollection tables;

  // Every mesh-user resolves its mesh, and every mesh is the proc mesh or a
  // slice of it.
  MeshOpInterface mesh = lookupMesh(*module, sym("mesh"), &tables);
  ASSERT_TRUE(mesh);
  int meshes = 0;
  module->walk([&](MeshOpInterface m) {
    ++meshes;
    EXPECT_TRUE(isSameOrSliceOf(m, mesh, tables));
    EXPECT_TRUE(
        tables.lookupNearestSymbolFrom<shard::GridOp>(*module, m.getGridRef()));
  });
  EXPECT_EQ(meshes, 3);

  // Actor meshes of the calls live on the meshes their feeds name.
  module->walk([&](CallOp call) {
    auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
        call, FlatSymbolRefAttr::get(call.getActorMeshName()));
    ASSERT_TRUE(actorMesh);
    auto cls = tables.lookupNearestSymbolFrom<ActorClassOp>(
        actorMesh, actorMesh.getActorClassAttr());
    ASSERT_TRUE(cls);
    auto ep = tables.lookupSymbolIn<EndpointOp>(cls, call.getEndpointName());
    ASSERT_TRUE(ep);
    EXPECT_EQ(ep.getNumResults(), call.getNumResults());
  });

  // Every plan buffer fits its rank's arena; every program's communicators
  // contain the rank.
  module->walk([&](RankProgramOp prog) {
    for (Operation &op : prog.getBody().front()) {
      for (NamedAttribute attr : op.getAttrs()) {
        if (auto buffer = dyn_cast<BufferAttr>(attr.getValue())) {
          EXPECT_LE(static_cast<uint64_t>(buffer.getOffset() +
                                          buffer.getSizeInBytes()),
                    prog.getArena());
        }
      }
      if (auto coll = dyn_cast<CollectiveOp>(op)) {
        auto comm = tables.lookupNearestSymbolFrom<CommunicatorOp>(
            coll, coll.getCommAttr());
        ASSERT_TRUE(comm);
        EXPECT_GE(comm.getCommRank(prog.getRank()), 0);
      }
    }
  });
}

} // namespace
