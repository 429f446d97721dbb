//===- Factory.cpp - createCommunicator() over the backends -----*- C++ -*-===//
//
// Checks the arguments every backend shares, then hands over to the Gloo or
// NCCL library. Lives above both so neither depends on the other. The CPU
// backend ("gloo") runs over shared memory when every member shares this
// host (decided during the shm rendezvous) unless MONARCH_SHM=0 or a
// network interface was named, and over Gloo TCP otherwise; when the
// members span hosts, the members of one host still send to each other
// over shared memory, and when every host holds as many members (two or
// more), the collectives run within the hosts over shared memory and
// across them over Gloo (HybridCommunicator.h; MONARCH_HIERARCHICAL).
//
//===----------------------------------------------------------------------===//

#include "GlooCommunicator.h"
#include "HybridCommunicator.h"
#include "NcclCommunicator.h"
#include "ShmCommunicator.h"

#include "monarch/Support/Knobs.h"

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
    std::vector<std::vector<int>> hosts = shm_backend::hostGroups(
        store, worldRank, members, name, options.timeout);
    std::vector<int> local = {worldRank};
    for (const std::vector<int> &h : hosts)
      if (std::find(h.begin(), h.end(), worldRank) != h.end())
        local = h;
    std::unique_ptr<Communicator> near;
    if (local.size() >= 2) {
      auto made = shm_backend::createShmCommunicator(
          store, worldRank, local,
          name + "/host" + std::to_string(local.front()), options);
      if (!made)
        return made.status();
      near = std::move(made).value();
    }
    // Hierarchical collectives need every host to hold the same number of
    // members (two or more, on two or more hosts) and every member its
    // shared memory; every member must reach the same answer, so they
    // agree on it through the store.
    bool even = hosts.size() >= 2 && hosts.front().size() >= 2 &&
                std::all_of(hosts.begin(), hosts.end(), [&](const auto &h) {
                  return h.size() == hosts.front().size();
                });
    bool hierarchical = shm_backend::allAgree(
        store, worldRank, members, name, "hierarchical",
        even && near && knobs::getBool(knobs::Id::Hierarchical).value,
        options.timeout);
    if (!near)
      return gloo;
    Hierarchy hierarchy;
    if (hierarchical) {
      size_t position =
          std::find(local.begin(), local.end(), worldRank) - local.begin();
      std::vector<int> cross;
      for (const std::vector<int> &h : hosts)
        cross.push_back(h[position]);
      auto made = gloo_backend::createGlooCommunicator(
          store, worldRank, cross, name + "/cross" + std::to_string(position),
          options);
      if (!made)
        return made.status();
      hierarchy.cross = std::move(made).value();
      auto gather = near->duplicate(name + "/gather");
      if (!gather)
        return gather.status();
      hierarchy.nearGather = std::move(gather).value();
      hierarchy.hosts = std::move(hosts);
      hierarchy.timeout = options.timeout;
      hierarchy.explicitTagsInOrder = shm_backend::allAgree(
          store, worldRank, members, name, "in-order",
          options.collectivesInPostingOrder, options.timeout);
    }
    return makeHybridCommunicator(std::move(gloo).value(), std::move(near),
                                  std::move(hierarchy));
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
