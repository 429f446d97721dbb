//===- Communicator.h - The data plane's collective interface --*- C++ -*-===//
//
// A Communicator moves tensor bytes between the ranks of one plan
// communicator: point-to-point send/recv and the collectives of the plan
// (all_reduce, all_gather, reduce_scatter, broadcast, all_to_all). Gloo (CPU,
// TCP), shared memory (CPU, one host) and NCCL (GPU) implement it;
// MonarchTesting has an in-process fake.
//
// Execution model (docs/executor-data-plane.md):
//  * post() enqueues one group of ops and returns a Work handle at once; the
//    groups of one Communicator object run one after another in posting order
//    (a FIFO, like one CUDA stream), the ops inside a group run together.
//  * Matching: a send and a recv match on (sender, receiver, tag, size), FIFO
//    among equal tags. The k-th collective posted on an object matches the
//    k-th on the other members' objects (or the ones carrying the same
//    explicit tag); see kAutoTag.
//  * Every wait has a timeout; every op has a deadline (CommOptions::timeout)
//    after which it fails with DeadlineExceeded.
//  * Failures are values: a lost peer fails the op with Unavailable naming the
//    peer's rank; after any failure or abort() the communicator is broken and
//    every pending and future op fails fast.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_COMMUNICATOR_H
#define MONARCH_EXECUTOR_COMMUNICATOR_H

#include "monarch/Executor/Store.h"
#include "monarch/Support/DType.h"
#include "monarch/Support/Status.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sched.h>

namespace monarch::executor {

enum class Backend { Gloo, Nccl };

/// "gloo" or "nccl" (the plan's spelling).
const char *backendName(Backend backend);
std::optional<Backend> parseBackend(std::string_view name);

/// Reductions, in the order of the IR's ReductionKind.
enum class ReduceOp { Sum, Prod, Max, Min, Avg };
const char *reduceOpName(ReduceOp op);

enum class CommOpKind {
  Send,
  Recv,
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  AllToAll,
};
/// "send", "all_reduce", ... (the plan's spelling).
const char *commOpKindName(CommOpKind kind);

/// Tag value that lets the communicator choose: 0 for send/recv, the posting
/// sequence number of the object for collectives. Explicit tags:
///  * send/recv match on (sender, receiver, tag, byte count), FIFO among
///    equal ones, across duplicates;
///  * collectives match the collective with the same tag on the other
///    members, on any duplicate (Gloo; NCCL ignores tags and matches in
///    posting order per object). Collectives in flight at the same time on
///    one connection group must differ in their tags modulo 2^24.
/// Executors pass the plan's per-pair / per-communicator sequence numbers.
inline constexpr uint64_t kAutoTag = ~uint64_t(0);
/// Explicit tags must be below this (Gloo packs them into its slots).
inline constexpr uint64_t kMaxTag = uint64_t(1) << 40;

/// One operation. Pointers are host memory for Gloo and device memory for
/// NCCL; they must stay valid until the op's Work completes, and after an
/// abort (which completes Work at once) until the communicator is destroyed.
/// Ranks (`peer`) are ranks of the communicator (0..size-1), not of the mesh.
struct CommOp {
  CommOpKind kind = CommOpKind::AllReduce;
  /// Send buffer / collective input (ignored by recv; broadcast reads it on
  /// the root only). May equal `output` (in place) for all_reduce and
  /// broadcast.
  const void *input = nullptr;
  /// Recv buffer / collective output (ignored by send).
  void *output = nullptr;
  /// Elements. send/recv/all_reduce/broadcast: of the whole buffer.
  /// all_gather: of the input (output holds count * size).
  /// reduce_scatter: of the output (input holds count * size).
  /// all_to_all: per peer (input and output hold count * size).
  size_t count = 0;
  DType dtype = DType::F32;
  ReduceOp reduce = ReduceOp::Sum; // all_reduce, reduce_scatter
  int peer = -1;                   // send/recv: the peer; broadcast: the root
  uint64_t tag = kAutoTag;

  static CommOp send(const void *buf, size_t count, DType dtype, int peer,
                     uint64_t tag = kAutoTag);
  static CommOp recv(void *buf, size_t count, DType dtype, int peer,
                     uint64_t tag = kAutoTag);
  static CommOp allReduce(const void *in, void *out, size_t count, DType dtype,
                          ReduceOp op);
  static CommOp allGather(const void *in, void *out, size_t countPerRank,
                          DType dtype);
  static CommOp reduceScatter(const void *in, void *out, size_t countPerRank,
                              DType dtype, ReduceOp op);
  static CommOp broadcast(const void *in, void *out, size_t count, DType dtype,
                          int root);
  static CommOp allToAll(const void *in, void *out, size_t countPerRank,
                         DType dtype);

  /// Bytes read from `input` / written to `output` for a communicator of
  /// `size` ranks.
  size_t inputBytes(int size) const;
  size_t outputBytes(int size) const;
  /// "all_reduce sum of 1024 x float32", for error messages.
  std::string describe() const;
};

/// Completion of one posted group. Thread-safe; shared by the poster and the
/// implementation (which calls complete() exactly once).
class Work {
public:
  /// Waits up to `timeout` for completion and returns the group's status, or
  /// DeadlineExceeded when it is still running (it keeps running: abort the
  /// communicator to stop it).
  Status wait(std::chrono::milliseconds timeout);
  /// The status once completed, nullopt while running.
  std::optional<Status> poll() const;
  bool isCompleted() const { return poll().has_value(); }
  /// Runs `fn` with the status on completion (at once, on this thread, when
  /// already completed; otherwise on the completing thread, which must not be
  /// blocked by `fn` for long). `fn` may call into the communicator.
  void onComplete(std::function<void(const Status &)> fn);

  /// For implementations: the first call wins, later calls are ignored.
  void complete(Status status);
  /// A Work already completed with `status`.
  static std::shared_ptr<Work> completed(Status status);

private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<Status> status_;
  std::vector<std::function<void(const Status &)>> callbacks_;
};

class Communicator {
public:
  /// Aborts what is still pending ("communicator destroyed") and joins the
  /// implementation's threads; never blocks longer than a few milliseconds
  /// beyond abort.
  virtual ~Communicator() = default;

  virtual Backend backend() const = 0;
  /// How the bytes move: "gloo" (TCP), "shm" (the CPU backend between
  /// processes of one host), "nccl".
  virtual const char *transport() const { return backendName(backend()); }
  /// The transport a send to or recv from member `peer` takes (a
  /// communicator spanning hosts sends to the members of its own host over
  /// shared memory, to the others over TCP).
  virtual const char *transportTo(int peer) const {
    (void)peer;
    return transport();
  }
  /// The transport a collective of `kind` moving `bytes` (the larger of
  /// its input and output) takes: transport(), or for a communicator
  /// spanning hosts that runs it within each host over shared memory and
  /// across hosts over TCP, "shm+gloo".
  virtual const char *collectiveTransport(CommOpKind kind, size_t bytes) const {
    (void)kind;
    (void)bytes;
    return transport();
  }
  /// This process's rank in the communicator and the number of members.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Members as ranks of the world (the mesh), in communicator order.
  virtual const std::vector<int> &worldRanks() const = 0;
  /// The name given at creation ("world", "plan0/pp", ...).
  virtual const std::string &name() const = 0;

  /// Posts `ops` as one group (ncclGroupStart/End): they start together after
  /// the previously posted group of this object has completed, and the Work
  /// completes when all of them have. Invalid ops (bad peer or root, null or
  /// aliased buffers where not allowed, an op the backend lacks) complete the
  /// Work with InvalidArgument/Unimplemented naming the backend and op; no
  /// call throws or blocks.
  virtual std::shared_ptr<Work> post(std::vector<CommOp> ops) = 0;
  /// post() for a caller that waits for the Work at once: where the object
  /// is idle, a backend may run the group on the calling thread and return
  /// it completed (saving the hand-off to its own thread, a scheduler
  /// wake-up each way); otherwise it is post(). The caller must not need
  /// another group posted by itself to progress first (abort() still
  /// unblocks it).
  virtual std::shared_ptr<Work> postAndRun(std::vector<CommOp> ops) {
    return post(std::move(ops));
  }
  /// postAndRun() for a caller that waits only until `deadline`: a group
  /// run on the calling thread then gives up at `deadline` (where that is
  /// before the backend's own timeout) with DeadlineExceeded, so the
  /// caller's deadline holds while the backend runs it.
  virtual std::shared_ptr<Work>
  postAndRunUntil(std::vector<CommOp> ops,
                  std::chrono::steady_clock::time_point deadline) {
    (void)deadline;
    return postAndRun(std::move(ops));
  }

  /// Declares memory of this process that the members on its host may map:
  /// `bytes` at `base`, a shared mapping of the memfd `fd` (kept open while
  /// this object lives; e.g. a SharedArea). Collectives whose buffers lie
  /// in it may then be served by reading the peers' buffers where they are:
  /// the shared-memory transport reduces and gathers large buffers that way
  /// on every member, without copying them through areas of its own
  /// (docs/executor-data-plane.md, "Windows"). Call before the first
  /// collective; a backend that cannot use it ignores it.
  virtual void registerMemory(const void *base, size_t bytes, int fd) {
    (void)base;
    (void)bytes;
    (void)fd;
  }

  std::shared_ptr<Work> send(const void *buf, size_t count, DType dtype,
                             int peer, uint64_t tag = kAutoTag) {
    return post({CommOp::send(buf, count, dtype, peer, tag)});
  }
  std::shared_ptr<Work> recv(void *buf, size_t count, DType dtype, int peer,
                             uint64_t tag = kAutoTag) {
    return post({CommOp::recv(buf, count, dtype, peer, tag)});
  }
  std::shared_ptr<Work> allReduce(const void *in, void *out, size_t count,
                                  DType dtype, ReduceOp op = ReduceOp::Sum) {
    return post({CommOp::allReduce(in, out, count, dtype, op)});
  }
  std::shared_ptr<Work> allGather(const void *in, void *out,
                                  size_t countPerRank, DType dtype) {
    return post({CommOp::allGather(in, out, countPerRank, dtype)});
  }
  std::shared_ptr<Work> reduceScatter(const void *in, void *out,
                                      size_t countPerRank, DType dtype,
                                      ReduceOp op = ReduceOp::Sum) {
    return post({CommOp::reduceScatter(in, out, countPerRank, dtype, op)});
  }
  std::shared_ptr<Work> broadcast(const void *in, void *out, size_t count,
                                  DType dtype, int root) {
    return post({CommOp::broadcast(in, out, count, dtype, root)});
  }
  std::shared_ptr<Work> allToAll(const void *in, void *out, size_t countPerRank,
                                 DType dtype) {
    return post({CommOp::allToAll(in, out, countPerRank, dtype)});
  }

  /// Fails every pending and future op fast with Aborted carrying `reason`,
  /// and breaks the connections so that peers blocked on this rank fail too
  /// (Gloo closes its pairs, NCCL calls ncclCommAbort). Thread-safe,
  /// idempotent, returns without waiting for the backend. Shared by every
  /// duplicate() of the same connections.
  virtual void abort(const std::string &reason) = 0;
  virtual bool isAborted() const = 0;

  /// A new communicator over the same members with its own FIFO (worker
  /// thread / CUDA stream) and its own collective sequence; send/recv tags
  /// and explicit collective tags are shared with this one (Gloo), so a send
  /// on one matches a recv on the other.
  /// Gloo reuses the connections (cheap, local); NCCL splits the comm (a
  /// collective call). Every member calls it in the same order.
  virtual StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) = 0;
};

struct CommOptions {
  /// Rendezvous deadline and the default deadline of every op.
  std::chrono::milliseconds timeout{30000};
  /// Gloo TCP: the address to listen on and advertise to peers. Loopback by
  /// default; on several hosts give each rank its own reachable address
  /// (never a hostname that resolves to 127.0.0.1).
  std::string hostname = "127.0.0.1";
  /// Gloo TCP: a network interface to use instead of `hostname` ("eth0").
  std::string interface;
  /// NCCL: the CUDA device ordinal this rank uses.
  int cudaDevice = 0;
  /// The members post every collective with an explicit tag on the same
  /// object (the same duplicate), in the same order: NCCL's rule, which the
  /// plan's one collective stream per communicator keeps. Lets the
  /// same-host transport read the peers' buffers directly for them too
  /// (collectives with kAutoTag always can); without it, explicit-tag
  /// collectives keep matching across duplicates (through messages).
  bool collectivesInPostingOrder = false;
  /// Processes of this job on this host (0: unknown, taken as the
  /// members). Where they outnumber this process's cores, the same-host
  /// transport yields the core while it waits instead of spinning on it:
  /// a 2-member communicator of 4 workers on 2 cores must let the peer it
  /// waits for run.
  int processesOnHost = 0;
};

/// The cores this process may run on (its affinity mask).
inline int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0)
    return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

/// Whether every worker of a job of `worldSize` and its controller can have
/// a core of their own here: then a short wait may poll rather than block
/// (the controller for replies, a worker for its next request).
inline bool aCoreEach(int worldSize) { return worldSize + 1 <= usableCores(); }

/// Whether the job's processes on this host (`options.processesOnHost`, at
/// least `members`) outnumber this process's cores: then a waiting thread
/// should give its core to the peer it waits for, and handing work to
/// another thread costs wake-ups that a thread of its own would not.
inline bool hostOversubscribed(const CommOptions &options, int members = 1) {
  int n = options.processesOnHost > members ? options.processesOnHost : members;
  return n > usableCores();
}

/// Creates this process's member of the communicator `name` over `ranks`
/// (world ranks in communicator order; empty means 0..worldSize-1).
/// `worldRank` must be one of them. Collective over the members: each calls
/// it with the same `name`, `ranks` and backend; they meet through `store`
/// under keys prefixed by `name` (unique per creation within the store), which
/// is only used during this call. Fails with DeadlineExceeded naming the
/// missing ranks when some do not arrive within `options.timeout`, and with
/// Unavailable when the backend is not usable here (NCCL without a GPU).
/// Implemented in MonarchDataPlane.
StatusOr<std::unique_ptr<Communicator>>
createCommunicator(Backend backend, Store &store, int worldRank, int worldSize,
                   const std::vector<int> &ranks, const std::string &name,
                   const CommOptions &options = {});

/// Ok when `backend` can create communicators in this process (compiled in,
/// and for NCCL a CUDA device is visible); otherwise says why.
Status backendAvailable(Backend backend);

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_COMMUNICATOR_H
