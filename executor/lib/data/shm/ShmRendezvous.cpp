//===- ShmRendezvous.cpp - Members map each other's segments ----*- C++ -*-===//
//
// Three store rounds under "shm/<name>/": every member publishes its host
// identity, pid and the memfd of its new segment ("info/<rank>"); if they
// all share a host each maps the others' segments through /proc and says
// whether that worked ("mapped/<rank>"); once all have, the creators close
// their memfds, so the memory lives exactly as long as the mappings. Any
// member on another host, or any failed mapping, makes every member return
// "no shared memory" (the same answer everywhere, from the same keys).
//
//===----------------------------------------------------------------------===//

#include "ShmGroup.h"

#include <algorithm>
#include <sstream>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace monarch::executor::shm_backend {
namespace {

/// Waits for `rank/<r>` keys of every member; DeadlineExceeded naming the
/// missing ranks.
StatusOr<std::vector<std::string>>
gather(Store &store, const std::string &prefix, const std::string &what,
       const std::vector<int> &worldRanks, Clock::time_point deadline,
       std::chrono::milliseconds timeout, const std::string &name) {
  std::vector<std::string> keys;
  for (size_t r = 0; r < worldRanks.size(); ++r)
    keys.push_back(prefix + what + "/" + std::to_string(r));
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  Status st = store.wait(keys, std::max(left, std::chrono::milliseconds(1)));
  if (!st) {
    if (st.code() != StatusCode::DeadlineExceeded)
      return st.withContext("shm communicator '" + name + "'");
    std::string missing;
    for (size_t r = 0; r < keys.size(); ++r) {
      if (store.wait({keys[r]}, std::chrono::milliseconds(0)))
        continue;
      missing += (missing.empty() ? "" : ", ") + std::string("rank ") +
                 std::to_string(r) + " (world rank " +
                 std::to_string(worldRanks[r]) + ")";
    }
    return Status(StatusCode::DeadlineExceeded,
                  "shm communicator '" + name + "': " +
                      (missing.empty() ? std::string("a peer") : missing) +
                      " did not arrive within " +
                      std::to_string(timeout.count()) + " ms");
  }
  std::vector<std::string> values;
  for (const std::string &k : keys) {
    StatusOr<std::string> v = store.get(k, std::chrono::milliseconds(1000));
    if (!v)
      return v.status().withContext("shm communicator '" + name + "'");
    values.push_back(std::move(*v));
  }
  return values;
}

/// One member's "info/<rank>": "ok", its host identity, pid and memfd on
/// lines of their own ("none" when it could not create its segment).
struct MemberInfo {
  bool ok = false;
  std::string host;
  int pid = 0, fd = -1;
};
MemberInfo parseInfo(const std::string &text) {
  std::istringstream in(text);
  MemberInfo m;
  std::string ok;
  std::getline(in, ok);
  std::getline(in, m.host);
  in >> m.pid >> m.fd;
  m.ok = ok == "ok" && static_cast<bool>(in);
  return m;
}

} // namespace

StatusOr<std::shared_ptr<ShmGroup>>
ShmGroup::connect(Store &store, int worldRank, const std::vector<int> &ranks,
                  const std::string &name, const CommOptions &options) {
  auto it = std::find(ranks.begin(), ranks.end(), worldRank);
  if (it == ranks.end())
    return Status(StatusCode::InvalidArgument,
                  "shm communicator '" + name + "': world rank " +
                      std::to_string(worldRank) + " is not a member");
  int n = static_cast<int>(ranks.size());
  int rank = static_cast<int>(it - ranks.begin());
  auto deadline = Clock::now() + options.timeout;
  std::string prefix = "shm/" + name + "/";

  StatusOr<Segment> created = Segment::create(name, n, rank, kRingBytes);
  std::string info = "none";
  if (created)
    info = "ok\n" + hostIdentity() + "\n" + std::to_string(::getpid()) + "\n" +
           std::to_string(created->fd());
  Status st = store.set(prefix + "info/" + std::to_string(rank), info);
  if (!st)
    return st.withContext("shm communicator '" + name + "'");
  auto infos =
      gather(store, prefix, "info", ranks, deadline, options.timeout, name);
  if (!infos)
    return infos.status();

  std::vector<MemberInfo> members(n);
  bool shareable = true;
  for (int r = 0; r < n; ++r) {
    members[r] = parseInfo((*infos)[r]);
    if (!members[r].ok || members[r].host != members[0].host)
      shareable = false;
  }
  if (!shareable)
    return std::shared_ptr<ShmGroup>();

  std::shared_ptr<ShmGroup> group(new ShmGroup());
  group->rank_ = rank;
  group->worldRanks_ = ranks;
  group->name_ = name;
  group->timeout_ = options.timeout;
  group->collectivesInPostingOrder_ = options.collectivesInPostingOrder;
  group->oversubscribed_ = hostOversubscribed(options, group->size());
  group->segments_.resize(n);
  group->segments_[rank] = std::move(*created);
  std::string mapped = "ok";
  for (int r = 0; r < n && mapped == "ok"; ++r) {
    if (r == rank)
      continue;
    StatusOr<Segment> seg =
        Segment::open(members[r].pid, members[r].fd, n, r, kRingBytes);
    if (!seg)
      mapped = "rank " + std::to_string(rank) + ": " + seg.status().message();
    else
      group->segments_[r] = std::move(*seg);
  }
  st = store.set(prefix + "mapped/" + std::to_string(rank), mapped);
  if (!st)
    return st.withContext("shm communicator '" + name + "'");
  auto results =
      gather(store, prefix, "mapped", ranks, deadline, options.timeout, name);
  if (!results)
    return results.status();
  for (const std::string &r : *results)
    if (r != "ok")
      return std::shared_ptr<ShmGroup>(); // TCP instead
  // Every peer has opened our memfd: the mappings keep it alive now.
  group->segments_[rank].closeFd();

  group->peers_.resize(n);
  for (int r = 0; r < n; ++r) {
    Peer &peer = group->peers_[r];
    peer.pid = members[r].pid;
    if (r != rank && peer.pid != ::getpid())
      peer.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, peer.pid, 0));
  }
  return group;
}

std::vector<std::vector<int>> hostGroups(Store &store, int worldRank,
                                         const std::vector<int> &ranks,
                                         const std::string &name,
                                         std::chrono::milliseconds timeout) {
  std::string prefix = "shm/" + name + "/";
  auto infos = gather(store, prefix, "info", ranks, Clock::now() + timeout,
                      timeout, name);
  if (!infos || std::find(ranks.begin(), ranks.end(), worldRank) == ranks.end())
    return {{worldRank}};
  std::vector<std::string> hosts;
  std::vector<std::vector<int>> groups;
  for (size_t r = 0; r < ranks.size(); ++r) {
    MemberInfo m = parseInfo((*infos)[r]);
    if (!m.ok) { // a member without a segment shares with nobody
      groups.push_back({ranks[r]});
      hosts.emplace_back();
      continue;
    }
    auto at = std::find(hosts.begin(), hosts.end(), m.host);
    if (at == hosts.end()) {
      hosts.push_back(m.host);
      groups.push_back({ranks[r]});
    } else {
      groups[at - hosts.begin()].push_back(ranks[r]);
    }
  }
  return groups;
}

bool allAgree(Store &store, int worldRank, const std::vector<int> &ranks,
              const std::string &name, const std::string &question, bool mine,
              std::chrono::milliseconds timeout) {
  auto at = std::find(ranks.begin(), ranks.end(), worldRank);
  if (at == ranks.end())
    return false;
  std::string prefix = "shm/" + name + "/";
  if (!store.set(prefix + question + "/" + std::to_string(at - ranks.begin()),
                 mine ? "yes" : "no"))
    return false;
  auto answers = gather(store, prefix, question, ranks, Clock::now() + timeout,
                        timeout, name);
  if (!answers)
    return false;
  return std::all_of(answers->begin(), answers->end(),
                     [](const std::string &a) { return a == "yes"; });
}

} // namespace monarch::executor::shm_backend
