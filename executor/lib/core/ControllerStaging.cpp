//===- ControllerStaging.cpp - Feeds and fetches through shared memory ----===//
//
// A worker on the controller's host (same host, kernel, pid namespace and
// user: RankState::sameHost) gets its large feeds and returns its large
// fetches through a SharedArea the controller owns, one per rank, instead of
// inside the Thrift messages: a 256 KB input then costs one memcpy each way
// rather than a serialization, two socket copies and a parse. Small tensors
// stay in the message, where they cost less than the bookkeeping. The area
// grows (a new memfd, twice the size) when a step needs more; the worker
// maps it again when the request names another one. docs/executor.md,
// "Same-host fast path".
//
//===----------------------------------------------------------------------===//
#include "ControllerImpl.h"

#include "monarch/Executor/BufferPool.h"
#include "monarch/Executor/Npy.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <unistd.h>

namespace monarch::executor {
namespace {

/// Tensors below this travel in the message.
constexpr int64_t kStageMinBytes = 16 << 10;
constexpr size_t kMinAreaBytes = size_t(1) << 20;

int64_t aligned(int64_t n) { return (n + 63) / 64 * 64; }

int64_t tensorBytes(const std::pair<std::string, std::vector<int64_t>> &type) {
  int64_t n = static_cast<int64_t>(dtypeBytes(type.first));
  for (int64_t d : type.second)
    n *= d;
  return n;
}

} // namespace

Status Controller::Impl::stageRequests(
    const PlanSignature &sig, const std::vector<const HostTensor *> &inputs,
    const std::map<std::pair<int, int>, std::string> &shards,
    std::vector<control::RunStepRequest> &requests) {
  int n = static_cast<int>(requests.size());
  // The bytes rank `r` is fed for `feed`: its shard, or the whole input.
  auto dataOf = [&](int r, const control::Feed &feed) -> const std::string & {
    auto it = shards.find({r, feed.index});
    return it != shards.end() ? it->second : inputs[feed.index]->data;
  };
  // Room for every large fetch: a rank may fetch any of them.
  int64_t fetchRoom = 0;
  for (auto &[index, type] : sig.fetches)
    if (int64_t b = tensorBytes(type); b >= kStageMinBytes)
      fetchRoom += aligned(b);
  if (staging.size() != static_cast<size_t>(n))
    staging.resize(n);
  auto large = [&](int r, const control::Feed &feed) {
    return static_cast<int64_t>(dataOf(r, feed).size()) >= kStageMinBytes;
  };
  for (int r = 0; r < n; ++r) {
    control::RunStepRequest &request = requests[r];
    bool sameHost;
    {
      std::lock_guard<std::mutex> lock(mutex);
      sameHost = workers.ranks[r].sameHost;
    }
    int64_t feedRoom = 0;
    for (const control::Feed &feed : request.feeds)
      if (large(r, feed))
        feedRoom += aligned(static_cast<int64_t>(dataOf(r, feed).size()));
    SharedArea *area = nullptr;
    if (sameHost && feedRoom + fetchRoom > 0) {
      std::unique_ptr<SharedArea> &slot = staging[r];
      auto need = static_cast<size_t>(feedRoom + fetchRoom);
      if (!slot || slot->bytes() < need) {
        size_t size = slot ? slot->bytes() : kMinAreaBytes;
        while (size < need)
          size *= 2;
        auto created =
            SharedArea::create("staging-rank-" + std::to_string(r), size);
        if (created.isOk()) {
          slot = std::make_unique<SharedArea>(std::move(created).value());
          spdlog::debug("staging area of rank {}: {} bytes", r, size);
        } else {
          // No memfd (or no memory for it): the message path still works.
          spdlog::warn("staging area of rank {} ({} bytes): {}; sending its "
                       "tensors in the messages",
                       r, size, created.status().message());
          slot.reset();
        }
      }
      area = slot.get();
    }
    int64_t offset = 0;
    for (control::Feed &feed : request.feeds) {
      const std::string &data = dataOf(r, feed);
      if (!area || !large(r, feed)) {
        feed.tensor.data = data;
        continue;
      }
      std::memcpy(area->data() + offset, data.data(), data.size());
      feed.stagingOffset = offset;
      feed.stagingBytes = static_cast<int64_t>(data.size());
      offset += aligned(feed.stagingBytes);
    }
    if (!area)
      continue;
    request.staging.pid = ::getpid();
    request.staging.fd = area->fd();
    request.staging.bytes = static_cast<int64_t>(area->bytes());
    request.staging.fetchOffset = offset;
    request.staging.minFetchBytes = kStageMinBytes;
    request.__isset.staging = true;
  }
  return Status::ok();
}

StatusOr<std::string> Controller::Impl::fetchedBytes(int r, control::Fetch &f) {
  if (f.stagingOffset < 0)
    return std::move(f.tensor.data);
  const SharedArea *area =
      r < static_cast<int>(staging.size()) ? staging[r].get() : nullptr;
  if (!area || f.stagingBytes < 0 ||
      f.stagingOffset + f.stagingBytes > static_cast<int64_t>(area->bytes()))
    return Status(StatusCode::Internal,
                  "rank " + std::to_string(r) + " returned fetch " +
                      std::to_string(f.index) + " outside its staging area");
  std::string bytes = takeBytes(static_cast<size_t>(f.stagingBytes));
  std::memcpy(bytes.data(), area->data() + f.stagingOffset, bytes.size());
  return bytes;
}

} // namespace monarch::executor
