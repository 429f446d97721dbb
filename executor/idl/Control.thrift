//===- Control.thrift - The executor's control plane ----------*- thrift -*-===//
//
// Two services: the controller serves `ControllerService` (registration,
// heartbeats, the rendezvous key-value store used by Gloo and for the NCCL
// unique id, error reports, log forwarding) and every `monarch-worker` serves
// `WorkerService` (load-plan, run-step, fetch, abort, ping, shutdown). A
// compiled step is one `runStep` per worker; tensors never travel here except
// the user's feeds and fetches. Every request carries the job token; a wrong
// one is answered with PERMISSION_DENIED and logged. Transports are framed
// with a bounded frame and message size (docs/executor.md).
//
//===----------------------------------------------------------------------===//

namespace cpp monarch.executor.control

/// Bumped on any incompatible change; checked at registration.
const i32 PROTOCOL_VERSION = 1

/// Mirrors monarch::executor::StatusCode (Status.h) without Ok.
enum ErrorCode {
  INVALID_ARGUMENT = 1,
  NOT_FOUND = 2,
  UNIMPLEMENTED = 3,
  UNAVAILABLE = 4,
  DEADLINE_EXCEEDED = 5,
  PERMISSION_DENIED = 6,
  ABORTED = 7,
  INTERNAL = 8,
}

/// The only exception either service throws.
exception ControlError {
  1: ErrorCode code,
  2: string message,
  /// Where the failure happened when it is a rank's instruction.
  3: i32 rank = -1,
  4: i32 instruction = -1,
  5: string op,
  6: string location,
}

//===--- Controller service -----------------------------------------------===//

struct RegisterRequest {
  1: string token,
  2: i32 protocolVersion,
  3: i32 rank,
  4: i32 worldSize,
  /// Where this worker's WorkerService listens (an address, never a hostname
  /// that might resolve differently on another host).
  5: string host,
  6: i32 port,
  7: i64 pid,
  8: string hostname,
  /// An abstract Unix socket name serving the same WorkerService, for a
  /// controller on the same host (empty: none).
  9: string localSocket,
  /// Host, kernel, pid namespace and user (SharedArea.h): a controller with
  /// the same identity can share memory with this worker.
  10: string hostIdentity,
  /// The worker's progress page (Progress.h): a memfd a same-host
  /// controller maps through /proc/<pid>/fd/<progressFd>; -1: none.
  11: i32 progressFd = -1,
}

/// What the controller tells a worker at registration.
struct WorkerConfig {
  1: string jobId,
  2: i32 heartbeatIntervalMs,
  /// A worker exits when the controller has not answered for this long.
  3: i32 controllerTimeoutMs,
  4: string logLevel,
  5: bool trace,
  /// The job's generation (restarts so far). The worker sends it back with
  /// every later request: one from a replaced generation is ignored.
  6: i32 generation,
}

/// Where a worker is, piggybacked on heartbeats so that a crash or a hang can
/// be reported with the last op the rank was running.
struct Progress {
  1: string plan,
  2: i64 step = -1,
  /// Index into the rank's instruction list; -1 when idle.
  3: i32 instruction = -1,
  /// That instruction's name and the user's source location.
  4: string op,
  5: string location,
}

struct LogRecord {
  /// spdlog level: 0 trace .. 5 critical; 7: a debug_print line of a step
  /// that failed (RunStepReply.prints carries those of a step that ran).
  1: i32 level,
  2: string message,
  3: i64 timeUs,
}

struct HeartbeatRequest {
  1: string token,
  2: i32 rank,
  3: Progress progress,
  /// Log lines produced since the previous heartbeat.
  4: list<LogRecord> logs,
  /// WorkerConfig.generation (-1: before registration).
  5: i32 generation = -1,
}

struct HeartbeatReply {
  /// Set when the job failed or stopped: the worker aborts its communicators
  /// and exits.
  1: bool shutdown,
  2: string reason,
}

struct ErrorReport {
  1: string token,
  2: i32 rank,
  3: ErrorCode code,
  4: string message,
  5: string plan,
  6: i64 step = -1,
  7: i32 instruction = -1,
  /// The op's name ("launch @k0", "recv from 1") and the user's source
  /// location ("model.py:12:5") carried by the plan.
  8: string op,
  9: string location,
  10: i32 generation = -1,
}

service ControllerService {
  WorkerConfig registerWorker(1: RegisterRequest request)
      throws (1: ControlError error),
  HeartbeatReply heartbeat(1: HeartbeatRequest request)
      throws (1: ControlError error),

  // Rendezvous store (Gloo's rendezvous, the NCCL unique id). Keys are
  // scoped by the caller; values are opaque bytes. `generation` as in
  // HeartbeatRequest: a replaced generation gets ABORTED.
  void storeSet(1: string token, 2: string key, 3: binary value,
                4: i32 generation = -1)
      throws (1: ControlError error),
  /// Waits up to timeoutMs for the key; DEADLINE_EXCEEDED otherwise.
  binary storeGet(1: string token, 2: string key, 3: i32 timeoutMs,
                  4: i32 generation = -1)
      throws (1: ControlError error),
  void storeWait(1: string token, 2: list<string> keys, 3: i32 timeoutMs,
                 4: i32 generation = -1)
      throws (1: ControlError error),
  /// Adds delta to the integer stored at key (0 when absent), returns it.
  i64 storeAdd(1: string token, 2: string key, 3: i64 delta,
               4: i32 generation = -1)
      throws (1: ControlError error),

  void reportError(1: ErrorReport report) throws (1: ControlError error),
  void forwardLogs(1: string token, 2: i32 rank, 3: list<LogRecord> logs,
                   4: i32 generation = -1)
      throws (1: ControlError error),
}

//===--- Worker service ---------------------------------------------------===//

/// A dense row-major host tensor. dtype names follow numpy ("float32").
struct Tensor {
  1: string dtype,
  2: list<i64> shape,
  3: binary data,
}

struct Feed {
  /// The plan's feed index (`monarch.feed_buffer N`).
  1: i32 index,
  2: Tensor tensor,
  /// When >= 0, the bytes are not in tensor.data but at this offset of the
  /// request's staging area (stagingBytes of them).
  3: i64 stagingOffset = -1,
  4: i64 stagingBytes = 0,
  /// When >= 0, the bytes are the worker's resident value `slot` (a kept
  /// fetch of an earlier step: donation), not in the request.
  5: i64 slot = -1,
}

/// Fetch `index` of this step stays on the worker as resident value `slot`
/// instead of being returned (`@mc.compile(donate_argnums=...)`).
struct Keep {
  1: i32 index,
  2: i64 slot,
}

struct Fetch {
  /// The plan's fetch index (`monarch.fetch_buffer N`).
  1: i32 index,
  2: Tensor tensor,
  /// As in Feed: where in the staging area the worker wrote the bytes.
  3: i64 stagingOffset = -1,
  4: i64 stagingBytes = 0,
}

/// A controller on the worker's host passes feeds and fetches through a
/// shared memory area (a memfd of the controller's, opened by the worker
/// through /proc/<pid>/fd/<fd>) instead of the message.
struct Staging {
  1: i64 pid,
  2: i32 fd,
  /// The area's size; it only changes when the controller replaces it.
  3: i64 bytes,
  /// Fetches of at least minFetchBytes go at [fetchOffset, bytes), 64-byte
  /// aligned, in the order of the program's fetch instructions; smaller
  /// ones, and those that do not fit, travel in the reply.
  4: i64 fetchOffset,
  5: i64 minFetchBytes,
}

struct RunStepRequest {
  1: string token,
  2: string plan,
  3: i64 step,
  /// Only the feeds this rank's program reads.
  4: list<Feed> feeds,
  5: optional Staging staging,
  /// Fetches kept as resident values, and resident values to drop (before
  /// the step runs).
  6: list<Keep> keeps,
  7: list<i64> releases,
}

/// One Chrome-trace complete event ("ph":"X") recorded by a worker.
struct TraceEvent {
  1: string name,
  2: string category,
  /// Stream id (the trace's thread), -1 for the issuing thread.
  3: i32 stream,
  4: i64 startUs,
  5: i64 durationUs,
  /// The user's source location of the instruction ("model.py:12:5"),
  /// empty when unknown.
  6: optional string location,
}

struct RunStepReply {
  1: list<Fetch> fetches,
  2: i64 elapsedUs,
  /// Filled when tracing is on (WorkerConfig.trace).
  3: list<TraceEvent> trace,
  /// The step's mc.debug_print lines, in program order.
  4: list<string> prints,
}

/// A feed or fetch buffer of one rank's program.
struct BufferSpec {
  1: i32 index,
  2: string dtype,
  3: list<i64> shape,
}

/// Actor state a rank's program declares (`state_buffer @actor::@state`).
struct StateSpec {
  /// "@actor::@state".
  1: string key,
  2: string dtype,
  3: list<i64> shape,
}

/// What a worker reports after loading a plan: the controller learns from it
/// which feeds each rank reads and which fetches it writes, so the controller
/// never parses plans itself.
struct PlanInfo {
  1: string name,
  /// Ranks of the plan's mesh (must equal the job's world size).
  2: i32 meshSize,
  3: i64 arenaBytes,
  4: i32 numInstructions,
  5: list<BufferSpec> feeds,
  6: list<BufferSpec> fetches,
  7: list<StateSpec> states,
  /// This rank's instructions: their names and the user's source locations,
  /// to name what a progress page (RegisterRequest.progressFd) points at.
  8: list<string> instructionNames,
  9: list<string> instructionLocations,
}

struct PingReply {
  1: i32 rank,
  2: i64 pid,
  3: Progress progress,
}

service WorkerService {
  /// Parses the .mcplan, and for every step plan in it loads its kernels,
  /// joins its communicators and allocates its arena. Collective over all
  /// ranks (communicators rendezvous). One PlanInfo per step plan.
  list<PlanInfo> loadPlan(1: string token, 2: binary plan)
      throws (1: ControlError error),
  /// Runs this rank's instruction stream once; returns this rank's fetches.
  RunStepReply runStep(1: RunStepRequest request)
      throws (1: ControlError error),
  /// The fetch buffers of the last completed step of `plan`, by index.
  list<Fetch> fetch(1: string token, 2: string plan, 3: list<i32> indices)
      throws (1: ControlError error),
  /// Overwrites actor state `key` ("@actor::@state"), shared by every plan
  /// of this worker (initial parameters; later, checkpoint restore).
  void setState(1: string token, 2: string key, 3: Tensor value)
      throws (1: ControlError error),
  Tensor getState(1: string token, 2: string key)
      throws (1: ControlError error),
  /// The bytes of resident values (kept fetches), in the order asked.
  list<binary> readSlots(1: string token, 2: list<i64> slots)
      throws (1: ControlError error),
  /// Aborts every communicator and fails the running step (fail fast).
  void abort(1: string token, 2: string reason)
      throws (1: ControlError error),
  PingReply ping(1: string token) throws (1: ControlError error),
  /// Asks the worker to exit cleanly.
  oneway void shutdown(1: string token),
}
