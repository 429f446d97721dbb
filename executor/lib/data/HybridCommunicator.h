//===- HybridCommunicator.h - One communicator over two transports -*- C++
//-*-===//
//
// The CPU backend's communicator when its members span hosts. Gloo TCP over
// every member (`wide`) carries send/recv across hosts and the collectives
// that have no hierarchical form; shared memory among the members of this
// process's host (`near`) carries send/recv between them (a pipeline stage
// handing to the next on the same host). Each pair of members agrees on the
// transport (they agree on whether they share a host), so tags and
// matching stay per transport.
//
// Hierarchical collectives. When every host holds the same number L >= 2
// of members and there are at least two hosts, each member also joins
// `cross`: Gloo TCP among the members that hold the same position on their
// hosts (the i-th member of every host). Then
//  * all_reduce runs in three steps, as NCCL's tree/ring-of-rings does:
//    all_reduce within the host (shared memory, at memory speed); all_reduce
//    across hosts of this member's slice of the buffer (1/L of it, so the L
//    members of a host share the network work and each host sends 2(H-1)/H
//    of the buffer in all, not 2(n-1)/n of it per member); broadcast of
//    each slice from its owner within the host. Every member gets the same
//    bits (the last step copies them).
//  * broadcast goes from the root to the member of its position on every
//    other host (`cross`), then from that member to its host (`near`).
//  * all_gather: each member's block to the members of its position on the
//    other hosts (`cross`), then those to its host (`near`), then into
//    place: every block crosses the network once per host, not once per
//    member.
//  * reduce_scatter: reduced within the host first (`near`, each member
//    keeping the blocks of its position on every host), then across
//    (`cross`, each keeping its own): the network carries (H-1)/H of a
//    member's share.
// all_gather and reduce_scatter above kHierarchicalAllGatherMaxBytes and
// kHierarchicalReduceScatterMaxBytes, all_to_all and averages of integers
// stay on `wide`. With `cross`, this
// object runs its groups one after another on a thread of its own (the steps of
// a group are posted on three communicators, which must see every member's
// groups in the same order).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_HYBRIDCOMMUNICATOR_H
#define MONARCH_EXECUTOR_DATA_HYBRIDCOMMUNICATOR_H

#include "monarch/Executor/Communicator.h"

#include <memory>
#include <vector>

namespace monarch::executor {

/// all_gather runs hierarchically up to this many bytes (its gathered
/// output), reduce_scatter up to the second (its input); larger ones stay on
/// Gloo. Their steps within the host work on buffers of the hybrid's own,
/// registered with shared memory so that the peers read them in place. On
/// two network namespaces of a 2-core VM (transfer_bench --netns, 2 hosts x
/// 2 ranks, two runs): all_gather 1.9-4.0x plain Gloo up to 1 MB, 1.01-1.46x
/// at 4 MB, 0.69-1.04x at 16 MB; reduce_scatter 1.5-1.8x up to 4 MB,
/// 1.01-1.28x at 16 MB, 1.18x at 64 MB (whose scratch, 1.5x the input,
/// stays resident: 16 MB bounds it).
inline constexpr size_t kHierarchicalAllGatherMaxBytes = size_t(4) << 20;
inline constexpr size_t kHierarchicalReduceScatterMaxBytes = size_t(16) << 20;

/// What the hierarchical collectives need besides the communicators.
struct Hierarchy {
  /// `cross`: Gloo over the members at this member's position on every
  /// host, in host order.
  std::unique_ptr<Communicator> cross;
  /// A duplicate of `near` for the steps of all_gather and reduce_scatter
  /// within the host, whose buffers lie in memory of the hybrid's own that
  /// it registers there (so shared memory reads them in place); null: they
  /// use `near` and plain buffers.
  std::unique_ptr<Communicator> nearGather;
  /// The members (world ranks) of every host, in host order (`cross`'s
  /// order); every host holds `near`'s number of them.
  std::vector<std::vector<int>> hosts;
  /// Collectives with explicit tags run hierarchically too: every member
  /// posts them on one object in one order (CommOptions::
  /// collectivesInPostingOrder, agreed by every member); otherwise only
  /// those with kAutoTag do, the rest stay on `wide`.
  bool explicitTagsInOrder = false;
  /// Bounds each step of a hierarchical collective.
  std::chrono::milliseconds timeout{30000};
};

/// `wide` over every member, `near` over this host's members (a subset of
/// `wide`'s world ranks with at least two members), and with `hierarchy`
/// (its `cross` not null) the hierarchical collectives.
std::unique_ptr<Communicator>
makeHybridCommunicator(std::unique_ptr<Communicator> wide,
                       std::unique_ptr<Communicator> near,
                       Hierarchy hierarchy = {});

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_DATA_HYBRIDCOMMUNICATOR_H
