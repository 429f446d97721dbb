//===- GlooGroup.cpp - Gloo rendezvous, fail-fast state ---------*- C++ -*-===//
//
// Rendezvous runs Gloo's full-mesh connect over an adapter from our Store to
// gloo::rendezvous::Store; the adapter turns store failures into a typed
// exception (so a missing rank becomes DeadlineExceeded naming it). After
// connecting, members exchange their sockets' local addresses, which lets us
// name the rank behind a socket address in Gloo's errors. TCP devices (a
// listening socket and an event loop) are shared per address by every group
// of the process.
//
//===----------------------------------------------------------------------===//

#include "GlooGroup.h"
#include "GlooCommunicator.h"

#include <gloo/alltoall.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <csignal>
#include <dirent.h>
#include <set>
#include <sys/socket.h>

namespace monarch::executor::gloo_backend {
namespace {

/// A store failure carried through Gloo's frames as an exception.
struct StoreFailure : std::runtime_error {
  explicit StoreFailure(Status s)
      : std::runtime_error(s.toString()), status(std::move(s)) {}
  Status status;
};

class StoreAdapter final : public ::gloo::rendezvous::Store {
public:
  StoreAdapter(executor::Store &store, std::string prefix,
               std::chrono::milliseconds timeout,
               const std::vector<int> &worldRanks)
      : store_(store), prefix_(std::move(prefix) + "/"), timeout_(timeout),
        worldRanks_(worldRanks) {}

  void set(const std::string &key, const std::vector<char> &data) override {
    Status st =
        store_.set(prefix_ + key, std::string(data.begin(), data.end()));
    if (!st)
      throw StoreFailure(st.withContext("gloo rendezvous: set '" + key + "'"));
  }

  std::vector<char> get(const std::string &key) override {
    StatusOr<std::string> value = store_.get(prefix_ + key, timeout_);
    if (!value)
      throw StoreFailure(missing({key}, value.status()));
    values_[key] = *value;
    return std::vector<char>(value->begin(), value->end());
  }

  void wait(const std::vector<std::string> &keys) override {
    wait(keys, timeout_);
  }

  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override {
    Status st = store_.wait(prefixed(keys), timeout);
    if (!st)
      throw StoreFailure(missing(keys, st));
  }

  /// Values read so far; Gloo reads each peer's pair addresses under the
  /// peer's rank number.
  const std::map<std::string, std::string> &values() const { return values_; }

private:
  std::vector<std::string> prefixed(const std::vector<std::string> &keys) {
    std::vector<std::string> out;
    for (const std::string &k : keys)
      out.push_back(prefix_ + k);
    return out;
  }

  /// Names the ranks whose keys are missing when keys are rank numbers.
  Status missing(const std::vector<std::string> &keys, const Status &st) {
    if (st.code() != StatusCode::DeadlineExceeded)
      return st.withContext("gloo rendezvous '" + prefix_ + "'");
    std::string ranks;
    for (const std::string &k : keys) {
      if (store_.wait({prefix_ + k}, std::chrono::milliseconds(0)))
        continue;
      std::string who = k;
      if (!k.empty() && std::all_of(k.begin(), k.end(), ::isdigit)) {
        size_t r = std::stoul(k);
        who = "rank " + k;
        if (r < worldRanks_.size())
          who += " (world rank " + std::to_string(worldRanks_[r]) + ")";
      }
      ranks += (ranks.empty() ? "" : ", ") + who;
    }
    if (ranks.empty())
      ranks = "a peer";
    return Status(StatusCode::DeadlineExceeded,
                  "gloo rendezvous '" + prefix_.substr(0, prefix_.size() - 1) +
                      "': " + ranks + " did not arrive within " +
                      std::to_string(timeout_.count()) + " ms");
  }

  executor::Store &store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::vector<int> worldRanks_;
  std::map<std::string, std::string> values_;
};

struct SocketInfo {
  int fd;
  bool listening;
  std::string inode;  // "socket:[123]", to tell a reused fd number apart
  std::string local;  // Gloo's spelling of the local address
  std::string remote; // and of the peer's (empty when not connected)
};

/// "socket:[inode]" of `fd`, or "" when it is not open.
std::string fdTarget(int fd) {
  char link[64] = {0};
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
  return n > 0 ? std::string(link, n) : std::string();
}

std::string glooSpelling(const sockaddr_storage &ss, socklen_t len) {
  // Gloo's own spelling, whatever it does with byte order.
  return ::gloo::transport::tcp::Address(
             reinterpret_cast<const sockaddr *>(&ss), len)
      .str();
}

/// This process's TCP sockets.
std::vector<SocketInfo> tcpSockets() {
  std::vector<SocketInfo> out;
  DIR *dir = ::opendir("/proc/self/fd");
  if (!dir)
    return out;
  while (dirent *entry = ::readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (fd <= 2 || fd == ::dirfd(dir))
      continue;
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0)
      continue;
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
      continue;
    int listening = 0;
    socklen_t optlen = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0)
      continue;
    sockaddr_storage peer;
    socklen_t peerLen = sizeof(peer);
    std::string remote;
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peerLen) == 0)
      remote = glooSpelling(peer, peerLen);
    out.push_back(
        {fd, listening != 0, fdTarget(fd), glooSpelling(ss, len), remote});
  }
  ::closedir(dir);
  return out;
}

/// The pair addresses the peers advertised (read by Gloo's rendezvous under
/// their rank numbers), with the rank of each.
std::vector<std::pair<std::string, int>>
adapterPairAddressOwners(const StoreAdapter &adapter, const GlooGroup &group) {
  std::vector<std::pair<std::string, int>> out;
  int peers = group.size() - 1;
  for (const auto &[k, blob] : adapter.values()) {
    if (k.empty() || !std::all_of(k.begin(), k.end(), ::isdigit) ||
        peers <= 0 || blob.size() % peers != 0)
      continue;
    int r = std::stoi(k);
    size_t chunk = blob.size() / peers;
    for (int i = 0; i < peers; ++i) {
      try {
        std::vector<char> bytes(blob.begin() + i * chunk,
                                blob.begin() + (i + 1) * chunk);
        out.emplace_back(::gloo::transport::tcp::Address(bytes).str(), r);
      } catch (const std::exception &) {
      }
    }
  }
  return out;
}

std::set<std::string> adapterPairAddresses(const StoreAdapter &adapter,
                                           const GlooGroup &group) {
  std::set<std::string> out;
  for (const auto &[addr, r] : adapterPairAddressOwners(adapter, group))
    out.insert(addr);
  return out;
}

/// One TCP device per listening address, shared while any group uses it.
std::shared_ptr<::gloo::transport::Device>
sharedDevice(const CommOptions &options) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<::gloo::transport::Device>> cache;
  std::string key = options.interface.empty() ? "host:" + options.hostname
                                              : "iface:" + options.interface;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto dev = cache[key].lock())
    return dev;
  ::gloo::transport::tcp::attr attr;
  if (options.interface.empty())
    attr.hostname = options.hostname;
  else
    attr.iface = options.interface;
  auto dev = ::gloo::transport::tcp::CreateDevice(attr);
  cache[key] = dev;
  return dev;
}

} // namespace

StatusOr<std::shared_ptr<GlooGroup>>
GlooGroup::connect(Store &store, int worldRank, const std::vector<int> &ranks,
                   const std::string &name, const CommOptions &options) {
  auto it = std::find(ranks.begin(), ranks.end(), worldRank);
  if (it == ranks.end())
    return Status(StatusCode::InvalidArgument,
                  "gloo communicator '" + name + "': world rank " +
                      std::to_string(worldRank) + " is not a member");
  // Gloo writes to sockets with writev(2), which raises SIGPIPE when a
  // peer has gone; its default action would kill this rank instead of
  // failing the op. Ignore it unless the program installed a handler.
  static std::once_flag sigpipeOnce;
  std::call_once(sigpipeOnce, [] {
    struct sigaction current;
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 &&
        current.sa_handler == SIG_DFL)
      ::signal(SIGPIPE, SIG_IGN);
  });
  std::shared_ptr<GlooGroup> group(new GlooGroup());
  group->rank_ = static_cast<int>(it - ranks.begin());
  group->worldRanks_ = ranks;
  group->name_ = name;
  group->timeout_ = options.timeout;
  group->options_ = options;
  StoreAdapter adapter(store, "gloo/" + name, options.timeout, ranks);
  try {
    auto dev = sharedDevice(options);
    group->device_ = dev;
    auto ctx = std::make_shared<::gloo::rendezvous::Context>(group->rank_,
                                                             group->size());
    ctx->setTimeout(options.timeout);
    // The sockets that appear while connecting are this group's pairs (and,
    // when another group of this process connects at the same time, some of
    // its sockets: breaking this group then breaks that one too).
    std::vector<SocketInfo> before = tcpSockets();
    ctx->connectFullMesh(adapter, dev);
    // Pairs may finish connecting lazily: exchange a byte with every peer so
    // that all sockets exist before we look at them.
    if (group->size() > 1) {
      std::vector<uint8_t> in(group->size()), out(group->size());
      ::gloo::AlltoallOptions opts(ctx);
      opts.setInput<uint8_t>(in.data(), in.size());
      opts.setOutput<uint8_t>(out.data(), out.size());
      opts.setTag(kConnectTag);
      opts.setTimeout(options.timeout);
      ::gloo::alltoall(opts);
    }
    // Ours are the new sockets from or to a pair address of this group:
    // others (a control connection opened meanwhile) are left alone.
    std::set<std::string> pairAddresses = adapterPairAddresses(adapter, *group);
    for (int i = 0; i < group->size(); ++i)
      if (i != group->rank_)
        pairAddresses.insert(ctx->getPair(i)->address().str());
    for (const SocketInfo &after : tcpSockets()) {
      bool old = std::any_of(before.begin(), before.end(), [&](auto &b) {
        return b.fd == after.fd && b.inode == after.inode;
      });
      if (after.listening) {
        group->localAddresses_.push_back(after.local);
      } else if (!old && (pairAddresses.count(after.local) ||
                          pairAddresses.count(after.remote))) {
        group->sockets_.emplace_back(after.fd, after.inode);
        group->localAddresses_.push_back(after.local);
      }
    }
    group->context_ = ctx;
  } catch (const StoreFailure &f) {
    return f.status;
  } catch (const std::exception &e) {
    return Status(StatusCode::Unavailable,
                  "gloo communicator '" + name +
                      "': connecting failed: " + e.what());
  }
  // Gloo's errors name the peer's socket address. Every member publishes
  // the local addresses of its pair sockets (an accepted socket's is the
  // listening address) so that the others can map an address to a rank.
  std::string mine;
  for (const std::string &addr : group->localAddresses_)
    mine += addr + "\n";
  std::string key = "gloo/" + name + "/sockets/";
  Status st = store.set(key + std::to_string(group->rank_), mine);
  if (!st)
    return st.withContext("gloo communicator '" + name + "'");
  std::map<std::string, std::set<int>> owners;
  for (int i = 0; i < group->size(); ++i) {
    if (i == group->rank_)
      continue;
    StatusOr<std::string> theirs =
        store.get(key + std::to_string(i), options.timeout);
    if (!theirs)
      return theirs.status().withContext("gloo communicator '" + name + "'");
    size_t pos = 0;
    while (pos < theirs->size()) {
      size_t end = theirs->find('\n', pos);
      if (end == std::string::npos)
        end = theirs->size();
      owners[theirs->substr(pos, end - pos)].insert(i);
      pos = end + 1;
    }
  }
  // Gloo also names a peer by the listening address it advertised for the
  // pair (unused when this side was the one listening).
  for (const auto &[addr, r] : adapterPairAddressOwners(adapter, *group))
    owners[addr].insert(r);
  for (const auto &[addr, who] : owners)
    if (who.size() == 1)
      group->peerAddresses_.emplace_back(addr, *who.begin());
  return group;
}

GlooGroup::~GlooGroup() = default;

void GlooGroup::breakLocked() {
  // Shutting the sockets down (rather than closing the pairs) lets Gloo's
  // event loop see the end of each stream: it fails this rank's blocked
  // waits at once, and the peers see the connection drop.
  // Gloo may have closed a failed pair's socket already and the number
  // been reused since: only shut down what is still the same socket.
  for (const auto &[fd, inode] : sockets_)
    if (fdTarget(fd) == inode)
      ::shutdown(fd, SHUT_RDWR);
}

std::string GlooGroup::rankOfAddressIn(const std::string &message) const {
  for (const auto &[addr, r] : peerAddresses_)
    if (message.find(addr) != std::string::npos)
      return "rank " + std::to_string(r) + " (world rank " +
             std::to_string(worldRanks_[r]) + ")";
  return "";
}

Status GlooGroup::statusFromException(std::exception_ptr error,
                                      const std::string &what) {
  std::string message;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception &e) {
    message = e.what();
  } catch (...) {
    message = "unknown exception";
  }
  std::string where = "gloo " + what + " on '" + name_ + "' (rank " +
                      std::to_string(rank_) + " of " + std::to_string(size()) +
                      ")";
  if (isBroken()) {
    Status broken = brokenStatus();
    return Status(StatusCode::Aborted, where + ": " + broken.message());
  }
  if (message.find("imed out") != std::string::npos)
    return Status(StatusCode::DeadlineExceeded,
                  where + ": not completed within " +
                      std::to_string(timeout_.count()) + " ms (" + message +
                      ")");
  std::string peer = rankOfAddressIn(message);
  if (peer.empty() && size() == 2) {
    int other = 1 - rank_;
    peer = "rank " + std::to_string(other) + " (world rank " +
           std::to_string(worldRanks_[other]) + ")";
  }
  return Status(StatusCode::Unavailable, where + ": connection to " +
                                             (peer.empty() ? "a peer" : peer) +
                                             " lost (" + message + ")");
}

} // namespace monarch::executor::gloo_backend
