//===- HybridCommunicator.h - One communicator over two transports -*- C++
//-*-===//
//
// The CPU backend's communicator when its members span hosts: Gloo TCP over
// every member for collectives and for send/recv across hosts, and shared
// memory among the members of this process's host for send/recv between
// them (a pipeline stage handing to the next on the same host). Each pair
// of members agrees on the transport (they agree on whether they share a
// host), so tags and matching stay per transport. Collectives stay on Gloo:
// a hierarchical all-reduce (reduce on each host, across hosts, broadcast
// on each) is not built yet.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_HYBRIDCOMMUNICATOR_H
#define MONARCH_EXECUTOR_DATA_HYBRIDCOMMUNICATOR_H

#include "monarch/Executor/Communicator.h"

#include <memory>

namespace monarch::executor {

/// `wide` over every member, `near` over this host's members (a subset of
/// `wide`'s world ranks with at least two members).
std::unique_ptr<Communicator>
makeHybridCommunicator(std::unique_ptr<Communicator> wide,
                       std::unique_ptr<Communicator> near);

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_DATA_HYBRIDCOMMUNICATOR_H
