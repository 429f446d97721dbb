//===- IRBuilderTest.cpp - Building monarch IR ---------------- -*- C++ -*-===//
//
// The dialect itself, its attributes and types, and the mesh ops
// (`monarch.proc_mesh`, `monarch.mesh_slice`) with the mesh helpers
// (`lookupMesh`, `isSameOrSliceOf`, `getLocalShape`). Actors and the traced
// program are in IRBuilderTracedTest.cpp, control messages and channels in
// IRBuilderSplitTest.cpp, plans in IRBuilderPlanTest.cpp and a whole module
// using every op in IRBuilderModuleTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "MonarchTestUtils.h"

#include "mlir/AsmParser/AsmParser.h"

using namespace mlir;
using namespace monarch;
using namespace monarch::test;

namespace {

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

TEST(MonarchDialect, LoadsWithShardAsDependentDialect) {
  MLIRContext ctx;
  ctx.loadDialect<MonarchDialect>();
  EXPECT_NE(ctx.getLoadedDialect("monarch"), nullptr);
  EXPECT_NE(ctx.getLoadedDialect("shard"), nullptr);
  EXPECT_EQ(MonarchDialect::getDistAttrName(), "monarch.dist");
}

using AttrTest = MonarchIRTest;

//===----------------------------------------------------------------------===//
// #monarch.dist
//===----------------------------------------------------------------------===//

TEST_F(AttrTest, DistAttrSplitDims) {
  DistAttr rowSplit = dist({{"gpus"}, {}});
  ASSERT_TRUE(rowSplit);
  EXPECT_EQ(rowSplit.getSplit().size(), 2u);
  EXPECT_EQ(rowSplit.getSplitDims(0), SmallVector<StringRef>({"gpus"}));
  EXPECT_TRUE(rowSplit.getSplitDims(1).empty());
  EXPECT_FALSE(rowSplit.getPartial().has_value());
  EXPECT_FALSE(rowSplit.isReplicated());

  DistAttr twoDims = dist({{"hosts", "gpus"}, {}, {"dp"}});
  EXPECT_EQ(twoDims.getSplitDims(0), SmallVector<StringRef>({"hosts", "gpus"}));
  EXPECT_TRUE(twoDims.getSplitDims(1).empty());
  EXPECT_EQ(twoDims.getSplitDims(2), SmallVector<StringRef>({"dp"}));
  EXPECT_FALSE(twoDims.isReplicated());

  // Attributes are uniqued: the same parameters give the same attribute.
  EXPECT_EQ(rowSplit, dist({{"gpus"}, {}}));
  EXPECT_NE(rowSplit, dist({{}, {"gpus"}}));
}

TEST_F(AttrTest, DistAttrReplicatedAndPartial) {
  DistAttr replicated = dist({{}, {}});
  EXPECT_TRUE(replicated.isReplicated());
  EXPECT_TRUE(dist({}).isReplicated());

  DistAttr partial = dist({{}, {}}, ReductionKind::Sum);
  ASSERT_TRUE(partial.getPartial().has_value());
  EXPECT_EQ(*partial.getPartial(), ReductionKind::Sum);
  EXPECT_FALSE(partial.isReplicated());
  EXPECT_NE(partial, replicated);

  DistAttr partialMax = dist({{"gpus"}}, ReductionKind::Max);
  EXPECT_EQ(*partialMax.getPartial(), ReductionKind::Max);
  EXPECT_EQ(partialMax.getSplitDims(0), SmallVector<StringRef>({"gpus"}));
}

TEST_F(AttrTest, DistAttrPrintsAndParses) {
  DistAttr rowSplit = dist({{"gpus"}, {}});
  DistAttr partial = dist({{}, {}}, ReductionKind::Avg);
  std::string text;
  llvm::raw_string_ostream(text) << rowSplit;
  EXPECT_EQ(text, "#monarch.dist<[[\"gpus\"], []]>");
  text.clear();
  llvm::raw_string_ostream(text) << partial;
  EXPECT_EQ(text, "#monarch.dist<[[], []] partial avg>");

  EXPECT_EQ(parseAttribute("#monarch.dist<[[\"gpus\"], []]>", &ctx), rowSplit);
  EXPECT_EQ(parseAttribute("#monarch.dist<[[], []] partial avg>", &ctx),
            partial);
  {
    DiagnosticCapture diags(ctx);
    EXPECT_FALSE(parseAttribute("#monarch.dist<[[], []] partial mean>", &ctx));
    EXPECT_TRUE(diags.contains("unknown reduction 'mean'")) << diags.joined();
  }
}

TEST_F(AttrTest, DistAttrVerifierRejectsMalformedSplits) {
  // The exact parameter types select the generated getChecked (the
  // inherited variadic one needs the storage class).
  auto emit = [&] { return emitError(loc); };
  const std::optional<ReductionKind> NoPartial;
  {
    DiagnosticCapture diags(ctx);
    ArrayAttr dupSplit =
        b.getArrayAttr({strs({"gpus"}), strs({"hosts", "gpus"})});
    EXPECT_FALSE(DistAttr::getChecked(emit, &ctx, dupSplit, NoPartial));
    EXPECT_TRUE(diags.contains("mesh dimension \"gpus\"")) << diags.joined();
  }
  {
    DiagnosticCapture diags(ctx);
    ArrayAttr notNested = strs({"gpus"});
    EXPECT_FALSE(DistAttr::getChecked(emit, &ctx, notNested, NoPartial));
    EXPECT_TRUE(diags.contains("each #monarch.dist entry must be an array of "
                               "mesh dimension names"))
        << diags.joined();
  }
  {
    DiagnosticCapture diags(ctx);
    ArrayAttr emptyName = b.getArrayAttr({strs({""})});
    EXPECT_FALSE(DistAttr::getChecked(emit, &ctx, emptyName, NoPartial));
    EXPECT_TRUE(diags.contains("must be non-empty strings")) << diags.joined();
  }
  {
    DiagnosticCapture diags(ctx);
    ArrayAttr notString =
        b.getArrayAttr({b.getArrayAttr({b.getI64IntegerAttr(0)})});
    EXPECT_FALSE(DistAttr::getChecked(emit, &ctx, notString, NoPartial));
    EXPECT_TRUE(diags.contains("must be non-empty strings")) << diags.joined();
  }
  // A valid split goes through getChecked.
  DistAttr ok = DistAttr::getChecked(
      emit, &ctx, b.getArrayAttr({strs({"hosts"}), strs({"gpus"})}),
      std::optional<ReductionKind>(ReductionKind::Min));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok.getSplitDims(1), SmallVector<StringRef>({"gpus"}));
}

//===----------------------------------------------------------------------===//
// #monarch.buf
//===----------------------------------------------------------------------===//

TEST_F(AttrTest, BufferAttrOffsetTypeAndSize) {
  BufferAttr f32Buf = buf(128, {8, 4});
  EXPECT_EQ(f32Buf.getOffset(), 128);
  EXPECT_EQ(f32Buf.getType(), tensor({8, 4}));
  EXPECT_EQ(f32Buf.getSizeInBytes(), 8 * 4 * 4);

  auto sized = [&](Type element, ArrayRef<int64_t> shape) {
    return BufferAttr::get(&ctx, 0, tensor(shape, element)).getSizeInBytes();
  };
  EXPECT_EQ(sized(b.getF16Type(), {8, 4}), 64);
  EXPECT_EQ(sized(b.getBF16Type(), {3}), 6);
  EXPECT_EQ(sized(b.getF64Type(), {2, 2}), 32);
  EXPECT_EQ(sized(b.getI64Type(), {5}), 40);
  EXPECT_EQ(sized(b.getI8Type(), {7}), 7);
  // Sub-byte elements take a whole byte each.
  EXPECT_EQ(sized(b.getI1Type(), {10}), 10);
  // A rank-0 tensor holds one element.
  EXPECT_EQ(sized(b.getF32Type(), {}), 4);
  // An empty tensor takes no bytes.
  EXPECT_EQ(sized(b.getF32Type(), {0, 4}), 0);
}

TEST_F(AttrTest, BufferAttrPrintsAndParses) {
  BufferAttr attr = buf(128, {8, 4});
  std::string text;
  llvm::raw_string_ostream(text) << attr;
  EXPECT_EQ(text, "#monarch.buf<128, tensor<8x4xf32>>");
  EXPECT_EQ(parseAttribute(text, &ctx), attr);
}

TEST_F(AttrTest, BufferAttrVerifier) {
  auto emit = [&] { return emitError(loc); };
  {
    DiagnosticCapture diags(ctx);
    EXPECT_FALSE(BufferAttr::getChecked(emit, &ctx, int64_t{-8}, tensor({4})));
    EXPECT_TRUE(diags.contains("buffer offset must be non-negative, got -8"))
        << diags.joined();
  }
  {
    DiagnosticCapture diags(ctx);
    EXPECT_FALSE(BufferAttr::getChecked(emit, &ctx, int64_t{0},
                                        tensor({ShapedType::kDynamic, 4})));
    EXPECT_TRUE(diags.contains("buffer type must have a static shape"))
        << diags.joined();
  }
  {
    DiagnosticCapture diags(ctx);
    EXPECT_FALSE(BufferAttr::getChecked(emit, &ctx, int64_t{0},
                                        tensor({4}, b.getIndexType())));
    EXPECT_TRUE(diags.contains(
        "buffer element type must be an integer or float, got 'index'"))
        << diags.joined();
  }
  EXPECT_TRUE(BufferAttr::getChecked(emit, &ctx, int64_t{0}, tensor({4})));
}

//===----------------------------------------------------------------------===//
// Enums and types
//===----------------------------------------------------------------------===//

TEST_F(AttrTest, EnumsStringifyAndSymbolize) {
  EXPECT_EQ(stringifyReductionKind(ReductionKind::Sum), "sum");
  EXPECT_EQ(stringifyReductionKind(ReductionKind::Avg), "avg");
  EXPECT_EQ(symbolizeReductionKind("prod"), ReductionKind::Prod);
  EXPECT_FALSE(symbolizeReductionKind("mean").has_value());
  EXPECT_EQ(stringifyCollectiveKind(CollectiveKind::ReduceScatter),
            "reduce_scatter");
  EXPECT_EQ(symbolizeCollectiveKind("all_to_all"), CollectiveKind::AllToAll);
  EXPECT_EQ(stringifyBackend(Backend::Nccl), "nccl");
  EXPECT_EQ(symbolizeBackend("gloo"), Backend::Gloo);

  auto maxAttr = ReductionKindAttr::get(&ctx, ReductionKind::Max);
  EXPECT_EQ(maxAttr.getValue(), ReductionKind::Max);
  EXPECT_EQ(CollectiveKindAttr::get(&ctx, CollectiveKind::AllGather).getValue(),
            CollectiveKind::AllGather);
  EXPECT_EQ(BackendAttr::get(&ctx, Backend::Gloo).getValue(), Backend::Gloo);
}

TEST_F(AttrTest, TokenAndEventTypes) {
  Type token = TokenType::get(&ctx);
  Type event = EventType::get(&ctx);
  EXPECT_NE(token, event);
  EXPECT_TRUE(isa<TokenType>(token));
  EXPECT_TRUE(isa<EventType>(event));
  std::string text;
  llvm::raw_string_ostream(text) << token << " " << event;
  EXPECT_EQ(text, "!monarch.token !monarch.event");
  EXPECT_EQ(parseType("!monarch.token", &ctx), token);
  EXPECT_EQ(parseType("!monarch.event", &ctx), event);
}

//===----------------------------------------------------------------------===//
// proc_mesh and mesh_slice
//===----------------------------------------------------------------------===//

using MeshTest = MonarchIRTest;

TEST_F(MeshTest, ProcMeshAccessors) {
  grid("g", {2, 4});
  ProcMeshOp mesh = procMesh("mesh", {"hosts", "gpus"}, {2, 4}, "g");
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(mesh.getSymName(), "mesh");
  EXPECT_EQ(mesh.getDimNames(), SmallVector<StringRef>({"hosts", "gpus"}));
  EXPECT_EQ(mesh.getMeshShape(), SmallVector<int64_t>({2, 4}));
  EXPECT_EQ(mesh.getShape(), ArrayRef<int64_t>({2, 4}));
  EXPECT_EQ(mesh.getGridRef(), sym("g"));
  EXPECT_EQ(mesh.getGrid(), "g");

  auto iface = cast<MeshOpInterface>(mesh.getOperation());
  EXPECT_EQ(iface.getNumRanks(), 8);
  EXPECT_EQ(iface.getDimIndex("hosts"), 0);
  EXPECT_EQ(iface.getDimIndex("gpus"), 1);
  EXPECT_EQ(iface.getDimIndex("tpus"), -1);
  EXPECT_EQ(iface.getMeshShape(), SmallVector<int64_t>({2, 4}));
  EXPECT_EQ(iface.getGridRef(), sym("g"));
  EXPECT_TRUE(roundTrips(*module));
  EXPECT_NE(printOp(mesh).find("monarch.proc_mesh @mesh(hosts = 2, gpus = 4) "
                               "grid @g"),
            std::string::npos)
      << printOp(mesh);
}

TEST_F(MeshTest, SliceAccessorsAndParentRank) {
  grid("g", {2, 4});
  grid("g12", {1, 2});
  grid("g22", {2, 2});
  grid("g11", {1, 1});
  ProcMeshOp mesh = procMesh("mesh", {"hosts", "gpus"}, {2, 4}, "g");
  MeshSliceOp tail =
      slice("tail", "mesh", {"hosts", "gpus"}, {1, 2}, {2, 4}, "g12");
  MeshSliceOp middle =
      slice("middle", "mesh", {"hosts", "gpus"}, {0, 1}, {2, 3}, "g22");
  MeshSliceOp inner =
      slice("inner", "tail", {"hosts", "gpus"}, {0, 1}, {1, 2}, "g11");
  ASSERT_TRUE(verifies(*module));

  EXPECT_EQ(tail.getParent(), "mesh");
  EXPECT_EQ(tail.getDimNames(), SmallVector<StringRef>({"hosts", "gpus"}));
  EXPECT_EQ(tail.getStarts(), ArrayRef<int64_t>({1, 2}));
  EXPECT_EQ(tail.getEnds(), ArrayRef<int64_t>({2, 4}));
  EXPECT_EQ(tail.getMeshShape(), SmallVector<int64_t>({1, 2}));
  EXPECT_EQ(tail.getGridRef(), sym("g12"));
  EXPECT_EQ(cast<MeshOpInterface>(tail.getOperation()).getNumRanks(), 2);

  // Row-major: slice rank r is at (starts + unlinearize(r)) in the parent.
  SmallVector<int64_t> meshShape = mesh.getMeshShape();
  EXPECT_EQ(tail.getParentRank(meshShape, 0), 6);
  EXPECT_EQ(tail.getParentRank(meshShape, 1), 7);

  EXPECT_EQ(middle.getMeshShape(), SmallVector<int64_t>({2, 2}));
  EXPECT_EQ(middle.getParentRank(meshShape, 0), 1);
  EXPECT_EQ(middle.getParentRank(meshShape, 1), 2);
  EXPECT_EQ(middle.getParentRank(meshShape, 2), 5);
  EXPECT_EQ(middle.getParentRank(meshShape, 3), 6);

  // A slice of a slice maps to ranks of its immediate parent.
  EXPECT_EQ(inner.getMeshShape(), SmallVector<int64_t>({1, 1}));
  EXPECT_EQ(inner.getParentRank(tail.getMeshShape(), 0), 1);
  EXPECT_EQ(tail.getParentRank(meshShape,
                               inner.getParentRank(tail.getMeshShape(), 0)),
            7);
  EXPECT_TRUE(roundTrips(*module));
}

TEST_F(MeshTest, LookupMeshAndSliceRelation) {
  buildPipelineMeshes();
  grid("g11", {1, 1});
  slice("s0_first", "s0_mesh", {"hosts", "gpus"}, {0, 0}, {1, 1}, "g11");
  ASSERT_TRUE(verifies(*module));
  Operation *from = *module;

  MeshOpInterface mesh = lookupMesh(from, sym("mesh"));
  MeshOpInterface s0 = lookupMesh(from, sym("s0_mesh"));
  MeshOpInterface s1 = lookupMesh(from, sym("s1_mesh"));
  MeshOpInterface first = lookupMesh(from, sym("s0_first"));
  ASSERT_TRUE(mesh && s0 && s1 && first);
  EXPECT_TRUE(isa<ProcMeshOp>(mesh.getOperation()));
  EXPECT_TRUE(isa<MeshSliceOp>(s0.getOperation()));
  EXPECT_EQ(cast<ProcMeshOp>(mesh.getOperation()).getSymName(), "mesh");
  EXPECT_EQ(cast<MeshSliceOp>(first.getOperation()).getSymName(), "s0_first");

  // The symbol-table cache gives the same answers.
  SymbolTableCollection tables;
  EXPECT_EQ(lookupMesh(from, sym("s1_mesh"), &tables).getOperation(),
            s1.getOperation());
  // A grid is a symbol but not a mesh; a missing symbol is null.
  EXPECT_FALSE(lookupMesh(from, sym("mesh_grid"), &tables));
  EXPECT_FALSE(lookupMesh(from, sym("nowhere"), &tables));
  EXPECT_FALSE(lookupMesh(from, sym("nowhere")));

  EXPECT_TRUE(isSameOrSliceOf(mesh, mesh, tables));
  EXPECT_TRUE(isSameOrSliceOf(s0, mesh, tables));
  EXPECT_TRUE(isSameOrSliceOf(s1, mesh, tables));
  EXPECT_TRUE(isSameOrSliceOf(first, s0, tables));
  EXPECT_TRUE(isSameOrSliceOf(first, mesh, tables));
  EXPECT_FALSE(isSameOrSliceOf(mesh, s0, tables));
  EXPECT_FALSE(isSameOrSliceOf(s0, s1, tables));
  EXPECT_FALSE(isSameOrSliceOf(first, s1, tables));
  EXPECT_FALSE(isSameOrSliceOf(s0, first, tables));
}

TEST_F(MeshTest, GetLocalShape) {
  grid("g", {2, 4});
  grid("g12", {1, 2});
  ProcMeshOp mesh = procMesh("mesh", {"hosts", "gpus"}, {2, 4}, "g");
  MeshSliceOp half =
      slice("half", "mesh", {"hosts", "gpus"}, {0, 0}, {1, 2}, "g12");
  ASSERT_TRUE(verifies(*module));
  auto m = cast<MeshOpInterface>(mesh.getOperation());
  auto h = cast<MeshOpInterface>(half.getOperation());
  std::string error;

  auto local = getLocalShape({8, 4}, dist({{"gpus"}, {}}), m, error);
  ASSERT_TRUE(succeeded(local)) << error;
  EXPECT_EQ(*local, SmallVector<int64_t>({2, 4}));

  local = getLocalShape({16, 4}, dist({{"hosts", "gpus"}, {}}), m, error);
  ASSERT_TRUE(succeeded(local)) << error;
  EXPECT_EQ(*local, SmallVector<int64_t>({2, 4}));

  local = getLocalShape({8, 4}, dist({{"gpus"}, {"hosts"}}), m, error);
  ASSERT_TRUE(succeeded(local)) << error;
  EXPECT_EQ(*local, SmallVector<int64_t>({2, 2}));

  local = getLocalShape({8, 4}, dist({{}, {}}), m, error);
  ASSERT_TRUE(succeeded(local)) << error;
  EXPECT_EQ(*local, SmallVector<int64_t>({8, 4}));

  local = getLocalShape({8, 4}, DistAttr(), m, error);
  ASSERT_TRUE(succeeded(local)) << error;
  EXPECT_EQ(*local, SmallVector<int64_t>({8, 4}));

  // On the 1x2 slice, "gpus" has 2 ranks.
  local = getLocalShape({8, 4}, dist({{"gpus"}, {}}), h, error);
  ASSERT_TRUE(succeeded(local)) << error;
  EXPECT_EQ(*local, SmallVector<int64_t>({4, 4}));

  error.clear();
  EXPECT_TRUE(failed(getLocalShape({6, 4}, dist({{"gpus"}, {}}), m, error)));
  EXPECT_EQ(error, "tensor dimension 0 of size 6 is not divisible by 4 ranks");

  error.clear();
  EXPECT_TRUE(failed(getLocalShape({8, 4}, dist({{}, {"tpus"}}), m, error)));
  EXPECT_EQ(error, "mesh has no dimension \"tpus\"");

  // A dynamic dimension that is not split stays dynamic.
  error.clear();
  local =
      getLocalShape({8, ShapedType::kDynamic}, dist({{"gpus"}, {}}), m, error);
  ASSERT_TRUE(succeeded(local)) << error;
  EXPECT_EQ(*local, (SmallVector<int64_t>{2, ShapedType::kDynamic}));

  // A dynamic dimension that is split cannot be divided statically.
  error.clear();
  EXPECT_TRUE(failed(getLocalShape({ShapedType::kDynamic, 4},
                                   dist({{"gpus"}, {}}), m, error)));
  EXPECT_EQ(error, "tensor dimension 0 is split over the mesh and must have a "
                   "static size");
}

TEST_F(MeshTest, DimNamesNeedingQuotesRoundTrip) {
  grid("g", {1, 2});
  grid("g1", {1, 1});
  ProcMeshOp mesh = procMesh("mesh", {"host-0", "2gpus"}, {1, 2}, "g");
  slice("part", "mesh", {"host-0", "2gpus"}, {0, 1}, {1, 2}, "g1");
  grid("g3", {3});
  ProcMeshOp odd = procMesh("odd", {"say \"hi\"\\n"}, {3}, "g3");
  ASSERT_TRUE(verifies(*module));
  EXPECT_TRUE(roundTrips(*module));
  std::string text = printOp(*module);
  EXPECT_NE(text.find("monarch.proc_mesh @mesh(\"host-0\" = 1, \"2gpus\" = 2)"),
            std::string::npos)
      << text;

  DiagnosticCapture diags(ctx);
  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(reparsed) << diags.joined();
  auto meshAgain =
      SymbolTable::lookupNearestSymbolFrom<ProcMeshOp>(*reparsed, sym("mesh"));
  auto oddAgain =
      SymbolTable::lookupNearestSymbolFrom<ProcMeshOp>(*reparsed, sym("odd"));
  ASSERT_TRUE(meshAgain && oddAgain);
  EXPECT_EQ(meshAgain.getDimNames(), mesh.getDimNames());
  EXPECT_EQ(oddAgain.getDimNames(), odd.getDimNames());
  EXPECT_EQ(oddAgain.getDimNames()[0], "say \"hi\"\\n");
}

//===----------------------------------------------------------------------===//
// Invalid meshes
//===----------------------------------------------------------------------===//

TEST_F(MeshTest, InvalidProcMeshes) {
  {
    auto m = newModule();
    grid("g", {4});
    procMesh("mesh", {}, {}, "g");
    EXPECT_TRUE(failsToVerify(*m, "must have at least one dimension"));
  }
  {
    auto m = newModule();
    grid("g", {4});
    procMesh("mesh", {"hosts", "gpus"}, {4}, "g");
    EXPECT_TRUE(failsToVerify(*m, "has 2 dimension names but 1 sizes"));
  }
  {
    auto m = newModule();
    grid("g", {1, 4});
    procMesh("mesh", {"hosts", "gpus"}, {1, 0}, "g");
    EXPECT_TRUE(failsToVerify(
        *m, "dimension \"gpus\" must have a positive size, got 0"));
  }
  {
    auto m = newModule();
    grid("g", {2, 2});
    procMesh("mesh", {"gpus", "gpus"}, {2, 2}, "g");
    EXPECT_TRUE(failsToVerify(*m, "duplicate mesh dimension \"gpus\""));
  }
  {
    auto m = newModule();
    grid("g", {2});
    procMesh("mesh", {""}, {2}, "g");
    EXPECT_TRUE(failsToVerify(*m, "mesh dimension names must be non-empty"));
  }
  {
    auto m = newModule();
    procMesh("mesh", {"gpus"}, {4}, "nogrid");
    EXPECT_TRUE(failsToVerify(*m, {"nogrid", "does not name a shard.grid"}));
  }
  {
    auto m = newModule();
    grid("g", {1, 2});
    procMesh("mesh", {"hosts", "gpus"}, {1, 4}, "g");
    EXPECT_TRUE(failsToVerify(
        *m, "grid @g has shape [1, 2] but the mesh has shape [1, 4]"));
  }
}

TEST_F(MeshTest, InvalidSlices) {
  auto withMesh = [&] {
    auto m = newModule();
    grid("g", {2, 4});
    grid("g12", {1, 2});
    procMesh("mesh", {"hosts", "gpus"}, {2, 4}, "g");
    return m;
  };
  {
    auto m = withMesh();
    slice("s", "mesh", {"hosts", "gpus"}, {0, 2}, {1, 2}, "g12");
    EXPECT_TRUE(failsToVerify(
        *m, "range 2 to 2 of dimension \"gpus\" is empty or negative"));
  }
  {
    auto m = withMesh();
    slice("s", "mesh", {"hosts", "gpus"}, {-1, 0}, {0, 2}, "g12");
    EXPECT_TRUE(failsToVerify(
        *m, "range -1 to 0 of dimension \"hosts\" is empty or negative"));
  }
  {
    auto m = withMesh();
    slice("s", "mesh", {"hosts", "gpus"}, {0, 3}, {1, 5}, "g12");
    EXPECT_TRUE(failsToVerify(*m, "range 3 to 5 of dimension \"gpus\" exceeds "
                                  "its size 4 in parent @mesh"));
  }
  {
    auto m = withMesh();
    slice("s", "mesh", {"hosts", "tpus"}, {0, 0}, {1, 2}, "g12");
    EXPECT_TRUE(failsToVerify(
        *m, "dimension #1 is \"tpus\" but parent @mesh names it \"gpus\""));
  }
  {
    auto m = withMesh();
    grid("g2", {2});
    slice("s", "mesh", {"gpus"}, {0}, {2}, "g2");
    EXPECT_TRUE(
        failsToVerify(*m, "slices 1 dimensions but parent @mesh has 2"));
  }
  {
    auto m = withMesh();
    slice("s", "mesh", {"hosts", "gpus"}, {0}, {1, 2}, "g12");
    EXPECT_TRUE(failsToVerify(*m, "needs one range per dimension"));
  }
  {
    auto m = withMesh();
    slice("s", "g", {"hosts", "gpus"}, {0, 0}, {1, 2}, "g12");
    EXPECT_TRUE(failsToVerify(*m, {"g", "does not name a monarch.proc_mesh or "
                                        "monarch.mesh_slice"}));
  }
  {
    auto m = withMesh();
    slice("s", "mesh", {"hosts", "gpus"}, {0, 0}, {2, 2}, "g12");
    EXPECT_TRUE(failsToVerify(
        *m, "grid @g12 has shape [1, 2] but the mesh has shape [2, 2]"));
  }
}

} // namespace
