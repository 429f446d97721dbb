//===- IRBuilderPlanTest.cpp - Per-rank plans ----------------- -*- C++ -*-===//
//
// Builds the planned stage of the dialect through the C++ API:
// `communicator`, `plan`, `rank_program` and the plan instructions `launch`,
// `send`, `recv`, `collective`, `wait`, `feed_buffer`, `fetch_buffer`,
// `state_buffer` over `#monarch.buf` arena buffers.
//
//===----------------------------------------------------------------------===//

#include "MonarchTestUtils.h"

using namespace mlir;
using namespace monarch;
using namespace monarch::test;

namespace {

class PlanTest : public MonarchIRTest {
protected:
  /// @mesh (hosts = 1, gpus = 4); @Stage with state @w : tensor<4x4xf32>
  /// spawned as @s0 on @mesh; kernel @mlp_k0(tensor<2x4xf32>,
  /// tensor<4x4xf32>, tensor<2x4xf32>); communicators @world (ranks 0-3,
  /// nccl) and @pp (ranks [2, 1], gloo); a plan @step on @mesh with an
  /// empty program for each of the 4 ranks.
  void SetUp() override {
    grid("mesh_grid", {1, 4});
    procMesh("mesh", {"hosts", "gpus"}, {1, 4}, "mesh_grid");
    {
      OpBuilder::InsertionGuard guard(b);
      auto cls = ActorClassOp::create(b, loc, "Stage");
      b.setInsertionPointToStart(&cls.getBody().front());
      StateOp::create(b, loc, "w", tensor({4, 4}));
    }
    ActorMeshOp::create(b, loc, "s0", "Stage", "mesh");
    {
      OpBuilder::InsertionGuard guard(b);
      func("mlp_k0", {tensor({2, 4}), tensor({4, 4}), tensor({2, 4})}, {});
      func::ReturnOp::create(b, loc);
    }
    world = CommunicatorOp::create(
        b, loc, "world", "mesh", ArrayRef<int64_t>{0, 1, 2, 3}, Backend::Nccl);
    pp = CommunicatorOp::create(b, loc, "pp", "mesh", ArrayRef<int64_t>{2, 1},
                                Backend::Gloo);
    plan = PlanOp::create(b, loc, "step", "mesh");
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(&plan.getBody().front());
      for (int64_t rank = 0; rank < 4; ++rank)
        programs.push_back(RankProgramOp::create(b, loc, rank, /*arena=*/0));
    }
    ASSERT_TRUE(verifies(*module));
  }

  /// Sets the arena of rank `rank`'s program and leaves the builder at the
  /// end of its body.
  RankProgramOp program(int64_t rank, int64_t arena) {
    RankProgramOp prog = programs[rank];
    prog.setArena(arena);
    b.setInsertionPointToEnd(&prog.getBody().front());
    return prog;
  }

  ArrayAttr bufs(ArrayRef<BufferAttr> list) {
    return b.getArrayAttr(SmallVector<Attribute>(list.begin(), list.end()));
  }

  SendOp send(BufferAttr buffer, uint64_t peer, StringRef comm,
              IntegerAttr group = {}) {
    return SendOp::create(b, loc, buffer, peer, comm, /*stream=*/1, group,
                          LinkKindAttr());
  }

  CollectiveOp collective(CollectiveKind kind,
                          std::optional<ReductionKind> reduction, BufferAttr in,
                          BufferAttr out,
                          std::optional<uint64_t> root = std::nullopt,
                          StringRef comm = "world") {
    return CollectiveOp::create(
        b, loc, kind,
        reduction ? ReductionKindAttr::get(&ctx, *reduction)
                  : ReductionKindAttr(),
        in, out, comm, root ? b.getI64IntegerAttr(*root) : IntegerAttr(),
        /*stream=*/1, /*group=*/IntegerAttr(), LinkKindAttr());
  }

  CommunicatorOp world, pp;
  PlanOp plan;
  SmallVector<RankProgramOp> programs;
};

//===----------------------------------------------------------------------===//
// Communicators, plans and rank programs
//===----------------------------------------------------------------------===//

TEST_F(PlanTest, CommunicatorAccessors) {
  EXPECT_EQ(world.getSymName(), "world");
  EXPECT_EQ(world.getMesh(), "mesh");
  EXPECT_EQ(world.getRanks(), ArrayRef<int64_t>({0, 1, 2, 3}));
  EXPECT_EQ(world.getBackend(), Backend::Nccl);
  EXPECT_EQ(pp.getBackend(), Backend::Gloo);
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_EQ(world.getCommRank(r), r);
  EXPECT_EQ(world.getCommRank(4), -1);
  // Communicator ranks follow the listed order, not the mesh order.
  EXPECT_EQ(pp.getCommRank(2), 0);
  EXPECT_EQ(pp.getCommRank(1), 1);
  EXPECT_EQ(pp.getCommRank(0), -1);
  EXPECT_EQ(pp.getCommRank(3), -1);
  EXPECT_NE(printOp(pp).find(
                "monarch.communicator @pp on @mesh ranks [2, 1] backend gloo"),
            std::string::npos)
      << printOp(pp);
  EXPECT_TRUE(roundTrips(*module));
}

TEST_F(PlanTest, RankProgramsWithEveryInstruction) {
  // Rank 1: feed, bind state, run the kernel, send to rank 2, reduce and
  // gather over @world, fetch.
  RankProgramOp rank1 = program(1, 256);
  auto feed = FeedBufferOp::create(b, loc, uint64_t{0}, buf(0, {2, 4}));
  auto stateBuf =
      StateBufferOp::create(b, loc, nested("s0", "w"), buf(32, {4, 4}));
  auto launch = LaunchOp::create(b, loc, "mlp_k0",
                                 bufs({buf(0, {2, 4}), buf(32, {4, 4})}),
                                 bufs({buf(96, {2, 4})}), /*stream=*/0);
  auto wait0 = WaitOp::create(b, loc, ValueRange{launch.getEvent()});
  auto sendOp = send(buf(96, {2, 4}), 2, "pp", b.getI64IntegerAttr(0));
  auto allReduce = collective(CollectiveKind::AllReduce, ReductionKind::Sum,
                              buf(32, {4, 4}), buf(32, {4, 4}));
  auto allGather = collective(CollectiveKind::AllGather, std::nullopt,
                              buf(96, {2, 4}), buf(128, {8, 4}));
  auto wait1 = WaitOp::create(b, loc, ValueRange{sendOp, allReduce, allGather});
  auto fetch = FetchBufferOp::create(b, loc, uint64_t{0}, buf(128, {8, 4}));

  // Rank 2: receive from rank 1, reduce-scatter, broadcast, all-to-all.
  RankProgramOp rank2 = program(2, 256);
  auto recvOp =
      RecvOp::create(b, loc, buf(0, {2, 4}), uint64_t{1}, "pp", uint64_t{1},
                     b.getI64IntegerAttr(0), LinkKindAttr());
  auto reduceScatter =
      collective(CollectiveKind::ReduceScatter, ReductionKind::Avg,
                 buf(32, {8, 4}), buf(160, {2, 4}));
  auto bcast = CollectiveOp::create(
      b, loc, CollectiveKind::Broadcast, ReductionKindAttr(), buf(0, {2, 4}),
      buf(0, {2, 4}), "world", b.getI64IntegerAttr(1), uint64_t{0},
      b.getI64IntegerAttr(3), LinkKindAttr());
  auto allToAll = collective(CollectiveKind::AllToAll, std::nullopt,
                             buf(192, {4, 4}), buf(192, {4, 4}));
  WaitOp::create(b, loc, ValueRange{recvOp, reduceScatter, bcast, allToAll});

  // Ranks 0 and 3 would take part in the @world collectives in a real plan;
  // empty programs are valid.
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(plan.getSymName(), "step");
  EXPECT_EQ(plan.getMesh(), "mesh");
  EXPECT_EQ(llvm::range_size(plan.getBody().getOps<RankProgramOp>()), 4u);
  EXPECT_EQ(rank1.getRank(), 1u);
  EXPECT_EQ(rank1.getArena(), 256u);
  EXPECT_EQ(rank2.getRank(), 2u);

  EXPECT_EQ(feed.getIndex(), 0u);
  EXPECT_EQ(feed.getBuffer(), buf(0, {2, 4}));
  EXPECT_EQ(feed.getBuffer().getSizeInBytes(), 32);
  EXPECT_EQ(stateBuf.getState(), nested("s0", "w"));
  EXPECT_EQ(stateBuf.getBuffer().getOffset(), 32);
  EXPECT_EQ(launch.getKernel(), "mlp_k0");
  ASSERT_EQ(launch.getIns().size(), 2u);
  EXPECT_EQ(cast<BufferAttr>(launch.getIns()[1]), buf(32, {4, 4}));
  ASSERT_EQ(launch.getOuts().size(), 1u);
  EXPECT_EQ(cast<BufferAttr>(launch.getOuts()[0]).getOffset(), 96);
  EXPECT_EQ(launch.getStream(), 0u);
  EXPECT_TRUE(isa<EventType>(launch.getEvent().getType()));
  EXPECT_EQ(wait0.getEvents().size(), 1u);
  EXPECT_EQ(wait1.getEvents().size(), 3u);
  EXPECT_EQ(wait1.getEvents()[0], sendOp.getEvent());

  EXPECT_EQ(sendOp.getBuffer(), buf(96, {2, 4}));
  EXPECT_EQ(sendOp.getPeer(), 2u);
  EXPECT_EQ(sendOp.getComm(), "pp");
  EXPECT_EQ(sendOp.getStream(), 1u);
  EXPECT_EQ(sendOp.getGroup(), std::optional<uint64_t>(0));
  EXPECT_EQ(recvOp.getPeer(), 1u);
  EXPECT_EQ(recvOp.getGroup(), std::optional<uint64_t>(0));

  EXPECT_EQ(allReduce.getKind(), CollectiveKind::AllReduce);
  EXPECT_EQ(allReduce.getReduction(), ReductionKind::Sum);
  EXPECT_FALSE(allReduce.getRoot().has_value());
  EXPECT_FALSE(allReduce.getGroup().has_value());
  EXPECT_EQ(allReduce.getComm(), "world");
  EXPECT_EQ(allGather.getKind(), CollectiveKind::AllGather);
  EXPECT_FALSE(allGather.getReduction().has_value());
  EXPECT_EQ(allGather.getOutput().getSizeInBytes(), 128);
  EXPECT_EQ(reduceScatter.getReduction(), ReductionKind::Avg);
  EXPECT_EQ(bcast.getKind(), CollectiveKind::Broadcast);
  EXPECT_EQ(bcast.getRoot(), std::optional<uint64_t>(1));
  EXPECT_EQ(bcast.getGroup(), std::optional<uint64_t>(3));
  EXPECT_EQ(bcast.getStream(), 0u);
  EXPECT_EQ(allToAll.getInput(), allToAll.getOutput());
  EXPECT_EQ(fetch.getIndex(), 0u);
  EXPECT_EQ(fetch.getBuffer().getType(), tensor({8, 4}));

  // Buffers print in the documented #monarch.buf<offset, type> form.
  std::string text = printOp(plan);
  for (StringRef expected : {
           "monarch.rank_program rank 1 arena 256 {",
           "monarch.feed_buffer 0 into #monarch.buf<0, tensor<2x4xf32>>",
           "monarch.state_buffer @s0::@w at #monarch.buf<32, tensor<4x4xf32>>",
           "monarch.launch @mlp_k0 ins(#monarch.buf<0, tensor<2x4xf32>>, "
           "#monarch.buf<32, tensor<4x4xf32>>) outs(#monarch.buf<96, "
           "tensor<2x4xf32>>) stream 0 : !monarch.event",
           "monarch.send #monarch.buf<96, tensor<2x4xf32>> to 2 on @pp stream "
           "1 group 0 : !monarch.event",
           "monarch.recv #monarch.buf<0, tensor<2x4xf32>> from 1 on @pp "
           "stream 1 group 0 : !monarch.event",
           "monarch.collective all_reduce sum #monarch.buf<32, "
           "tensor<4x4xf32>> -> #monarch.buf<32, tensor<4x4xf32>> on @world "
           "stream 1 : !monarch.event",
           "monarch.collective broadcast #monarch.buf<0, tensor<2x4xf32>> -> "
           "#monarch.buf<0, tensor<2x4xf32>> on @world root 1 stream 0 group "
           "3 : !monarch.event",
           "monarch.fetch_buffer 0 from #monarch.buf<128, tensor<8x4xf32>>",
           "monarch.rank_program rank 0 arena 0 {",
       })
    EXPECT_NE(text.find(expected.str()), std::string::npos)
        << "missing: " << expected.str() << "\nin:\n"
        << text;
  EXPECT_TRUE(roundTrips(*module));
}

TEST_F(PlanTest, LaunchWithNoInputs) {
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(plan);
    func("init_k", {tensor({4})}, {});
    func::ReturnOp::create(b, loc);
  }
  program(0, 16);
  auto launch = LaunchOp::create(b, loc, "init_k", bufs({}),
                                 bufs({buf(0, {4})}), /*stream=*/2);
  WaitOp::create(b, loc, ValueRange{launch});
  ASSERT_TRUE(verifies(*module));
  EXPECT_TRUE(launch.getIns().empty());
  EXPECT_EQ(launch.getStream(), 2u);
  EXPECT_NE(printOp(launch).find("monarch.launch @init_k ins() outs("
                                 "#monarch.buf<0, tensor<4xf32>>) stream 2"),
            std::string::npos)
      << printOp(launch);
  EXPECT_TRUE(roundTrips(*module));
}

TEST_F(PlanTest, ParsesTheDocumentedBufferSyntax) {
  // The plan instructions as the op documentation writes them.
  const char *text = R"mlir(
    shard.grid @g(shape = 2)
    monarch.proc_mesh @m(gpus = 2) grid @g
    monarch.communicator @c on @m ranks [0, 1] backend nccl
    monarch.plan @p on @m {
      monarch.rank_program rank 0 arena 64 {
        monarch.feed_buffer 0 into #monarch.buf<0, tensor<8x2xf32>>
        %e = monarch.send #monarch.buf<0, tensor<8x2xf32>> to 1 on @c stream 1 : !monarch.event
        monarch.wait %e : !monarch.event
      }
      monarch.rank_program rank 1 arena 64 {
        %e = monarch.recv #monarch.buf<0, tensor<8x2xf32>> from 0 on @c stream 1 : !monarch.event
        monarch.wait %e : !monarch.event
        monarch.fetch_buffer 0 from #monarch.buf<0, tensor<8x2xf32>>
      }
    }
  )mlir";
  DiagnosticCapture diags(ctx);
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(parsed) << diags.joined();
  ASSERT_TRUE(verifies(*parsed));
  SmallVector<BufferAttr> buffers;
  parsed->walk([&](Operation *op) {
    for (NamedAttribute attr : op->getAttrs())
      if (auto buffer = dyn_cast<BufferAttr>(attr.getValue()))
        buffers.push_back(buffer);
  });
  ASSERT_EQ(buffers.size(), 4u);
  for (BufferAttr buffer : buffers) {
    EXPECT_EQ(buffer, BufferAttr::get(&ctx, 0, tensor({8, 2})));
    EXPECT_EQ(buffer.getSizeInBytes(), 64);
  }
  EXPECT_TRUE(roundTrips(*parsed));
}

//===----------------------------------------------------------------------===//
// Invalid plans
//===----------------------------------------------------------------------===//

TEST_F(PlanTest, BuffersMustLieInsideTheArena) {
  program(1, 256);
  // The last 32 bytes of the arena are fine...
  auto last = FeedBufferOp::create(b, loc, uint64_t{0}, buf(224, {2, 4}));
  ASSERT_TRUE(verifies(*module));
  last->erase();
  // ...one byte further is not.
  expectRejected(FeedBufferOp::create(b, loc, uint64_t{0}, buf(225, {2, 4})),
                 {"buffer #monarch.buf<225, tensor<2x4xf32>>",
                  "lies outside the arena of 256 bytes of rank 1"});
  expectRejected(FetchBufferOp::create(b, loc, uint64_t{0}, buf(0, {8, 8, 2})),
                 {"buffer #monarch.buf<0, tensor<8x8x2xf32>>",
                  "lies outside the arena of 256 bytes of rank 1"});
  // Buffers inside the ins/outs lists are checked too.
  expectRejected(LaunchOp::create(b, loc, "mlp_k0",
                                  bufs({buf(0, {2, 4}), buf(200, {4, 4})}),
                                  bufs({buf(96, {2, 4})}), 0),
                 {"buffer #monarch.buf<200, tensor<4x4xf32>>",
                  "lies outside the arena of 256 bytes of rank 1"});
  expectRejected(
      LaunchOp::create(b, loc, "mlp_k0",
                       bufs({buf(0, {2, 4}), buf(32, {4, 4})}),
                       bufs({buf(250, {2, 4})}), 0),
      {"buffer #monarch.buf<250, tensor<2x4xf32>>", "lies outside the arena"});
  expectRejected(
      collective(CollectiveKind::AllReduce, ReductionKind::Max, buf(0, {4, 4}),
                 buf(240, {4, 4})),
      {"buffer #monarch.buf<240, tensor<4x4xf32>>", "lies outside the arena"});
}

TEST_F(PlanTest, PointToPointPeersMustBeInTheCommunicator) {
  program(1, 256);
  expectRejected(send(buf(0, {2, 4}), 3, "pp"),
                 "peer rank 3 is not a member of communicator @pp");
  expectRejected(RecvOp::create(b, loc, buf(0, {2, 4}), uint64_t{0}, "pp",
                                uint64_t{1}, IntegerAttr(), LinkKindAttr()),
                 "peer rank 0 is not a member of communicator @pp");
  expectRejected(send(buf(0, {2, 4}), 2, "nocomm"),
                 {"nocomm", "does not name a monarch.communicator"});
  expectRejected(send(buf(0, {2, 4}), 2, "mesh"),
                 {"mesh", "does not name a monarch.communicator"});
  // The sending rank itself must be a member.
  program(0, 256);
  expectRejected(send(buf(0, {2, 4}), 2, "pp"),
                 "rank 0 is not a member of communicator @pp");
  expectRejected(collective(CollectiveKind::AllReduce, ReductionKind::Sum,
                            buf(0, {4}), buf(0, {4}), std::nullopt, "pp"),
                 "rank 0 is not a member of communicator @pp");
}

TEST_F(PlanTest, CollectiveAttributesMustMatchTheKind) {
  program(0, 256);
  expectRejected(collective(CollectiveKind::AllReduce, std::nullopt,
                            buf(0, {4}), buf(0, {4})),
                 "all_reduce needs a reduction kind");
  expectRejected(collective(CollectiveKind::ReduceScatter, std::nullopt,
                            buf(0, {4}), buf(16, {1})),
                 "reduce_scatter needs a reduction kind");
  expectRejected(collective(CollectiveKind::AllGather, ReductionKind::Sum,
                            buf(0, {1}), buf(16, {4})),
                 "all_gather takes no reduction kind");
  expectRejected(collective(CollectiveKind::Broadcast, std::nullopt,
                            buf(0, {4}), buf(0, {4})),
                 "broadcast needs a root");
  expectRejected(collective(CollectiveKind::AllReduce, ReductionKind::Sum,
                            buf(0, {4}), buf(0, {4}), /*root=*/0),
                 "only broadcast takes a root");
  expectRejected(
      CollectiveOp::create(
          b, loc, CollectiveKind::AllReduce,
          ReductionKindAttr::get(&ctx, ReductionKind::Sum), buf(0, {4}),
          BufferAttr::get(&ctx, 0, tensor({4}, b.getI32Type())), "world",
          IntegerAttr(), uint64_t{0}, IntegerAttr(), LinkKindAttr()),
      "element types differ: 'f32' vs 'i32'");
}

TEST_F(PlanTest, CollectiveShapesFollowTheCommunicatorSize) {
  program(0, 1024);
  expectRejected(collective(CollectiveKind::AllReduce, ReductionKind::Sum,
                            buf(0, {4, 4}), buf(64, {4, 2})),
                 "input 'tensor<4x4xf32>' and output 'tensor<4x2xf32>' must "
                 "have the same shape");
  expectRejected(collective(CollectiveKind::AllGather, std::nullopt,
                            buf(0, {2, 4}), buf(64, {4, 4})),
                 "all_gather over 4 ranks maps 'tensor<2x4xf32>' to "
                 "'tensor<4x4xf32>'; expected dimension 0 to grow by 4");
  expectRejected(collective(CollectiveKind::AllGather, std::nullopt,
                            buf(0, {2, 4}), buf(64, {8, 2})),
                 "expected dimension 0 to grow by 4");
  expectRejected(collective(CollectiveKind::ReduceScatter, ReductionKind::Sum,
                            buf(0, {8, 4}), buf(256, {4, 4})),
                 "reduce_scatter over 4 ranks maps 'tensor<8x4xf32>' to "
                 "'tensor<4x4xf32>'; expected dimension 0 to shrink by 4");
  expectRejected(collective(CollectiveKind::AllToAll, std::nullopt,
                            buf(0, {6, 4}), buf(0, {6, 4})),
                 "all_to_all over 4 ranks needs equal shapes with dimension 0 "
                 "divisible by 4");
  expectRejected(collective(CollectiveKind::Broadcast, std::nullopt,
                            buf(0, {4}), buf(0, {4}), /*root=*/4),
                 "root 4 is outside communicator @world of 4 ranks");
  // Shape rules use the size of the communicator named, here 2 for @pp.
  program(1, 1024);
  auto ok = collective(CollectiveKind::AllGather, std::nullopt, buf(0, {2, 4}),
                       buf(64, {4, 4}), std::nullopt, "pp");
  EXPECT_TRUE(verifies(*module));
  ok->erase();
  // Rank-0 buffers reduce in place.
  auto scalar = collective(CollectiveKind::AllReduce, ReductionKind::Prod,
                           buf(0, {}), buf(0, {}), std::nullopt, "pp");
  EXPECT_TRUE(verifies(*module)) << printOp(scalar);
}

TEST_F(PlanTest, LaunchMustMatchTheKernel) {
  program(0, 256);
  expectRejected(LaunchOp::create(b, loc, "nokernel", bufs({}), bufs({}), 0),
                 {"nokernel", "does not name a kernel function"});
  expectRejected(LaunchOp::create(b, loc, "mlp_k0", bufs({buf(0, {2, 4})}),
                                  bufs({buf(32, {2, 4})}), 0),
                 "passes 2 buffers but kernel @mlp_k0 takes 3 arguments");
  expectRejected(LaunchOp::create(b, loc, "mlp_k0",
                                  bufs({buf(0, {2, 4}), buf(32, {2, 4})}),
                                  bufs({buf(96, {2, 4})}), 0),
                 "buffer #1 of type 'tensor<2x4xf32>' does not match kernel "
                 "argument of type 'tensor<4x4xf32>'");
}

TEST_F(PlanTest, StateBuffersMustNameActorState) {
  program(0, 256);
  expectRejected(
      StateBufferOp::create(b, loc, nested("s0", "w"), buf(0, {2, 2})),
      "buffer type 'tensor<2x2xf32>' does not match state type "
      "'tensor<4x4xf32>'");
  expectRejected(
      StateBufferOp::create(b, loc, nested("s0", "v"), buf(0, {4, 4})),
      "actor mesh @s0 has no state @v");
  expectRejected(
      StateBufferOp::create(b, loc, nested("s9", "w"), buf(0, {4, 4})),
      {"s9", "does not name a monarch.actor_mesh"});
  expectRejected(StateBufferOp::create(b, loc, sym("s0"), buf(0, {4, 4})),
                 "state @s0 must have the form @actor_mesh::@state");
}

TEST_F(PlanTest, InvalidCommunicators) {
  auto check = [&](ArrayRef<int64_t> ranks, StringRef message) {
    expectRejected(
        CommunicatorOp::create(b, loc, "c", "mesh", ranks, Backend::Gloo),
        message);
  };
  b.setInsertionPoint(plan);
  check({}, "must contain at least one rank");
  check({0, 1, 1}, "rank 1 appears twice");
  check({0, -1}, "rank -1 is negative");
  check({0, 4}, "rank 4 is outside mesh @mesh of 4 ranks");
  expectRejected(CommunicatorOp::create(b, loc, "c", "Stage",
                                        ArrayRef<int64_t>{0}, Backend::Gloo),
                 {"Stage", "does not name a monarch.proc_mesh or "
                           "monarch.mesh_slice"});
}

TEST_F(PlanTest, InvalidPlanStructure) {
  b.setInsertionPointToEnd(module->getBody());
  expectRejected(RankProgramOp::create(b, loc, 1, 16),
                 "expects parent op 'monarch.plan'");
  b.setInsertionPointToEnd(&plan.getBody().front());
  expectRejected(RankProgramOp::create(b, loc, 0, 16),
                 "rank 0 has more than one program in plan @step");
  expectRejected(RankProgramOp::create(b, loc, 4, 16),
                 "rank 4 is outside mesh @mesh of 4 ranks");
  expectRejected(RankProgramOp::create(b, loc, -1, 16),
                 "attribute 'rank' failed to satisfy constraint: 64-bit "
                 "signless integer attribute whose value is non-negative");
  expectRejected(arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)),
                 "is not allowed in a monarch.plan; only monarch.rank_program "
                 "and monarch.rank_member are");
  b.setInsertionPointToEnd(module->getBody());
  // Plan instructions live in rank programs only.
  expectRejected(FeedBufferOp::create(b, loc, uint64_t{0}, buf(0, {4})),
                 "expects parent op 'monarch.rank_program'");
  expectRejected(PlanOp::create(b, loc, "other", "nowhere"),
                 {"nowhere", "does not name a monarch.proc_mesh or "
                             "monarch.mesh_slice"});
}

TEST_F(PlanTest, InvalidInstructionOperands) {
  program(0, 256);
  expectRejected(WaitOp::create(b, loc, ValueRange{}),
                 "must wait for at least one event");
  // Streams, peers and indices are non-negative.
  expectRejected(
      SendOp::create(b, loc, buf(0, {4}), b.getI64IntegerAttr(1), sym("world"),
                     b.getI64IntegerAttr(-1), IntegerAttr(), LinkKindAttr()),
      "attribute 'stream' failed to satisfy constraint: 64-bit signless "
      "integer attribute whose value is non-negative");
  expectRejected(FeedBufferOp::create(b, loc, b.getI64IntegerAttr(-2),
                                      buf(0, {4}), DenseI64ArrayAttr()),
                 "attribute 'index' failed to satisfy constraint");
}

} // namespace
