//===- GlooGroup.h - Gloo connections shared by communicators ---*- C++ -*-===//
//
// A GlooGroup is one Gloo full-mesh context (a TCP pair per peer) over the
// members of a communicator, shared by the communicator and its duplicates.
// It owns the fail-fast state: the first transport failure, timeout or
// abort() breaks the group, closes every pair (so blocked peers fail within
// milliseconds instead of waiting for their own deadline) and makes all later
// ops fail with that first status. It also turns Gloo's exception text, which
// names socket addresses, into statuses that name ranks.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_GLOO_GLOOGROUP_H
#define MONARCH_EXECUTOR_DATA_GLOO_GLOOGROUP_H

#include "core/ConnectionGroup.h"

#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace gloo {
class Context;
} // namespace gloo

namespace monarch::executor::gloo_backend {

class GlooCommunicator;

/// Gloo tags of collectives: (duplicate id << 24 | hash of sequence and
/// shape) for automatic sequencing, (0x80 | shape hash) << 24 | low 24 bits
/// of the tag for explicit tags. The connection check runs before any op.
inline constexpr uint32_t kConnectTag = 0xffffffffu;

class GlooGroup final : public data::ConnectionGroup<GlooCommunicator> {
public:
  /// Rendezvous of the members through `store` under `name`; `rank` and
  /// `ranks` are as in createCommunicator().
  static StatusOr<std::shared_ptr<GlooGroup>>
  connect(Store &store, int worldRank, const std::vector<int> &ranks,
          const std::string &name, const CommOptions &options);
  ~GlooGroup();

  const std::shared_ptr<::gloo::Context> &context() const { return context_; }
  const CommOptions &options() const { return options_; }

  /// Converts an exception thrown by Gloo while running `what` into a status
  /// naming the peer rank where Gloo's message names its address.
  Status statusFromException(std::exception_ptr error, const std::string &what);

private:
  GlooGroup() = default;
  /// Shuts the pairs' sockets down (breakWith()).
  void breakLocked() override;
  std::string rankOfAddressIn(const std::string &message) const;

  std::shared_ptr<::gloo::Context> context_;
  std::shared_ptr<void> device_; // keeps the shared TCP device alive
  CommOptions options_;
  /// "[127.0.0.1]:40001"-style socket addresses of each peer's pairs.
  std::vector<std::pair<std::string, int>> peerAddresses_;
  /// This group's pair sockets (fd, "socket:[inode]") and their local
  /// addresses.
  std::vector<std::pair<int, std::string>> sockets_;
  std::vector<std::string> localAddresses_;
};

} // namespace monarch::executor::gloo_backend

#endif // MONARCH_EXECUTOR_DATA_GLOO_GLOOGROUP_H
