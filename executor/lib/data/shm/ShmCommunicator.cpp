//===- ShmCommunicator.cpp - The shared-memory communicator -----*- C++ -*-===//
//
// Groups run like Gloo's: every send and receive of the group is handed to
// the ShmGroup first (so the group cannot deadlock against the peer's),
// then the collectives run one after another, then the sends and receives
// are waited for against the group's deadline. Sends to self pair with
// receives from self of the same group. The first failure breaks the group.
//
//===----------------------------------------------------------------------===//

#include "ShmCommunicator.h"
#include "core/Reduction.h"
#include "monarch/Support/Knobs.h"

#include <cstdlib>
#include <cstring>

namespace monarch::executor::shm_backend {
namespace {

using data::isP2P;

} // namespace

bool shmEnabled() { return knobs::getBool(knobs::Id::Shm).value; }

ShmCommunicator::ShmCommunicator(std::shared_ptr<ShmGroup> group,
                                 std::string name, uint32_t duplicateId)
    : GroupCommunicator(std::move(group), std::move(name), duplicateId, "shm") {
  group_->attach(this);
}

ShmCommunicator::~ShmCommunicator() {
  shutDown();
  group_->detach(this);
}

std::shared_ptr<Work> ShmCommunicator::post(std::vector<CommOp> ops) {
  if (std::shared_ptr<Work> refused = refusal(ops))
    return refused;
  Entry entry;
  entry.ops = std::move(ops);
  entry.work = std::make_shared<Work>();
  std::shared_ptr<Work> work = entry.work;
  queue_.push([&](bool idle) {
    entry.collectiveTags =
        data::collectiveTags(entry.ops, duplicateId_, collectiveSeq_);
    // An idle object starts the group's sends and receives on the posting
    // thread (never blocking: one progress pass if nobody else is making
    // progress), so a send's bytes leave without waiting for the worker
    // thread to wake; the worker thread then only waits. Groups with a send
    // or receive to self keep the worker's checks (they may fail before
    // anything is posted).
    bool self =
        std::any_of(entry.ops.begin(), entry.ops.end(), [&](const CommOp &op) {
          return isP2P(op) && op.peer == rank();
        });
    if (idle && !self) {
      prepareP2P(entry, rank());
      for (ShmRequest &r : entry.p2p)
        group_->post(&r);
      entry.preposted = true;
      if (!entry.p2p.empty())
        group_->tryProgress();
    }
    return std::move(entry);
  });
  return work;
}

std::shared_ptr<Work> ShmCommunicator::postAndRun(std::vector<CommOp> ops) {
  return postAndRunUntil(std::move(ops), Clock::time_point::max());
}

std::shared_ptr<Work>
ShmCommunicator::postAndRunUntil(std::vector<CommOp> ops,
                                 Clock::time_point deadline) {
  if (std::any_of(ops.begin(), ops.end(),
                  [](const CommOp &op) { return isP2P(op); }))
    return post(std::move(ops));
  if (std::shared_ptr<Work> refused = refusal(ops))
    return refused;
  Entry entry;
  entry.ops = std::move(ops);
  entry.work = std::make_shared<Work>();
  if (deadline != Clock::time_point::max())
    entry.deadline = deadline;
  return queue_.pushOrRun([&](bool) {
    entry.collectiveTags =
        data::collectiveTags(entry.ops, duplicateId_, collectiveSeq_);
    return std::move(entry);
  });
}

Status ShmCommunicator::failed(Status st, const CommOp *op,
                               const ShmRequest *culprit) {
  if (st.code() != StatusCode::DeadlineExceeded || !op)
    return st;
  if (!isP2P(*op))
    return Status(st.code(), st.message() +
                                 "; every member must post the same "
                                 "collective (kind, count, type, reduction, "
                                 "root) in the same order");
  size_t bytes = culprit ? culprit->bytes : op->count * dtypeSize(op->dtype);
  return Status(st.code(),
                st.message() + "; the peer posted no matching " +
                    (op->kind == CommOpKind::Send ? "recv" : "send") + " of " +
                    std::to_string(bytes) + " bytes with tag " +
                    std::to_string(op->tag == kAutoTag ? 0 : op->tag) +
                    " (sizes and tags must agree)");
}

void ShmCommunicator::prepareP2P(Entry &entry, int rank) {
  for (const CommOp &op : entry.ops)
    if (isP2P(op) && op.count != 0 && op.peer != rank)
      entry.p2pOps.push_back(&op);
  entry.p2p.resize(entry.p2pOps.size());
  for (size_t i = 0; i < entry.p2pOps.size(); ++i) {
    const CommOp &op = *entry.p2pOps[i];
    ShmRequest &r = entry.p2p[i];
    r.isSend = op.kind == CommOpKind::Send;
    r.peer = op.peer;
    r.tag = op.tag == kAutoTag ? 0 : op.tag;
    r.bytes = op.count * dtypeSize(op.dtype);
    r.src = static_cast<const char *>(op.input);
    r.dst = static_cast<char *>(op.output);
  }
}

Status ShmCommunicator::runEntry(Entry &entry) {
  auto deadline = Clock::now() + group_->timeout();
  if (entry.deadline && *entry.deadline < deadline)
    deadline = *entry.deadline;
  std::vector<const CommOp *> selfSends, selfRecvs;
  for (const CommOp &op : entry.ops)
    if (isP2P(op) && op.count != 0 && op.peer == rank())
      (op.kind == CommOpKind::Send ? selfSends : selfRecvs).push_back(&op);
  for (const CommOp *send : selfSends) {
    auto it =
        std::find_if(selfRecvs.begin(), selfRecvs.end(),
                     [&](const CommOp *r) { return r->tag == send->tag; });
    if (it == selfRecvs.end())
      return Status(StatusCode::InvalidArgument,
                    "shm " + send->describe() +
                        ": a send to self needs a receive from self with the "
                        "same tag in the same group");
    size_t bytes = send->count * dtypeSize(send->dtype);
    if ((*it)->count * dtypeSize((*it)->dtype) != bytes)
      return Status(StatusCode::InvalidArgument,
                    "shm " + send->describe() +
                        ": size differs from the matching receive from self");
    std::memmove((*it)->output, send->input, bytes);
    selfRecvs.erase(it);
  }
  if (!selfRecvs.empty())
    return Status(StatusCode::InvalidArgument,
                  "shm " + selfRecvs.front()->describe() +
                      ": a receive from self needs a send to self with the "
                      "same tag in the same group");

  // Point-to-point ops: handed over at once (by post() when the object was
  // idle), waited for last.
  if (!entry.preposted) {
    prepareP2P(entry, rank());
    for (ShmRequest &r : entry.p2p)
      group_->post(&r);
  }
  std::vector<ShmRequest> &p2p = entry.p2p;
  const std::vector<const CommOp *> &p2pOps = entry.p2pOps;
  std::vector<ShmRequest *> waitFor;
  for (ShmRequest &r : p2p)
    waitFor.push_back(&r);

  auto fail = [&](Status st) {
    // Complete first so that the op reports its own failure, not the
    // Aborted that breaking the group gives everything else.
    entry.work->complete(st);
    group_->breakWith(st);
    return st;
  };
  size_t c = 0;
  for (const CommOp &op : entry.ops) {
    if (isP2P(op))
      continue;
    uint32_t tag = entry.collectiveTags[c++];
    if (op.count == 0)
      continue;
    Status st = runCollective(op, tag, deadline);
    if (!st)
      return fail(st);
  }
  if (!waitFor.empty()) {
    const ShmRequest *culprit = nullptr;
    std::string what = waitFor.size() == 1
                           ? p2pOps[0]->describe()
                           : std::to_string(waitFor.size()) + " sends/recvs";
    Status st = group_->wait(waitFor, deadline, what, &culprit);
    if (!st) {
      const CommOp *op = p2pOps[0];
      for (size_t i = 0; i < p2p.size(); ++i)
        if (&p2p[i] == culprit)
          op = p2pOps[i];
      if (waitFor.size() > 1)
        st = Status(st.code(),
                    st.message() + " (waiting for " + op->describe() + ")");
      return fail(failed(st, op, culprit));
    }
  }
  return Status::ok();
}

StatusOr<std::unique_ptr<Communicator>>
createShmCommunicator(Store &store, int worldRank,
                      const std::vector<int> &ranks, const std::string &name,
                      const CommOptions &options) {
  try {
    auto group = ShmGroup::connect(store, worldRank, ranks, name, options);
    if (!group)
      return group.status();
    if (!*group)
      return std::unique_ptr<Communicator>();
    return std::unique_ptr<Communicator>(
        std::make_unique<ShmCommunicator>(std::move(*group), name, 0));
  } catch (const std::exception &e) {
    return Status(StatusCode::Internal,
                  "shm communicator '" + name + "': " + e.what());
  }
}

} // namespace monarch::executor::shm_backend
