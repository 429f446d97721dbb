//===- RankProgramModel.cpp - Building the rank-program model ---*- C++ -*-===//
//
// Builds the model of RankProgramModel.h from the ops of rank programs.
//
//===----------------------------------------------------------------------===//

#include "RankProgramModel.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace monarch;
using namespace monarch::rankmodel;

unsigned RankProgramModel::bufferId(BufferAttr buffer) {
  auto [it, inserted] = bufferIds.try_emplace(buffer, buffers.size());
  if (inserted)
    buffers.push_back(buffer);
  return it->second;
}

void RankProgramModel::addProgram(RankProgramOp program) {
  Program prog;
  prog.op = program;
  prog.rank = program.getRank();
  prog.begin = instrs.size();
  prog.entryBegin = entries.size();
  // Per stream: its last entry and its number of entries.
  DenseMap<int64_t, std::pair<unsigned, unsigned>> streamEntries;
  // Per group id: its last member so far.
  DenseMap<uint64_t, unsigned> groupLast;
  DenseSet<uint64_t> reported;
  unsigned open = kNone; // entry of the group being extended
  unsigned gate = kNone;
  for (Operation &op : program.getBody().front()) {
    unsigned id = instrs.size();
    Instr in;
    in.op = &op;
    in.rank = prog.rank;
    in.pos = id - prog.begin;
    in.gate = gate;
    auto use = [&](BufferAttr buffer, bool write) {
      in.accesses.push_back({bufferId(buffer), write});
    };
    TypeSwitch<Operation *>(&op)
        .Case([&](LaunchOp launch) {
          in.kind = InstrKind::Launch;
          in.stream = launch.getStream();
          for (Attribute a : launch.getIns())
            use(cast<BufferAttr>(a), /*write=*/false);
          for (Attribute a : launch.getOuts())
            use(cast<BufferAttr>(a), /*write=*/true);
        })
        .Case([&](SendOp send) {
          in.kind = InstrKind::Send;
          in.stream = send.getStream();
          in.group = send.getGroup();
          in.peer = send.getPeer();
          in.comm = send.getCommAttr().getAttr();
          use(send.getBuffer(), /*write=*/false);
        })
        .Case([&](RecvOp recv) {
          in.kind = InstrKind::Recv;
          in.stream = recv.getStream();
          in.group = recv.getGroup();
          in.peer = recv.getPeer();
          in.comm = recv.getCommAttr().getAttr();
          use(recv.getBuffer(), /*write=*/true);
        })
        .Case([&](CollectiveOp coll) {
          in.kind = InstrKind::Collective;
          in.stream = coll.getStream();
          in.group = coll.getGroup();
          in.comm = coll.getCommAttr().getAttr();
          use(coll.getInput(), /*write=*/false);
          use(coll.getOutput(), /*write=*/true);
        })
        .Case([&](WaitOp) { in.kind = InstrKind::Wait; })
        .Case([&](FeedBufferOp feed) {
          in.kind = InstrKind::FeedBuffer;
          use(feed.getBuffer(), /*write=*/true);
        })
        .Case([&](FetchBufferOp fetch) {
          in.kind = InstrKind::FetchBuffer;
          use(fetch.getBuffer(), /*write=*/false);
        })
        .Case([&](StateBufferOp state) {
          in.kind = InstrKind::StateBuffer;
          use(state.getBuffer(), /*write=*/true);
        })
        .Case([&](PrintBuffersOp print) {
          in.kind = InstrKind::PrintBuffers;
          for (Attribute a : print.getBuffers())
            use(cast<BufferAttr>(a), /*write=*/false);
        });
    idOf[&op] = id;
    instrs.push_back(std::move(in));
    Instr &cur = instrs.back();
    if (!cur.isAsync()) {
      open = kNone;
      if (cur.kind == InstrKind::Wait)
        gate = id;
      continue;
    }
    SmallVector<unsigned> &onStream = prog.streams[cur.stream];
    cur.streamPos = onStream.size();
    onStream.push_back(id);

    bool extends = false;
    if (cur.group) {
      unsigned prev = open == kNone ? kNone : entries[open].last;
      if (prev != kNone && instrs[prev].group == cur.group) {
        extends = instrs[prev].stream == cur.stream;
        if (!extends && reported.insert(*cur.group).second)
          groupIssues.push_back({GroupIssue::SpansStreams, id, prev});
      } else if (auto it = groupLast.find(*cur.group);
                 it != groupLast.end() && reported.insert(*cur.group).second) {
        groupIssues.push_back({GroupIssue::NotAdjacent, id, it->second});
      }
      groupLast[*cur.group] = id;
    }
    if (extends) {
      entries[open].last = id;
      cur.entry = open;
      continue;
    }
    unsigned entry = entries.size();
    auto [it, inserted] =
        streamEntries.try_emplace(cur.stream, std::make_pair(kNone, 0u));
    entries.push_back({id, id, it->second.second, it->second.first});
    it->second = {entry, it->second.second + 1};
    cur.entry = entry;
    open = cur.group ? entry : kNone;
  }
  prog.end = instrs.size();
  prog.entryEnd = entries.size();
  programs.push_back(std::move(prog));
}

void RankProgramModel::addMember(RankMemberOp member, unsigned of) {
  const Program &from = programs[of];
  Program prog;
  prog.op = from.op;
  prog.rank = member.getRank();
  prog.member = true;
  prog.begin = instrs.size();
  prog.entryBegin = entries.size();
  unsigned delta = prog.begin - from.begin;
  unsigned entryDelta = prog.entryBegin - from.entryBegin;
  ArrayRef<int64_t> peers = member.getPeers();
  ArrayRef<Attribute> comms = member.getComms().getValue();
  size_t p = 0, c = 0;
  for (unsigned j = from.begin; j < from.end; ++j) {
    Instr in = instrs[j];
    in.rank = prog.rank;
    in.delta = delta;
    if (in.gate != kNone)
      in.gate += delta;
    if (in.entry != kNone)
      in.entry += entryDelta;
    if ((in.kind == InstrKind::Send || in.kind == InstrKind::Recv) &&
        p < peers.size())
      in.peer = peers[p++];
    if (in.kind == InstrKind::Collective && c < comms.size())
      if (auto ref = dyn_cast<FlatSymbolRefAttr>(comms[c++]))
        in.comm = ref.getAttr();
    instrs.push_back(std::move(in));
  }
  for (unsigned e = from.entryBegin; e < from.entryEnd; ++e) {
    Entry entry = entries[e];
    entry.first += delta;
    entry.last += delta;
    if (entry.prev != kNone)
      entry.prev += entryDelta;
    entries.push_back(entry);
  }
  for (const auto &[stream, ids] : from.streams) {
    SmallVector<unsigned> &mine = prog.streams[stream];
    for (unsigned id : ids)
      mine.push_back(id + delta);
  }
  prog.end = instrs.size();
  prog.entryEnd = entries.size();
  programs.push_back(std::move(prog));
}
