//===- Factory.cpp - createCommunicator() over the backends -----*- C++ -*-===//
//
// Checks the arguments every backend shares, then hands over to the Gloo or
// NCCL library. Lives above both so neither depends on the other. The CPU
// backend ("gloo") runs over shared memory when every member shares this
// host (decided during the shm rendezvous) unless MONARCH_SHM=0 or a
// network interface was named, and over Gloo TCP otherwise; when the
// members span hosts, the members of one host still send to each other
// over shared memory (HybridCommunicator.h).
//
//===----------------------------------------------------------------------===//

#include "GlooCommunicator.h"
#include "HybridCommunicator.h"
#include "NcclCommunicator.h"
#include "ShmCommunicator.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace monarch::executor {

StatusOr<std::unique_ptr<Communicator>>
createCommunicator(Backend backend, Store &store, int worldRank, int worldSize,
                   const std::vector<int> &ranks, const std::string &name,
                   const CommOptions &options) {
  std::string where =
      std::string(backendName(backend)) + " communicator '" + name + "'";
  auto invalid = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument, where + ": " + why);
  };
  if (name.empty())
    return invalid("empty name");
  if (worldSize <= 0)
    return invalid("world size " + std::to_string(worldSize));
  if (worldRank < 0 || worldRank >= worldSize)
    return invalid("rank " + std::to_string(worldRank) +
                   " outside a world of " + std::to_string(worldSize));
  if (options.timeout.count() <= 0)
    return invalid("timeout must be positive");
  std::vector<int> members = ranks;
  if (members.empty()) {
    members.resize(worldSize);
    std::iota(members.begin(), members.end(), 0);
  }
  std::set<int> seen;
  for (int r : members) {
    if (r < 0 || r >= worldSize)
      return invalid("member " + std::to_string(r) + " outside a world of " +
                     std::to_string(worldSize));
    if (!seen.insert(r).second)
      return invalid("member " + std::to_string(r) + " listed twice");
  }
  if (!seen.count(worldRank))
    return invalid("rank " + std::to_string(worldRank) + " is not a member");
  switch (backend) {
  case Backend::Gloo: {
    bool shm = options.interface.empty() && shm_backend::shmEnabled();
    if (shm) {
      auto one = shm_backend::createShmCommunicator(store, worldRank, members,
                                                    name, options);
      if (!one || *one)
        return one; // an error, or the shared-memory communicator
    }
    auto gloo = gloo_backend::createGlooCommunicator(store, worldRank, members,
                                                     name, options);
    if (!shm || !gloo)
      return gloo;
    // The members span hosts: this host's members (the same set for each of
    // them, from the rendezvous above) also get shared memory between them.
    std::vector<int> local = shm_backend::sameHostMembers(
        store, worldRank, members, name, options.timeout);
    if (local.size() < 2)
      return gloo;
    auto near = shm_backend::createShmCommunicator(
        store, worldRank, local, name + "/host" + std::to_string(local.front()),
        options);
    if (!near)
      return near.status();
    if (!*near)
      return gloo;
    return makeHybridCommunicator(std::move(gloo).value(),
                                  std::move(near).value());
  }
  case Backend::Nccl:
    return nccl_backend::createNcclCommunicator(store, worldRank, members, name,
                                                options);
  }
  return invalid("unknown backend");
}

Status backendAvailable(Backend backend) {
  if (backend == Backend::Gloo)
    return Status::ok();
  return nccl_backend::ncclAvailable();
}

} // namespace monarch::executor
