//===- PlanSerializationTest.cpp - .mcplan round trip --------- -*- C++ -*-===//
//
// A plan survives serialize -> deserialize unchanged; every damaged file
// (each truncation length, wrong magic, other version, flipped bytes,
// trailing garbage, inconsistent contents) is rejected with a message that
// says what is wrong, never a crash.
//
//===----------------------------------------------------------------------===//

#include "SamplePlan.h"

#include "monarch/Plan/PlanFile.h"
#include "monarch/Plan/PlanPrinter.h"

#include "PlanThrift.h"
#include "RankClasses.h"

#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace monarch::plan;
using monarch::plan::testing::samplePlan;

namespace {

std::string serialized(const ExecutionPlan &plan) {
  StatusOr<std::string> bytes = serializePlan(plan);
  EXPECT_TRUE(bytes.isOk()) << bytes.status().toString();
  return bytes.isOk() ? *bytes : std::string();
}

/// Rewrites the header checksum after the payload was edited.
void fixChecksum(std::string &file) {
  uint64_t h = planChecksum(std::string_view(file).substr(kPlanHeaderSize));
  for (int i = 0; i < 8; ++i)
    file[24 + i] = static_cast<char>((h >> (8 * i)) & 0xff);
}

std::string errorOf(std::string_view bytes) {
  StatusOr<ExecutionPlan> plan = deserializePlan(bytes);
  return plan.isOk() ? std::string("<accepted>") : plan.status().message();
}

TEST(PlanSerialization, RoundTripKeepsEveryField) {
  ExecutionPlan plan = samplePlan();
  std::string bytes = serialized(plan);
  ASSERT_GT(bytes.size(), kPlanHeaderSize);
  EXPECT_EQ(bytes.substr(0, 8), std::string(kPlanMagic, 8));
  StatusOr<ExecutionPlan> back = deserializePlan(bytes);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == plan);
  // Spot checks that would catch a comparison that forgets fields.
  const Instruction &send = back->plans[0].programs[0].instructions[3];
  EXPECT_EQ(send.kind, InstrKind::Send);
  EXPECT_EQ(send.p2p.group, std::optional<int64_t>(3));
  EXPECT_EQ(send.p2p.buffer.dtype, DType::F64);
  const Instruction &coll = back->plans[0].programs[1].instructions[4];
  EXPECT_EQ(coll.collective.reduction, ReductionKind::Avg);
  EXPECT_FALSE(coll.collective.group.has_value());
  EXPECT_FALSE(coll.collective.root.has_value());
  EXPECT_EQ(back->plans[0].programs[1].instructions[5].collective.root,
            std::optional<int64_t>(1));
  EXPECT_EQ(back->meshes[1].parent, std::optional<std::string>("mesh"));
  EXPECT_FALSE(back->meshes[0].parent.has_value());
  EXPECT_EQ(back->libraries[0].code.size(), 7u);
  EXPECT_EQ(back->libraries[0].kernels[0].params,
            (std::vector<int64_t>{4, -2}));
  EXPECT_EQ(back->plans[0].programs[0].instructions[2].loc.line, 12);
  EXPECT_EQ(back->plans[0].programs[0].instructions[2].loc.opName,
            "linalg.matmul");
  EXPECT_DOUBLE_EQ(back->controllers[0].steps[0].scalars[1].value.constant,
                   0.5);
  // Serializing again gives the same bytes (deterministic encoding).
  EXPECT_EQ(serialized(*back), bytes);
}

/// The sample plan with its output returned as two shards of float32[4]:
/// rank 0 elements 0-1, rank 1 elements 2-3.
ExecutionPlan shardedSample() {
  ExecutionPlan plan = samplePlan();
  for (RankProgram &prog : plan.plans[0].programs) {
    Instruction &fetch = prog.instructions.back();
    fetch.io.buffer = Buffer{240, DType::F32, {2}};
    fetch.io.offsets = {2 * prog.rank};
  }
  return plan;
}

/// A data- and pair-parallel step on 4 ranks whose programs are one
/// stream parameterised by the rank: shard offsets, ring peers, the pair's
/// communicator and the broadcast's root differ; every other field is
/// equal. `ranks` ranks (a multiple of 2).
ExecutionPlan classPlan(int64_t ranks) {
  ExecutionPlan p;
  p.compilerVersion = "test";
  std::vector<int64_t> all;
  for (int64_t r = 0; r < ranks; ++r)
    all.push_back(r);
  p.meshes.push_back(ProcMesh{
      "mesh", {{"hosts", 1}, {"gpus", ranks}}, std::nullopt, {}, {}, all});
  p.topology.push_back(MeshTopology{"mesh", {Host{"localhost", all}}});
  p.communicators.push_back(Communicator{"world", "mesh", all, Backend::Gloo});
  for (int64_t r = 0; r < ranks; r += 2)
    p.communicators.push_back(Communicator{
        "pair" + std::to_string(r), "mesh", {r, r + 1}, Backend::Gloo});
  p.kernels.push_back(Kernel{"k0", 1, 1});
  // The same code with odd ranks' parameters (a second table entry).
  p.kernels.push_back(Kernel{"k0.odd", 1, 1});
  StepPlan step;
  step.symbol = "step";
  step.mesh = "mesh";
  step.inputs = {ValueType{DType::F32, {2 * ranks}, true}};
  step.outputs = {ValueType{DType::F32, {2 * ranks}, true}};
  using monarch::plan::testing::buf;
  using monarch::plan::testing::loc;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    RankProgram prog;
    prog.rank = rank;
    prog.arenaBytes = 64;
    prog.peakBytes = 64;
    auto add = [&](Instruction in, int32_t line) {
      in.loc = loc(line, "op");
      prog.instructions.push_back(in);
    };
    Instruction feed;
    feed.kind = InstrKind::FeedBuffer;
    feed.io = IOInstr{0, buf(0, {2}), {2 * rank}};
    add(feed, 1);
    Instruction launch;
    launch.kind = InstrKind::Launch;
    launch.launch = LaunchInstr{
        static_cast<int32_t>(rank % 2), {buf(0, {2})}, {buf(8, {2})}, 0};
    add(launch, 2);
    Instruction send;
    send.kind = InstrKind::Send;
    send.p2p = P2PInstr{buf(8, {2}), (rank + 1) % ranks, 0, 1, int64_t{0}};
    add(send, 3);
    Instruction recv;
    recv.kind = InstrKind::Recv;
    recv.p2p =
        P2PInstr{buf(16, {2}), (rank + ranks - 1) % ranks, 0, 1, int64_t{0}};
    add(recv, 3);
    Instruction pair;
    pair.kind = InstrKind::Collective;
    pair.collective.kind = CollectiveKind::Broadcast;
    pair.collective.communicator = static_cast<int32_t>(1 + rank / 2);
    pair.collective.root = rank / 2 % 2;
    pair.collective.input = buf(16, {2});
    pair.collective.output = buf(24, {2});
    pair.collective.stream = 2;
    add(pair, 4);
    Instruction wait;
    wait.kind = InstrKind::Wait;
    wait.wait.events = {1, 2, 3, 4};
    add(wait, 5);
    Instruction fetch;
    fetch.kind = InstrKind::FetchBuffer;
    fetch.io = IOInstr{0, buf(24, {2}), {2 * rank}};
    add(fetch, 6);
    step.programs.push_back(prog);
  }
  p.plans.push_back(step);
  return p;
}

TEST(PlanSerialization, RanksOfAClassShareOneStream) {
  // SPMD: the file holds rank 0's stream once and, per other rank, what
  // differs (offsets, peers, communicator, root); reading it back gives
  // every rank's program as it was.
  ExecutionPlan plan = classPlan(4);
  ASSERT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).toString();
  std::string bytes = serialized(plan);
  StatusOr<ExecutionPlan> back = deserializePlan(bytes);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == plan);
  EXPECT_EQ(back->plans[0].programs[3].instructions[2].p2p.peer, 0);
  EXPECT_EQ(back->plans[0].programs[3].instructions[4].collective.root,
            std::optional<int64_t>(1));
  EXPECT_EQ(back->plans[0].programs[2].instructions[6].io.offsets,
            std::vector<int64_t>{4});
  // Kernels differing by parameters are a patch, not a class of their own.
  EXPECT_EQ(back->plans[0].programs[3].instructions[1].launch.kernel, 1);
  wire::ExecutionPlan wire = detail::toThrift(plan);
  for (int r = 1; r < 4; ++r)
    EXPECT_TRUE(wire.plans[0].programs[r].__isset.sharesWith) << "rank " << r;
  // The file grows by the patches, not by a stream per rank: against the
  // same 64 ranks each holding its own (arenas made to differ).
  ExecutionPlan shared = classPlan(64), own = classPlan(64);
  for (RankProgram &program : own.plans[0].programs)
    program.arenaBytes += 8 * program.rank;
  size_t sharedBytes = serialized(shared).size(),
         ownBytes = serialized(own).size();
  EXPECT_LT(2 * sharedBytes, ownBytes) << sharedBytes << " vs " << ownBytes;
  // A rank whose stream differs in anything else holds its own.
  ExecutionPlan odd = classPlan(4);
  odd.plans[0].programs[2].instructions[1].launch.outs[0].offset = 40;
  odd.plans[0].programs[2].arenaBytes = 64;
  StatusOr<ExecutionPlan> oddBack = deserializePlan(serialized(odd));
  ASSERT_TRUE(oddBack.isOk()) << oddBack.status().toString();
  EXPECT_TRUE(*oddBack == odd);
}

std::string payloadOf(const wire::ExecutionPlan &wire);

/// A whole file (header, size, checksum) holding `wire`.
std::string fileOf(const wire::ExecutionPlan &wire) {
  std::string file =
      serialized(ExecutionPlan{}).substr(0, kPlanHeaderSize) + payloadOf(wire);
  for (int i = 0; i < 8; ++i)
    file[16 + i] =
        static_cast<char>(((file.size() - kPlanHeaderSize) >> (8 * i)) & 0xff);
  fixChecksum(file);
  return file;
}

/// `plan` read back whole equals it, and so does each of `ranks`' program
/// decoded for that rank alone (the worker's decode).
void expectReadsBack(const ExecutionPlan &plan,
                     std::initializer_list<int64_t> ranks) {
  std::string bytes = serialized(plan);
  StatusOr<ExecutionPlan> back = deserializePlan(bytes);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == plan);
  for (int64_t rank : ranks) {
    StatusOr<RankPlan> mine = deserializePlanForRank(bytes, rank);
    ASSERT_TRUE(mine.isOk()) << mine.status().toString();
    ASSERT_EQ(mine->plan.plans[0].programs.size(), 1u) << "rank " << rank;
    EXPECT_TRUE(mine->plan.plans[0].programs[0] == plan.plans[0].programs[rank])
        << "rank " << rank;
  }
}

TEST(PlanSerialization, AWorkerDecodesOnlyItsOwnProgram) {
  // deserializePlanForRank (what a worker binds): each step keeps only the
  // rank's program, equal to the full decode's, and, from the file's table
  // (format 7), the streams every rank uses each communicator the rank is
  // a member of on, patched communicators included, without rebuilding
  // the other ranks' streams.
  ExecutionPlan plan = classPlan(8);
  // A rank-dependent stream on a pair: rank 5 broadcasts on stream 3, so
  // its class splits; the pair's other member must know of it.
  plan.plans[0].programs[5].instructions[4].collective.stream = 3;
  std::string bytes = serialized(plan);
  StatusOr<ExecutionPlan> full = deserializePlan(bytes);
  ASSERT_TRUE(full.isOk()) << full.status().toString();
  std::map<int32_t, std::set<int64_t>> expected;
  for (const RankProgram &program : full->plans[0].programs)
    for (const Instruction &in : program.instructions)
      if (in.kind == InstrKind::Send || in.kind == InstrKind::Recv)
        expected[in.p2p.communicator].insert(in.p2p.stream);
      else if (in.kind == InstrKind::Collective)
        expected[in.collective.communicator].insert(in.collective.stream);
  ASSERT_EQ(expected[3], (std::set<int64_t>{2, 3}));
  std::set<Backend> backends;
  for (const auto &[c, streams] : expected)
    backends.insert(plan.communicators[c].backend);
  for (int64_t rank = 0; rank < 8; ++rank) {
    StatusOr<RankPlan> mine = deserializePlanForRank(bytes, rank);
    ASSERT_TRUE(mine.isOk()) << mine.status().toString();
    ASSERT_EQ(mine->plan.plans.size(), 1u);
    ASSERT_EQ(mine->plan.plans[0].programs.size(), 1u) << "rank " << rank;
    EXPECT_TRUE(mine->plan.plans[0].programs[0] ==
                full->plans[0].programs[rank])
        << "rank " << rank;
    std::map<int32_t, std::set<int64_t>> member;
    for (const auto &[c, streams] : expected) {
      const std::vector<int64_t> &ranks = plan.communicators[c].ranks;
      if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end())
        member[c] = streams;
    }
    ASSERT_FALSE(member.empty());
    ASSERT_EQ(mine->commStreams.size(), 1u);
    EXPECT_EQ(mine->commStreams[0], member) << "rank " << rank;
    EXPECT_EQ(mine->backends, std::vector<std::set<Backend>>{backends});
    EXPECT_TRUE(mine->plan.communicators == full->communicators);
  }
  // A rank the step does not run: no program, no communicator of its own.
  StatusOr<RankPlan> none = deserializePlanForRank(bytes, 8);
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_TRUE(none->plan.plans[0].programs.empty());
  EXPECT_TRUE(none->commStreams[0].empty());
  // The table must list what the programs use: a rank whose stream it
  // leaves out is refused, and so is, in a full decode, a stream no
  // program uses.
  auto withTable = [&](auto edit) {
    wire::ExecutionPlan wire = detail::toThrift(plan);
    edit(wire.plans[0].commStreams);
    std::string file = bytes.substr(0, kPlanHeaderSize) + payloadOf(wire);
    for (int i = 0; i < 8; ++i)
      file[16 + i] = static_cast<char>(
          ((file.size() - kPlanHeaderSize) >> (8 * i)) & 0xff);
    fixChecksum(file);
    return file;
  };
  std::string dropped = withTable([](std::vector<wire::CommStreams> &table) {
    for (wire::CommStreams &z : table)
      z.streams.erase(std::remove(z.streams.begin(), z.streams.end(), 3),
                      z.streams.end());
  });
  StatusOr<RankPlan> five = deserializePlanForRank(dropped, 5);
  ASSERT_FALSE(five.isOk());
  EXPECT_NE(five.status().message().find("on stream 3, which its "
                                         "communicator streams do not list"),
            std::string::npos)
      << five.status().message();
  std::string extra = withTable([](std::vector<wire::CommStreams> &table) {
    table[0].streams.push_back(9);
  });
  EXPECT_NE(errorOf(extra).find("communicator streams that no instruction "
                                "uses"),
            std::string::npos)
      << errorOf(extra);
  std::string outside = withTable([](std::vector<wire::CommStreams> &table) {
    table[0].communicators.__set_ranks({99});
    table[0].communicators.__isset.box = false;
  });
  EXPECT_NE(errorOf(outside).find("the streams of communicator 99"),
            std::string::npos)
      << errorOf(outside);
  // The file is checked as deserializePlan checks it.
  std::string corrupt = bytes;
  corrupt.back() ^= 1;
  EXPECT_FALSE(deserializePlanForRank(corrupt, 0).isOk());
  // Another rank's patch naming no instruction is refused, though that
  // rank's stream is never rebuilt.
  wire::ExecutionPlan bad = detail::toThrift(plan);
  ASSERT_TRUE(bad.plans[0].programs[6].__isset.sharesWith);
  bad.plans[0].programs[6].patches[0].__set_instruction(99);
  std::string file = bytes.substr(0, kPlanHeaderSize) + payloadOf(bad);
  for (int i = 0; i < 8; ++i)
    file[16 + i] =
        static_cast<char>(((file.size() - kPlanHeaderSize) >> (8 * i)) & 0xff);
  fixChecksum(file);
  StatusOr<RankPlan> refused = deserializePlanForRank(file, 0);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("no such instruction"),
            std::string::npos)
      << refused.status().message();
}

TEST(PlanSerialization, AWorkerSkipsTheMembersOfCommunicatorsItIsNotIn) {
  // A family of communicators stored as one entry (pair0, pair1, ... each
  // the previous shifted by 2): a rank's decode expands the repeats that
  // hold it and those a stored stream names (a class's rules find a
  // member's communicator as the translate of its head's), and elides the
  // rest: neither their names nor their members are built. Its program is
  // the full decode's, and it still refuses what the full decode refuses.
  ExecutionPlan plan = classPlan(64);
  for (size_t c = 1; c < plan.communicators.size(); ++c)
    plan.communicators[c].name = "pair" + std::to_string(c - 1);
  std::string bytes = serialized(plan);
  ASSERT_EQ(detail::toThrift(plan).communicators.size(), 2u);
  StatusOr<ExecutionPlan> full = deserializePlan(bytes);
  ASSERT_TRUE(full.isOk()) << full.status().toString();
  ASSERT_TRUE(full->communicators == plan.communicators);
  for (int64_t rank = 0; rank < 64; ++rank) {
    StatusOr<RankPlan> mine = deserializePlanForRank(bytes, rank);
    ASSERT_TRUE(mine.isOk()) << mine.status().toString();
    ASSERT_EQ(mine->plan.plans[0].programs.size(), 1u);
    EXPECT_TRUE(mine->plan.plans[0].programs[0] ==
                full->plans[0].programs[rank])
        << "rank " << rank;
    const std::vector<Communicator> &comms = mine->plan.communicators;
    ASSERT_EQ(comms.size(), full->communicators.size());
    size_t kept = 0;
    for (size_t c = 0; c < comms.size(); ++c) {
      const Communicator &theirs = full->communicators[c];
      bool holds = std::find(theirs.ranks.begin(), theirs.ranks.end(), rank) !=
                   theirs.ranks.end();
      if (comms[c].elided) {
        EXPECT_FALSE(holds) << "rank " << rank << " communicator " << c;
        EXPECT_TRUE(comms[c].ranks.empty() && comms[c].name.empty());
        EXPECT_EQ(comms[c].mesh, theirs.mesh);
        continue;
      }
      ++kept;
      Communicator same = comms[c];
      EXPECT_TRUE(same == theirs) << "rank " << rank << " communicator " << c;
    }
    // The world, the rank's pair and at most the pairs a head's stream
    // names (ranks 0 and 1 head the two classes: pair0).
    EXPECT_LE(kept, 3u) << "rank " << rank;
  }
  // The runtime binds every rank's program from such a decode.
  EXPECT_TRUE(validatePlan(deserializePlanForRank(bytes, 63)->plan,
                           ValidateScope::KeptRanks)
                  .isOk());
  // An elided repeat is refused where its shifted ranks overflow, as an
  // expanded one is.
  wire::ExecutionPlan wire = detail::toThrift(plan);
  wire.communicators[1].__set_shift(INT64_MAX / 4);
  StatusOr<RankPlan> hostile = deserializePlanForRank(fileOf(wire), 5);
  ASSERT_FALSE(hostile.isOk());
  EXPECT_NE(hostile.status().message().find("shifted ranks overflow"),
            std::string::npos)
      << hostile.status().toString();
}

TEST(PlanSerialization, AWorkerChecksButDoesNotExpandWhatItNeverReads) {
  // A worker maps ranks only through the meshes its steps and
  // communicators run on, and never reads the topology: a rank's decode
  // checks a slice no step runs on and every host on the stored sets
  // (count, sign, range) without expanding them, and refuses what the
  // full decode refuses.
  ExecutionPlan plan = classPlan(64);
  std::vector<int64_t> odd;
  for (int64_t r = 1; r < 64; r += 2)
    odd.push_back(r);
  plan.meshes.push_back(ProcMesh{"odd",
                                 {{"hosts", 1}, {"gpus", 32}},
                                 std::string("mesh"),
                                 {0, 1},
                                 {1, 64},
                                 odd});
  std::string bytes = serialized(plan);
  StatusOr<ExecutionPlan> full = deserializePlan(bytes);
  ASSERT_TRUE(full.isOk()) << full.status().toString();
  ASSERT_TRUE(*full == plan);
  StatusOr<RankPlan> mine = deserializePlanForRank(bytes, 5);
  ASSERT_TRUE(mine.isOk()) << mine.status().toString();
  EXPECT_TRUE(mine->plan.plans[0].programs[0] == full->plans[0].programs[5]);
  const ProcMesh &root = mine->plan.meshes[0], &slice = mine->plan.meshes[1];
  // The root mesh's root ranks are its ranks (stored as the box 0..63):
  // left implicit, a rank maps to itself.
  EXPECT_TRUE(root.elided && root.rootRanks.empty());
  EXPECT_EQ(root.numRanks(), 64);
  EXPECT_EQ(detail::meshRankOf(mine->plan, "mesh", 37), 37);
  EXPECT_TRUE(slice.elided && slice.rootRanks.empty());
  EXPECT_EQ(slice.numRanks(), 32);
  ASSERT_EQ(mine->plan.topology[0].hosts.size(), 1u);
  EXPECT_TRUE(mine->plan.topology[0].hosts[0].elided);
  EXPECT_TRUE(mine->plan.topology[0].hosts[0].ranks.empty());
  EXPECT_TRUE(validatePlan(mine->plan, ValidateScope::KeptRanks).isOk());

  wire::ExecutionPlan wire = detail::toThrift(plan);
  auto refused = [&](auto edit, const char *part) {
    wire::ExecutionPlan bad = wire;
    edit(bad);
    std::string file = fileOf(bad);
    for (bool one : {false, true}) {
      std::string message =
          one ? (deserializePlanForRank(file, 5).isOk()
                     ? std::string("<accepted>")
                     : deserializePlanForRank(file, 5).status().message())
              : errorOf(file);
      EXPECT_NE(message.find(part), std::string::npos)
          << (one ? "rank decode: " : "full decode: ") << message;
    }
  };
  using W = wire::ExecutionPlan;
  // A slice of 31 root ranks for 32, one of them negative, a host's rank
  // outside its mesh, a box too large to expand.
  refused([](W &w) { w.meshes[1].rootRanks.__set_box({1, 31, 2}); },
          "31 root ranks for 32 ranks");
  refused([](W &w) { w.meshes[1].rootRanks.__set_box({-1, 32, 2}); },
          "negative root rank");
  // A root mesh stored otherwise than as its ranks in order (here the even
  // ranks, then the odd ones) is expanded as before.
  {
    wire::ExecutionPlan other = wire;
    other.meshes[0].rootRanks.__set_box({0, 2, 1, 32, 2});
    StatusOr<RankPlan> shuffled = deserializePlanForRank(fileOf(other), 5);
    ASSERT_TRUE(shuffled.isOk()) << shuffled.status().toString();
    EXPECT_FALSE(shuffled->plan.meshes[0].elided);
    EXPECT_EQ(shuffled->plan.meshes[0].rootRanks.size(), 64u);
  }
  refused([](W &w) { w.topology[0].hosts[0].ranks.__set_box({1, 64, 1}); },
          "lists rank 64 of 64");
  refused(
      [](W &w) {
        w.topology[0].hosts[0].ranks.__set_box({0, 1 << 30, 1, 1 << 30, 1});
      },
      "hold more ranks than the plan may");
}

TEST(PlanSerialization, RankFieldsThatFollowTheRankAreRulesNotPatches) {
  // Format 6: the ring's peers (rank + 1), the pair's communicator (the
  // one of its family holding the rank) and the shard offsets (2 x the
  // rank's coordinate) are rules of the class; only what no rule gives
  // stays a patch (the wrap of the ring, the broadcast's root, the odd
  // ranks' kernel). Sizes shared with the stream's holder are left out.
  ExecutionPlan plan = classPlan(64);
  wire::ExecutionPlan wire = detail::toThrift(plan);
  const std::vector<wire::RankProgram> &programs = wire.plans[0].programs;
  ASSERT_TRUE(programs[0].__isset.rules);
  size_t peers = 0, communicators = 0, offsets = 0;
  for (const wire::RankProgram &program : programs) {
    for (const wire::RankPatch &patch : program.patches) {
      peers += patch.__isset.peer;
      communicators += patch.__isset.communicator;
      offsets += patch.__isset.offsets;
    }
    if (program.__isset.sharesWith) {
      EXPECT_FALSE(program.__isset.arenaBytes || program.__isset.peakBytes);
    }
  }
  EXPECT_LE(peers, 2u); // the last rank's send and the first's receive
  EXPECT_EQ(communicators, 0u);
  EXPECT_EQ(offsets, 0u);
  expectReadsBack(plan, {0, 5, 63});

  // Hostile rules: a clear error, never a crash.
  auto error = [&](auto edit) {
    wire::ExecutionPlan bad = wire;
    edit(bad.plans[0].programs[0].rules);
    StatusOr<ExecutionPlan> decoded = decodePlanPayload(payloadOf(bad));
    return decoded.isOk() ? std::string("<accepted>")
                          : decoded.status().message();
  };
  auto has = [](const std::string &text, const char *part) {
    return text.find(part) != std::string::npos;
  };
  using Rules = std::vector<wire::RankRule>;
  EXPECT_TRUE(has(error([](Rules &r) {
                    wire::RankRule rule;
                    rule.__set_instruction(1);
                    rule.__set_peerShift(true);
                    r.push_back(rule);
                  }),
                  "a peer for a launch"));
  EXPECT_TRUE(has(error([](Rules &r) {
                    wire::RankRule rule;
                    rule.__set_instruction(99);
                    r.push_back(rule);
                  }),
                  "no such instruction"));
  EXPECT_TRUE(has(error([](Rules &r) {
                    wire::RankRule rule;
                    rule.__set_instruction(0);
                    rule.__set_offsetSlopes({1, 2, 3});
                    r.push_back(rule);
                  }),
                  "offset slopes that do not fit"));
  EXPECT_TRUE(has(error([](Rules &r) {
                    wire::RankRule rule;
                    rule.__set_instruction(0);
                    rule.__set_offsetSlopes({INT64_MAX / 2, INT64_MAX / 2});
                    r.push_back(rule);
                  }),
                  "overflow"));
  EXPECT_TRUE(has(error([](Rules &r) {
                    // The world communicator's family is itself: it holds
                    // every rank, so this rule is harmless; a pair's rule on
                    // the feed (no communicator) is not.
                    wire::RankRule rule;
                    rule.__set_instruction(0);
                    rule.__set_communicatorOfRank(true);
                    r.push_back(rule);
                  }),
                  "a communicator for a feed_buffer"));
}

/// The Thrift payload of `wire` (what decodePlanPayload reads).
std::string payloadOf(const wire::ExecutionPlan &wire) {
  auto buffer = std::make_shared<apache::thrift::transport::TMemoryBuffer>();
  apache::thrift::protocol::TCompactProtocolT<
      apache::thrift::transport::TMemoryBuffer>
      protocol(buffer);
  wire.write(&protocol);
  return buffer->getBufferAsString();
}

TEST(PlanSerialization, RankListsAreBoxesAndClassMembersOneEntry) {
  // Format 7: a list of ranks that is a box is stored as one (its size does
  // not grow with the ranks), communicators numbered on from the previous
  // leave their names out, and ranks running their class's stream as it is
  // are listed as the class's members, not an entry each.
  using detail::RankBox;
  auto box = [](std::vector<int64_t> ranks) { return detail::rankBox(ranks); };
  ASSERT_TRUE(box({5}));
  EXPECT_EQ(box({5})->offset, 5);
  EXPECT_TRUE(box({5})->sizes.empty());
  std::optional<RankBox> grid = box({0, 1, 2, 3, 8, 9, 10, 11});
  ASSERT_TRUE(grid);
  EXPECT_EQ(grid->sizes, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(grid->strides, (std::vector<int64_t>{8, 1}));
  EXPECT_TRUE(box({3, 1}));
  EXPECT_FALSE(box({0, 1, 2, 5}));
  EXPECT_FALSE(box({}));
  EXPECT_FALSE(box({INT64_MIN, INT64_MAX}));
  // A box expands to exactly the list it came from (random lists, some
  // boxes, most not).
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int64_t> ranks;
    if (trial % 2) {
      int64_t offset = static_cast<int64_t>(rng() % 50) - 25;
      std::vector<int64_t> sizes, strides;
      for (int d = 0, n = 1 + static_cast<int>(rng() % 3); d < n; ++d) {
        sizes.push_back(1 + static_cast<int64_t>(rng() % 4));
        strides.push_back(static_cast<int64_t>(rng() % 9) - 4);
      }
      int64_t budget = 1 << 20;
      RankBox made{offset, sizes, strides};
      ASSERT_FALSE(detail::expandRankBox(made, budget, ranks));
      // Whether the box holds a rank, asked without expanding it where
      // its strides nest, agrees with the expansion and spends as much.
      for (int64_t rank = -40; rank < 60; ++rank) {
        bool holds = true;
        int64_t spent = 1 << 20;
        ASSERT_FALSE(detail::rankBoxHolds(made, rank, spent, holds));
        EXPECT_EQ(spent, budget) << "trial " << trial;
        EXPECT_EQ(holds,
                  std::find(ranks.begin(), ranks.end(), rank) != ranks.end())
            << "trial " << trial << " rank " << rank;
      }
    } else {
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n; ++i)
        ranks.push_back(static_cast<int64_t>(rng() % 6));
    }
    std::optional<RankBox> b = box(ranks);
    if (!b)
      continue;
    std::vector<int64_t> back;
    int64_t budget = 1 << 20;
    ASSERT_FALSE(detail::expandRankBox(*b, budget, back));
    EXPECT_EQ(back, ranks) << "trial " << trial;
  }
  EXPECT_EQ(detail::nextNumberedName("f.comm9"), "f.comm10");
  EXPECT_EQ(detail::nextNumberedName("f.comm1299"), "f.comm1300");
  EXPECT_EQ(detail::nextNumberedName("7"), "8");
  EXPECT_EQ(detail::nextNumberedName("c0"), "c1");
  EXPECT_EQ(detail::nextNumberedName("world"), "");
  EXPECT_EQ(detail::nextNumberedName("f.comm07"), "");
  // k steps at once agree with k single steps.
  for (const char *name : {"f.comm9", "c0", "7", "x99999999999999999999"})
    for (int64_t k : {0, 1, 9, 10, 11, 99, 1001, 4095}) {
      std::string stepped = name;
      for (int64_t i = 0; i < k; ++i)
        stepped = detail::nextNumberedName(stepped);
      EXPECT_EQ(detail::numberedName(name, k), stepped) << name << " " << k;
    }
  EXPECT_EQ(detail::numberedName("world", 3), "");
  EXPECT_EQ(detail::numberedName("f.comm07", 3), "");

  // On a plan of 64 ranks: boxes, names left out, members, and the plan
  // read back as it was.
  ExecutionPlan plan = classPlan(64);
  for (size_t c = 1; c < plan.communicators.size(); ++c)
    plan.communicators[c].name = "pair" + std::to_string(c - 1);
  wire::ExecutionPlan wire = detail::toThrift(plan);
  EXPECT_TRUE(wire.meshes[0].rootRanks.__isset.box);
  EXPECT_FALSE(wire.meshes[0].rootRanks.__isset.ranks);
  EXPECT_TRUE(wire.topology[0].hosts[0].ranks.__isset.box);
  // The world, then the 32 pairs as one entry: pair0's members, repeated
  // shifted by 2, names numbering on.
  ASSERT_EQ(wire.communicators.size(), 2u);
  EXPECT_TRUE(wire.communicators[0].__isset.name); // world
  EXPECT_TRUE(wire.communicators[1].__isset.name); // pair0: not world + 1
  EXPECT_FALSE(wire.communicators[1].__isset.mesh);
  EXPECT_TRUE(wire.communicators[1].ranks.__isset.box);
  EXPECT_EQ(wire.communicators[1].repeat, 32);
  EXPECT_EQ(wire.communicators[1].shift, 2);
  // One pair that breaks the pattern ends the run; the next starts one.
  ExecutionPlan broken = plan;
  broken.communicators[10].ranks = {19, 18};
  EXPECT_EQ(detail::toThrift(broken).communicators.size(), 4u);
  StatusOr<ExecutionPlan> brokenBack = deserializePlan(serialized(broken));
  ASSERT_TRUE(brokenBack.isOk()) << brokenBack.status().toString();
  EXPECT_TRUE(brokenBack->communicators == broken.communicators);
  // (Ranks 18 and 19's pair is no longer a translate of the others: the
  // class's communicator rule gives them none, so a patch gives theirs; a
  // file whose rule found no communicator was refused by its own reader.)
  expectReadsBack(broken, {18, 19});
  // The classes that lost ranks 18 and 19 are boxes but for them: each is
  // stored as a few boxes (a worker of 4,096 ranks reads a handful of
  // numbers, not a list of 2,047), and every rank reads back its program.
  wire::ExecutionPlan brokenWire = detail::toThrift(broken);
  std::map<int32_t, int> pieces;
  for (const wire::ClassMembers &z : brokenWire.plans[0].members) {
    EXPECT_TRUE(z.ranks.__isset.box);
    ++pieces[z.program];
  }
  expectReadsBack(broken, {0, 1, 2, 16, 17, 20, 21, 62, 63});
  // A class that is a box but for its head ("1 + 16i + j but ..."): a run
  // and a box, not a list; an irregular list stays one list.
  std::vector<int64_t> butHead;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 8; ++j)
      if (i || j)
        butHead.push_back(16 * i + j);
  std::vector<std::vector<int64_t>> split = detail::boxPieces(butHead);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0], (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(split[1].front(), 16);
  EXPECT_TRUE(box(split[1]));
  EXPECT_EQ(detail::boxPieces({0, 1, 2, 5, 9, 30}),
            (std::vector<std::vector<int64_t>>{{0, 1, 2, 5, 9, 30}}));
  EXPECT_EQ(detail::boxPieces({4, 8, 60}),
            (std::vector<std::vector<int64_t>>{{4, 8, 60}}));
  // A class stored in two entries reads back whole, by either decode.
  wire::ExecutionPlan two = detail::toThrift(plan);
  ASSERT_TRUE(two.plans[0].members[0].ranks.__isset.box);
  std::vector<int64_t> all;
  int64_t budget = 1 << 20;
  const std::vector<int64_t> &b0 = two.plans[0].members[0].ranks.box;
  RankBox whole{b0[0], {}, {}};
  for (size_t i = 1; i < b0.size(); i += 2) {
    whole.sizes.push_back(b0[i]);
    whole.strides.push_back(b0[i + 1]);
  }
  ASSERT_FALSE(detail::expandRankBox(whole, budget, all));
  ASSERT_GE(all.size(), 4u);
  size_t half = all.size() / 2;
  wire::ClassMembers second = two.plans[0].members[0];
  two.plans[0].members[0].ranks.__set_ranks(
      std::vector<int64_t>(all.begin(), all.begin() + half));
  two.plans[0].members[0].ranks.__isset.box = false;
  second.ranks.__set_box({all[half], static_cast<int64_t>(all.size() - half),
                          all[half + 1] - all[half]});
  two.plans[0].members.push_back(second);
  std::string twoBytes = fileOf(two);
  StatusOr<ExecutionPlan> twoBack = deserializePlan(twoBytes);
  ASSERT_TRUE(twoBack.isOk()) << twoBack.status().toString();
  EXPECT_TRUE(twoBack->plans == plan.plans);
  for (int64_t rank : {all.front(), all[half - 1], all[half], all.back()}) {
    StatusOr<RankPlan> mine = deserializePlanForRank(twoBytes, rank);
    ASSERT_TRUE(mine.isOk()) << mine.status().toString();
    ASSERT_EQ(mine->plan.plans[0].programs.size(), 1u) << "rank " << rank;
    EXPECT_TRUE(mine->plan.plans[0].programs[0] == plan.plans[0].programs[rank])
        << "rank " << rank;
  }
  size_t entries = wire.plans[0].programs.size(), members = 0;
  for (const wire::ClassMembers &z : wire.plans[0].members) {
    ASSERT_TRUE(z.ranks.__isset.box);
    int64_t count = 1;
    for (size_t i = 1; i < z.ranks.box.size(); i += 2)
      count *= z.ranks.box[i];
    members += static_cast<size_t>(count);
  }
  EXPECT_GT(members, 0u);
  EXPECT_EQ(entries + members, 64u);
  expectReadsBack(plan, {4, 8, 60});

  // Hostile sets: a clear error, never a crash or a huge allocation.
  auto error = [&](auto edit) {
    wire::ExecutionPlan bad = wire;
    edit(bad);
    StatusOr<ExecutionPlan> decoded = decodePlanPayload(payloadOf(bad));
    return decoded.isOk() ? std::string("<accepted>")
                          : decoded.status().message();
  };
  auto has = [](const std::string &text, const char *part) {
    return text.find(part) != std::string::npos;
  };
  using W = wire::ExecutionPlan;
  EXPECT_TRUE(has(error([](W &w) {
                    w.meshes[0].rootRanks.__set_box(
                        {0, 1 << 30, 1, 1 << 30, 1});
                  }),
                  "hold more ranks than the plan may"));
  EXPECT_TRUE(
      has(error([](W &w) { w.communicators[0].ranks.__set_box({0, -3, 1}); }),
          "not positive"));
  EXPECT_TRUE(
      has(error([](W &w) { w.communicators[0].ranks.__set_ranks({0, 1}); }),
          "must either list its ranks or be a box"));
  EXPECT_TRUE(has(error([](W &w) { w.communicators[0].ranks = {}; }),
                  "must either list its ranks or be a box"));
  EXPECT_TRUE(has(error([](W &w) {
                    w.communicators[0].ranks.__set_box({INT64_MAX, 2, 1});
                  }),
                  "overflow"));
  EXPECT_TRUE(
      has(error([](W &w) { w.communicators[0].ranks.__set_box({0, 2, 1, 2}); }),
          "a rank box of 4 numbers"));
  EXPECT_TRUE(has(error([](W &w) { w.communicators[0].__isset.name = false; }),
                  "has no name"));
  EXPECT_TRUE(has(error([](W &w) { w.communicators[1].__set_repeat(1 << 30); }),
                  "more ranks than a plan may hold"));
  EXPECT_TRUE(has(error([](W &w) { w.communicators[1].__set_repeat(0); }),
                  "not positive"));
  EXPECT_TRUE(
      has(error([](W &w) { w.communicators[1].__set_shift(INT64_MAX); }),
          "shifted ranks overflow"));
  EXPECT_TRUE(has(error([](W &w) { w.communicators[1].__set_name("pair"); }),
                  "does not number on"));
  EXPECT_TRUE(has(error([](W &w) { w.communicators[0].__isset.mesh = false; }),
                  "names no mesh"));
  EXPECT_TRUE(has(error([](W &w) { w.plans[0].members[0].__set_program(1); }),
                  "not a program holding its own stream"));
  EXPECT_TRUE(has(error([](W &w) { w.plans[0].members[0].__set_program(-1); }),
                  "not a program holding its own stream"));
  EXPECT_TRUE(has(error([](W &w) {
                    // A member listed twice: the rank repeats.
                    w.plans[0].members.push_back(w.plans[0].members[0]);
                  }),
                  "repeated"));
}

TEST(PlanSerialization, HostileClassReferencesAreRefused) {
  // A program that shares a stream that is its own, later, or itself
  // shared; patches that name no instruction or a field the instruction
  // lacks; patches without a stream; a patched peer outside the mesh: each
  // a clear error, never a crash.
  wire::ExecutionPlan good = detail::toThrift(classPlan(4));
  ASSERT_TRUE(good.plans[0].programs[2].__isset.sharesWith);
  ASSERT_TRUE(decodePlanPayload(payloadOf(good)).isOk());
  auto error = [&](auto edit) {
    wire::ExecutionPlan bad = good;
    edit(bad.plans[0].programs);
    StatusOr<ExecutionPlan> plan = decodePlanPayload(payloadOf(bad));
    return plan.isOk() ? std::string("<accepted>") : plan.status().message();
  };
  using Programs = std::vector<wire::RankProgram>;
  auto has = [](const std::string &text, const char *part) {
    return text.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(error([](Programs &p) { p[2].__set_sharesWith(2); }),
                  "not an earlier program holding its own"));
  EXPECT_TRUE(has(error([](Programs &p) { p[1].__set_sharesWith(3); }),
                  "not an earlier program holding its own"));
  EXPECT_TRUE(has(error([](Programs &p) { p[3].__set_sharesWith(2); }),
                  "not an earlier program holding its own"));
  EXPECT_TRUE(has(error([](Programs &p) { p[2].__set_sharesWith(-5); }),
                  "not an earlier program holding its own"));
  EXPECT_TRUE(
      has(error([](Programs &p) { p[2].patches[0].__set_instruction(99); }),
          "no such instruction"));
  EXPECT_TRUE(has(error([](Programs &p) {
                    wire::RankPatch patch;
                    patch.__set_instruction(1);
                    patch.__set_peer(1);
                    p[2].patches.push_back(patch);
                  }),
                  "a peer for a launch"));
  EXPECT_TRUE(has(error([](Programs &p) {
                    wire::RankPatch patch;
                    patch.__set_instruction(0);
                    patch.__set_kernel(0);
                    p[2].patches.push_back(patch);
                  }),
                  "a kernel for a feed_buffer"));
  EXPECT_TRUE(has(error([](Programs &p) {
                    for (wire::RankPatch &patch : p[3].patches)
                      if (patch.__isset.kernel)
                        patch.__set_kernel(7);
                  }),
                  "kernel"));
  EXPECT_TRUE(has(error([](Programs &p) { p[0].__set_patches(p[2].patches); }),
                  "patches without a shared stream"));
  EXPECT_TRUE(has(error([](Programs &p) {
                    // (The ring's peers are a rule of the class: a patch
                    // overrides it.)
                    wire::RankPatch patch;
                    patch.__set_instruction(2);
                    patch.__set_peer(17);
                    p[2].patches.push_back(patch);
                  }),
                  "peer 17"));
  EXPECT_TRUE(has(
      error([](Programs &p) { p[2].__set_instructions(p[0].instructions); }),
      "has none"));
}

TEST(PlanSerialization, ShardedFetchesKeepTheirOffsets) {
  ExecutionPlan plan = shardedSample();
  ASSERT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).toString();
  StatusOr<ExecutionPlan> back = deserializePlan(serialized(plan));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == plan);
  EXPECT_EQ(back->plans[0].programs[1].instructions.back().io.offsets,
            std::vector<int64_t>{2});
  // A whole fetch has none, and says so by omitting the field.
  StatusOr<ExecutionPlan> whole = deserializePlan(serialized(samplePlan()));
  ASSERT_TRUE(whole.isOk());
  EXPECT_TRUE(
      whole->plans[0].programs[0].instructions.back().io.offsets.empty());
  std::string text = planToString(plan);
  EXPECT_NE(text.find("-> output 0 at [2]"), std::string::npos) << text;
}

TEST(PlanValidation, RejectsShardsOutsideTheirOutput) {
  auto refused = [](ExecutionPlan p) {
    Status s = validatePlan(p);
    EXPECT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("is not a shard of tensor<4xf32>"),
              std::string::npos)
        << s.message();
  };
  ExecutionPlan p = shardedSample();
  p.plans[0].programs[1].instructions.back().io.offsets = {3}; // 3 + 2 > 4
  refused(p);
  p = shardedSample();
  p.plans[0].programs[1].instructions.back().io.offsets = {-1};
  refused(p);
  p = shardedSample();
  p.plans[0].programs[1].instructions.back().io.offsets = {0, 0}; // rank
  refused(p);
  p = shardedSample();
  p.plans[0].programs[1].instructions.back().io.buffer.dtype = DType::F16;
  p.plans[0].programs[1].instructions.back().io.buffer.offset = 232;
  refused(p);
}

TEST(PlanValidation, ShardsMustTileTheirOutput) {
  auto refused = [](const ExecutionPlan &p, const std::string &needle) {
    Status s = validatePlan(p);
    ASSERT_FALSE(s.isOk()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  // Both ranks claim elements 0-1: 2 and 3 would come back as zeros.
  ExecutionPlan p = shardedSample();
  p.plans[0].programs[1].instructions.back().io.offsets = {0};
  refused(p, "two of its shards overlap");
  // Off the grid of its shape (elements 1-2 against 0-1): compared pairwise.
  p = shardedSample();
  p.plans[0].programs[1].instructions.back().io.offsets = {1};
  refused(p, "two of its shards overlap");
  // One shard only.
  p = shardedSample();
  p.plans[0].programs[1].instructions.pop_back();
  refused(p, "its shards hold 2 elements, the output 4");
  // Whole on one rank, a shard on the other.
  p = shardedSample();
  Instruction &fetch = p.plans[0].programs[0].instructions.back();
  fetch.io.offsets.clear();
  fetch.io.buffer = Buffer{240, DType::F32, {4}};
  refused(p, "fetched both whole and as shards");
}

TEST(PlanSerialization, ModifiedPlanCompareUnequal) {
  ExecutionPlan plan = samplePlan();
  ExecutionPlan other = plan;
  other.plans[0].programs[1].instructions[3].p2p.group.reset();
  EXPECT_FALSE(other == plan);
  StatusOr<ExecutionPlan> back = deserializePlan(serialized(other));
  ASSERT_TRUE(back.isOk());
  EXPECT_TRUE(*back == other);
  EXPECT_FALSE(*back == plan);
}

TEST(PlanSerialization, FileRoundTripIsAtomic) {
  auto dir = std::filesystem::temp_directory_path() /
             ("mcplan-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "x.mcplan").string();
  ExecutionPlan plan = samplePlan();
  ASSERT_TRUE(writePlanFile(plan, path).isOk());
  StatusOr<ExecutionPlan> back = readPlanFile(path);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == plan);
  // Only the plan is left behind: the temporary was renamed.
  size_t files = 0;
  for (auto &entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  StatusOr<ExecutionPlan> missing = readPlanFile((dir / "nope").string());
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
  StatusOr<ExecutionPlan> isDir = readPlanFile(dir.string());
  ASSERT_FALSE(isDir.isOk());
  EXPECT_NE(isDir.status().message().find("directory"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(PlanSerialization, EveryTruncationIsRejected) {
  std::string bytes = serialized(samplePlan());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string error = errorOf(std::string_view(bytes).substr(0, n));
    ASSERT_NE(error, "<accepted>") << "prefix of " << n << " bytes";
    EXPECT_NE(error.find("truncated"), std::string::npos)
        << n << " bytes: " << error;
  }
}

TEST(PlanSerialization, WrongMagicVersionChecksumAndTrailingBytes) {
  std::string bytes = serialized(samplePlan());
  std::string magic = bytes;
  magic[1] = 'X';
  EXPECT_NE(errorOf(magic).find("not a monarch plan file"), std::string::npos);
  EXPECT_NE(errorOf("hello, this is a text file with enough bytes")
                .find("not a monarch plan file"),
            std::string::npos);

  // Another version: the one before this build's (what an older compiler
  // wrote) and the one after.
  for (int other : {kPlanFormatVersion - 1, kPlanFormatVersion + 1}) {
    std::string version = bytes;
    version[8] = static_cast<char>(other);
    std::string expected =
        "plan format version " + std::to_string(other) + " is not supported";
    EXPECT_NE(errorOf(version).find(expected), std::string::npos)
        << errorOf(version);
    StatusOr<uint32_t> peek = peekPlanFormatVersion(version);
    ASSERT_TRUE(peek.isOk());
    EXPECT_EQ(*peek, static_cast<uint32_t>(other));
  }

  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x40;
  EXPECT_NE(errorOf(flipped).find("checksum"), std::string::npos);
  // The checksum changes with every single flipped bit of the payload,
  // whole words and tail alike.
  std::string payload = bytes.substr(kPlanHeaderSize);
  uint64_t sum = planChecksum(payload);
  for (size_t bit = 0; bit < 8 * payload.size(); ++bit) {
    payload[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    ASSERT_NE(planChecksum(payload), sum) << "bit " << bit;
    payload[bit / 8] ^= static_cast<char>(1 << (bit % 8));
  }
  EXPECT_NE(planChecksum(payload + "x"), sum);

  std::string trailing = bytes + "xyz";
  EXPECT_NE(errorOf(trailing).find("unexpected bytes"), std::string::npos);
}

TEST(PlanSerialization, CorruptPayloadsNeverCrash) {
  // Flip bytes of the payload and fix the checksum, so the decoder and the
  // validator see the damage. Every result is either a clean error or a plan
  // that validates.
  std::string bytes = serialized(samplePlan());
  std::mt19937_64 rng(7);
  size_t rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string damaged = bytes;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = kPlanHeaderSize + rng() % (bytes.size() - kPlanHeaderSize);
      damaged[at] = static_cast<char>(rng());
    }
    fixChecksum(damaged);
    StatusOr<ExecutionPlan> plan = deserializePlan(damaged);
    if (!plan.isOk()) {
      ++rejected;
      EXPECT_EQ(plan.status().code(), StatusCode::InvalidArgument);
      EXPECT_FALSE(plan.status().message().empty());
    } else {
      EXPECT_TRUE(validatePlan(*plan).isOk());
    }
  }
  EXPECT_GT(rejected, 100u);
}

TEST(PlanValidation, RejectsInconsistentPlans) {
  auto expectInvalid = [](ExecutionPlan plan, const std::string &needle) {
    Status s = validatePlan(plan);
    ASSERT_FALSE(s.isOk()) << "expected: " << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    // The serializer refuses it too.
    EXPECT_FALSE(serializePlan(plan).isOk());
  };
  ASSERT_TRUE(validatePlan(samplePlan()).isOk());
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[0].instructions[2].launch.kernel = 9;
    expectInvalid(p, "kernel index 9 out of range");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[0].instructions[2].launch.outs[0].offset = 250;
    expectInvalid(p, "lies outside the 256-byte arena");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[0].instructions[6].wait.events = {7};
    expectInvalid(p, "not an earlier asynchronous instruction");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[0].instructions[6].wait.events = {0};
    expectInvalid(p, "not an earlier asynchronous instruction");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[1].instructions[3].p2p.peer = 2;
    expectInvalid(p, "peer 2 outside mesh 'mesh'");
  }
  {
    ExecutionPlan p = samplePlan();
    p.communicators[0].ranks = {0};
    expectInvalid(p, "1 is not in communicator 'world'");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[0].instructions[0].io.index = 2;
    expectInvalid(p, "index 2 but the plan has 2 inputs");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[1].rank = 0;
    expectInvalid(p, "rank 0 is outside mesh 'mesh' or repeated");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[0].instructions[0].io.buffer.dtype =
        static_cast<DType>(42);
    expectInvalid(p, "unknown element type 42");
  }
  {
    ExecutionPlan p = samplePlan();
    p.plans[0].programs[0].instructions[0].io.buffer.shape = {int64_t{1} << 40,
                                                              int64_t{1} << 40};
    expectInvalid(p, "lies outside");
  }
  {
    ExecutionPlan p = samplePlan();
    p.controllers[0].results[0] = ValueRef{ValueKind::Fetched, 1, 0};
    expectInvalid(p, "not an earlier fetch_output");
  }
  {
    ExecutionPlan p = samplePlan();
    p.libraries[0].kernels[0].kernel = 5;
    expectInvalid(p, "kernel library 0: kernel index 5 out of range");
  }
  // The cuBLAS table of the CUDA library (library 1).
  {
    ExecutionPlan p = samplePlan();
    p.libraries[1].kernels[0].gemms[0].m = 0;
    expectInvalid(p, "kernel library 1, kernel 'k0' gemm 0: non-positive "
                     "dimension (m=0");
  }
  {
    ExecutionPlan p = samplePlan();
    p.libraries[1].kernels[0].gemms[0].lda = 1;
    expectInvalid(p, "leading dimension is smaller");
  }
  {
    ExecutionPlan p = samplePlan();
    p.libraries[1].kernels[0].gemms[0].b = "a3"; // k0 has 3 arguments
    expectInvalid(p, "bad operand 'a3'");
  }
  {
    ExecutionPlan p = samplePlan();
    p.libraries[1].kernels[0].gemms[0].c = "s1+x";
    expectInvalid(p, "bad operand 's1+x'");
  }
  {
    ExecutionPlan p = samplePlan();
    p.libraries[1].kernels[0].gemms[0].typeC = DType::I32;
    expectInvalid(p, "element types must be f32, f16, bf16 or f64");
  }
  {
    ExecutionPlan p = samplePlan();
    p.libraries[0].kernels[0].gemms = p.libraries[1].kernels[0].gemms;
    expectInvalid(p, "cuBLAS calls in a library for the cpu target");
  }
}

TEST(PlanPrinter, PrintsATablePerRank) {
  std::string text = planToString(samplePlan());
  EXPECT_NE(text.find("plan @step on @mesh"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0: arena 256 B, peak 200 B"), std::string::npos);
  EXPECT_NE(text.find("rank 1: arena 256 B"), std::string::npos);
  EXPECT_NE(text.find("send"), std::string::npos);
  EXPECT_NE(text.find("collective all_reduce avg"), std::string::npos);
  EXPECT_NE(text.find("model.py:12:5 linalg.matmul"), std::string::npos);
  EXPECT_NE(text.find("@192 tensor<4xf64> to 1 on @world"), std::string::npos)
      << text;
  EXPECT_NE(text.find("controller @train"), std::string::npos);
}

TEST(PlanPrinter, PrintsAClassOnceWithItsRules) {
  // A class of ranks prints its stream once, the rules that give each
  // member its peers, communicators and offsets, the members the rules give
  // entirely, and only the fields a rule does not give for the others;
  // rank lists print as boxes and runs of shifted communicators as one row
  // (a 4,096-rank plan printed 20 MB of each rank's differences and of
  // every member of every communicator).
  ExecutionPlan plan = classPlan(64);
  for (size_t c = 1; c < plan.communicators.size(); ++c)
    plan.communicators[c].name = "pair" + std::to_string(c - 1);
  std::string text = planToString(plan);
  auto has = [&text](const char *part) {
    return text.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has("@mesh  host localhost  ranks 64 ranks: 0..63")) << text;
  EXPECT_TRUE(has("@pair0 .. @pair31  on @mesh  ranks [0, 1] + 2c (c < 32)"))
      << text;
  EXPECT_TRUE(has("rules (rank r of the class; Δ: r's mesh coordinate minus "
                  "rank 0's):"))
      << text;
  EXPECT_TRUE(has("#0 feed_buffer: offsets [0] + [2Δgpus]")) << text;
  EXPECT_TRUE(has("#2 send: peer = r + 1 (around the mesh)")) << text;
  EXPECT_TRUE(has("#4 collective: on the communicator of @pair0's family "
                  "holding r"))
      << text;
  // Ranks 4k run the stream by the rules alone; the odd ranks differ in
  // their kernel, ranks 2 and 3 mod 4 in their broadcast's root.
  EXPECT_TRUE(has("ranks running this stream by the rules: [0, 4, 8, 12, 16, "
                  "20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60]"))
      << text;
  EXPECT_TRUE(has("rank 2: arena 64 B, peak 64 B, rank 0's stream and rules, "
                  "differing in"))
      << text;
  EXPECT_FALSE(has("rank 4: arena")) << text;
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 250) << text;
  // A class that is a box but for a rank running a stream of its own
  // prints as the box and that rank.
  ExecutionPlan holed = classPlan(64);
  for (RankProgram &program : holed.plans[0].programs) {
    program.instructions[1].launch.kernel = 0;
    program.instructions[4].collective.root = 0;
  }
  holed.plans[0].programs[20].instructions[1].launch.outs[0].offset = 40;
  std::string holedText = planToString(holed);
  EXPECT_NE(holedText.find("ranks running this stream by the rules: 63 ranks: "
                           "0..63 but [20]"),
            std::string::npos)
      << holedText;
  EXPECT_NE(holedText.find("  rank 20: arena 64 B"), std::string::npos);
  // --rank prints one rank in full.
  PrintOptions one;
  one.rank = 5;
  std::string five = planToString(plan, one);
  EXPECT_NE(five.find("rank 5: arena 64 B"), std::string::npos) << five;
  EXPECT_EQ(five.find("rules"), std::string::npos) << five;
  EXPECT_NE(five.find("to 6 on @world"), std::string::npos) << five;
}

} // namespace

// A rank's copy of an output kept resident (donation): round trips, is
// printed as such, and is not a second whole fetch of the output.
TEST(PlanSerialization, KeepOnlyFetchesRoundTrip) {
  ExecutionPlan plan = samplePlan();
  Instruction copy = plan.plans[0].programs[1].instructions.back();
  ASSERT_EQ(copy.kind, InstrKind::FetchBuffer);
  plan.plans[0].programs[1].instructions.back().io.keepOnly = true;
  ASSERT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).toString();
  StatusOr<ExecutionPlan> back = deserializePlan(serialized(plan));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == plan);
  EXPECT_TRUE(back->plans[0].programs[1].instructions.back().io.keepOnly);
  EXPECT_FALSE(back->plans[0].programs[0].instructions.back().io.keepOnly);
  std::string text = planToString(plan);
  EXPECT_NE(text.find("-> output 0 keep_only"), std::string::npos) << text;
}
