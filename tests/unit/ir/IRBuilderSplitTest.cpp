//===- IRBuilderSplitTest.cpp - Control messages and data ----- -*- C++ -*-===//
//
// Builds the split stage of the dialect through the C++ API: control
// messages (`control_msg`, `await`, `!monarch.token`) and data channels
// (`channel`, `channel_send`, `channel_recv`).
//
//===----------------------------------------------------------------------===//

#include "MonarchTestUtils.h"

using namespace mlir;
using namespace monarch;
using namespace monarch::test;

namespace {

class SplitTest : public MonarchIRTest {
protected:
  /// Meshes of the pipeline example, an actor class @Stage with endpoints
  /// @forward (8x4 -> 8x4) and @update (4x4, f32), actor meshes @s0 on
  /// @s0_mesh and @s1 on @s1_mesh, and a channel @c0 from @s0_mesh to
  /// @s1_mesh carrying tensor<8x4xf32>.
  void SetUp() override {
    buildPipelineMeshes();
    {
      OpBuilder::InsertionGuard guard(b);
      auto cls = ActorClassOp::create(b, loc, "Stage");
      b.setInsertionPointToStart(&cls.getBody().front());
      for (auto [name, in, out] :
           {std::make_tuple("forward", SmallVector<Type>{tensor({8, 4})},
                            SmallVector<Type>{tensor({8, 4})}),
            std::make_tuple("update",
                            SmallVector<Type>{tensor({4, 4}), b.getF32Type()},
                            SmallVector<Type>{})}) {
        OpBuilder::InsertionGuard inner(b);
        auto ep = EndpointOp::create(b, loc, name, b.getFunctionType(in, out));
        Block *entry = ep.addEntryBlock();
        b.setInsertionPointToStart(entry);
        ReturnOp::create(b, loc,
                         out.empty() ? ValueRange{}
                                     : ValueRange{entry->getArgument(0)});
      }
    }
    ActorMeshOp::create(b, loc, "s0", "Stage", "s0_mesh");
    ActorMeshOp::create(b, loc, "s1", "Stage", "s1_mesh");
    channel =
        ChannelOp::create(b, loc, "c0", "s0_mesh", "s1_mesh", tensor({8, 4}));
    ASSERT_TRUE(verifies(*module));
  }

  /// A func.func @step(%lr: f32, %x: tensor<8x4xf32>) whose body the builder
  /// is left in (before its return).
  func::FuncOp stepFunc() {
    func::FuncOp fn = func("step", {b.getF32Type(), tensor({8, 4})}, {});
    b.setInsertionPoint(func::ReturnOp::create(b, loc));
    return fn;
  }

  ArrayAttr invokes(ArrayRef<std::pair<StringRef, StringRef>> callees) {
    SmallVector<Attribute> refs;
    for (auto [actorMesh, endpoint] : callees)
      refs.push_back(nested(actorMesh, endpoint));
    return b.getArrayAttr(refs);
  }

  ChannelOp channel;
};

TEST_F(SplitTest, ControlMessagesAndAwait) {
  func::FuncOp fn = stepFunc();
  Value lr = fn.getArgument(0);
  auto both = ControlMsgOp::create(
      b, loc, "mesh", invokes({{"s0", "forward"}, {"s1", "forward"}}),
      ValueRange{});
  auto update = ControlMsgOp::create(
      b, loc, "s1_mesh", invokes({{"s1", "update"}}), ValueRange{lr});
  Value step = arith::ConstantOp::create(b, loc, b.getIndexAttr(3));
  Value seed = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(7));
  auto scalars =
      ControlMsgOp::create(b, loc, "s0_mesh", invokes({{"s0", "forward"}}),
                           ValueRange{lr, step, seed});
  auto await =
      AwaitOp::create(b, loc, ValueRange{both, update, scalars.getToken()});
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(both.getMesh(), "mesh");
  EXPECT_EQ(both.getInvoke().size(), 2u);
  EXPECT_EQ(both.getInvoke()[1], nested("s1", "forward"));
  EXPECT_TRUE(both.getScalars().empty());
  EXPECT_TRUE(isa<TokenType>(both.getToken().getType()));
  EXPECT_EQ(both.getType(), TokenType::get(&ctx));
  EXPECT_EQ(update.getScalars().size(), 1u);
  EXPECT_EQ(update.getScalars()[0], lr);
  EXPECT_EQ(scalars.getScalars().getTypes()[1], b.getIndexType());
  EXPECT_EQ(await.getTokens().size(), 3u);
  EXPECT_EQ(await.getTokens()[0], both.getToken());

  std::string text = printOp(fn);
  for (StringRef expected :
       {"%0 = monarch.control_msg to @mesh invoke [@s0::@forward, "
        "@s1::@forward] : !monarch.token",
        "%1 = monarch.control_msg to @s1_mesh invoke [@s1::@update] "
        "args(%arg0 : f32) : !monarch.token",
        "args(%arg0, %c3, %c7_i32 : f32, index, i32) : !monarch.token",
        "monarch.await %0, %1, %2 : !monarch.token, !monarch.token, "
        "!monarch.token"})
    EXPECT_NE(text.find(expected.str()), std::string::npos)
        << "missing: " << expected.str() << "\nin:\n"
        << text;
  EXPECT_TRUE(roundTrips(*module));
}

TEST_F(SplitTest, ChannelsCarryOneTensorType) {
  func::FuncOp fn = stepFunc();
  auto send = ChannelSendOp::create(b, loc, "c0", fn.getArgument(1));
  auto recv = ChannelRecvOp::create(b, loc, tensor({8, 4}), "c0");
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(channel.getSymName(), "c0");
  EXPECT_EQ(channel.getFrom(), "s0_mesh");
  EXPECT_EQ(channel.getTo(), "s1_mesh");
  EXPECT_EQ(channel.getType(), tensor({8, 4}));
  EXPECT_EQ(send.getChannel(), "c0");
  EXPECT_EQ(send.getValue(), fn.getArgument(1));
  EXPECT_EQ(recv.getChannelAttr(), sym("c0"));
  EXPECT_EQ(recv.getType(), tensor({8, 4}));
  EXPECT_EQ(SymbolTable::lookupNearestSymbolFrom(send, send.getChannelAttr()),
            channel.getOperation());

  EXPECT_NE(printOp(channel).find("monarch.channel @c0 from @s0_mesh to "
                                  "@s1_mesh : tensor<8x4xf32>"),
            std::string::npos)
      << printOp(channel);
  std::string text = printOp(fn);
  EXPECT_NE(text.find("monarch.channel_send @c0, %arg1 : tensor<8x4xf32>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("monarch.channel_recv @c0 : tensor<8x4xf32>"),
            std::string::npos)
      << text;
  EXPECT_TRUE(roundTrips(*module));
}

TEST_F(SplitTest, InvalidControlMessages) {
  func::FuncOp fn = stepFunc();
  expectRejected(
      ControlMsgOp::create(b, loc, "mesh", b.getArrayAttr({}), ValueRange{}),
      "must invoke at least one endpoint");
  expectRejected(
      ControlMsgOp::create(b, loc, "s0_mesh", invokes({{"s1", "forward"}}),
                           ValueRange{}),
      "invokes @s1::@forward but actor mesh @s1 is on @s1_mesh, not on "
      "@s0_mesh or a slice of it");
  expectRejected(ControlMsgOp::create(b, loc, "s0_mesh",
                                      invokes({{"s0", "backward"}}),
                                      ValueRange{}),
                 "actor class @Stage has no endpoint @backward");
  expectRejected(
      ControlMsgOp::create(b, loc, "Stage", invokes({{"s0", "forward"}}),
                           ValueRange{}),
      {"Stage", "does not name a monarch.proc_mesh or monarch.mesh_slice"});
  expectRejected(
      ControlMsgOp::create(b, loc, "mesh", invokes({{"s0", "forward"}}),
                           ValueRange{fn.getArgument(1)}),
      "operand #0 must be variadic of signless integer or floating-point "
      "or index");
  expectRejected(AwaitOp::create(b, loc, ValueRange{}),
                 "must await at least one token");
}

TEST_F(SplitTest, InvalidChannelUses) {
  func::FuncOp fn = stepFunc();
  Value t = fn.getArgument(1);
  Value lr = fn.getArgument(0);
  expectRejected(ChannelRecvOp::create(b, loc, tensor({4, 4}), "c0"),
                 "type 'tensor<4x4xf32>' does not match channel @c0 of type "
                 "'tensor<8x4xf32>'");
  expectRejected(ChannelRecvOp::create(b, loc, tensor({8, 4}), "c9"),
                 {"c9", "does not name a monarch.channel"});
  expectRejected(ChannelSendOp::create(b, loc, "s0_mesh", t),
                 {"s0_mesh", "does not name a monarch.channel"});
  expectRejected(ChannelSendOp::create(b, loc, "c0", lr),
                 "operand #0 must be ranked tensor of any type values");

  b.setInsertionPointToEnd(module->getBody());
  expectRejected(
      ChannelOp::create(b, loc, "c1", "s0_mesh", "s9_mesh", tensor({4})),
      {"s9_mesh", "does not name a monarch.proc_mesh or monarch.mesh_slice"});
  expectRejected(
      ChannelOp::create(b, loc, "c0", "s0_mesh", "s1_mesh", tensor({4})),
      "redefinition of symbol named 'c0'");
}

} // namespace
