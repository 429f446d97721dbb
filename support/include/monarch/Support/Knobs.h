//===- Knobs.h - The registry of MONARCH_* environment variables -*- C++
//-*-===//
//
// Every environment variable the project reads is declared once here, with
// its type, default, readers, meaning and whether it changes compiled output
// (then it is part of the plan cache key, compileKey()). Code reads a
// variable only through the typed getters, which parse with the same rules
// everywhere and say what is wrong with a bad value; entry points (the
// controller, the worker, monarch-compile, the Python package) call
// validate() for their component so that a bad value is refused at start
// with a message instead of being ignored. The Python package mirrors this
// table (`monarch_compile.knobs`, read through the native extension), and a
// test checks that the README's table lists exactly these variables.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_KNOBS_H
#define MONARCH_SUPPORT_KNOBS_H

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace monarch::knobs {

enum class Type {
  String, // any text; empty is unset
  Path,   // a file or directory
  Bool,   // 1/0, true/false, on/off, yes/no
  Int,    // a decimal integer within [min, max]
  Ms,     // a positive number of milliseconds within [min, max]
  Choice, // one of `choices` ("a|b|c")
};

/// Who reads a variable (a bit set): validate(component) checks those.
enum Component : unsigned {
  Compiler = 1,   // monarch-compile, the Python compile path, passes
  Controller = 2, // the controller (monarch-run, Python jobs)
  Worker = 4,     // monarch-worker and its data plane
  Python = 8,     // the Python package itself
};

// X(Id, NAME, Type, default, min, max, choices, readers, compileInput, doc)
// `default` is the text used when unset ("" = no value).
#define MONARCH_KNOBS(X)                                                       \
  X(DumpDir, "MONARCH_DUMP_DIR", Path, "", 0, 0, "", Compiler | Python, false, \
    "write the IR after every pass there as `NN-<pass>.mlir` and each stage "  \
    "as `<stage>.mlir` (monarch-compile, as `--dump-dir`; bypasses the "       \
    "cache); Python writes the same for each new specialisation in "           \
    "`<fn>.<n>/`")                                                             \
  X(CacheDir, "MONARCH_CACHE_DIR", Path, "", 0, 0, "", Compiler, false,        \
    "the compile cache (`$XDG_CACHE_HOME/monarch-compile` or "                 \
    "`~/.cache/monarch-compile`)")                                             \
  X(DisableCache, "MONARCH_DISABLE_CACHE", Bool, "0", 0, 0, "", Compiler,      \
    false, "`1` bypasses the compile cache (plans and kernels)")               \
  X(KernelCacheMb, "MONARCH_KERNEL_CACHE_MB", Int, "1024", 0, 1 << 30, "",     \
    Compiler, false,                                                           \
    "size bound of the kernel cache (`<cache dir>/kernels`: one object file "  \
    "per kernel, keyed by its location-free body, the target CPU and the "     \
    "compiler), least recently used evicted first; `0` turns it off")          \
  X(CompileThreads, "MONARCH_COMPILE_THREADS", Int, "0", 0, 1024, "",          \
    Compiler, false, "threads compiling a plan's kernels (`0`: one per core)") \
  X(Backend, "MONARCH_BACKEND", Choice, "gloo", 0, 0, "gloo|nccl",             \
    Compiler | Python, true,                                                   \
    "data plane of compiled communicators (default of `monarch-compile "       \
    "--backend` and of Python's compiled functions; `nccl` also compiles "     \
    "kernels for CUDA and needs a GPU on every rank)")                         \
  X(MatmulTiles, "MONARCH_MATMUL_TILES", String, "", 0, 0, "", Compiler, true, \
    "`mr,nr,kc[,packA]` overrides the CPU matmul tiles chosen for this host "  \
    "(tuning; docs/kernels.md)")                                               \
  X(CpuGemm, "MONARCH_CPU_GEMM", Choice, "blas", 0, 0, "blas|generated",       \
    Compiler, true,                                                            \
    "how CPU kernels compute float32/float64 contractions (matmul, batched "   \
    "and transposed `@`): `blas` calls OpenBLAS's "                            \
    "`cblas_sgemm`/`cblas_dgemm` "                                             \
    "(where the build found it), `generated` uses the generated schedules "    \
    "(docs/kernels.md)")                                                       \
  X(KernelParams, "MONARCH_KERNEL_PARAMS", Choice, "on", 0, 0, "on|off",       \
    Compiler, true,                                                            \
    "compile kernels that differ only in a few integers (a rank's offset or "  \
    "coordinate) once, taking the integers as a parameter (`off`: one "        \
    "kernel per variant; docs/kernels.md)")                                    \
  X(KernelProfile, "MONARCH_KERNEL_PROFILE", Path, "", 0, 0, "",               \
    Compiler | Worker, true,                                                   \
    "time every loop nest of the CPU kernels (as `monarch-kernels "            \
    "--profile`): each worker appends its table, slowest first, with the "     \
    "user's lines, to `<path>.rank<N>` when the job ends")                     \
  X(BucketBytes, "MONARCH_BUCKET_BYTES", Int, "26214400", 0, 1 << 30, "",      \
    Compiler, true,                                                            \
    "merge each rank's independent all_reduces into buckets of at most this "  \
    "many bytes (PyTorch DDP's gradient buckets, 25 MiB by default; "          \
    "`monarch-bucket-collectives`); `0` reduces each on its own")              \
  X(ShardUpdate, "MONARCH_SHARD_UPDATE", Bool, "1", 0, 0, "", Compiler, true,  \
    "`1` (the default) updates each rank's rows of a data-parallel weight "    \
    "between a reduce_scatter and an all_gather instead of every rank "        \
    "updating all of it after an all_reduce "                                  \
    "(`monarch-shard-weight-update`); `0` keeps the all_reduce")               \
  X(RankClasses, "MONARCH_RANK_CLASSES", Bool, "1", 0, 0, "", Compiler, true,  \
    "`1` (the default) lowers one rank of each class of ranks that run the "   \
    "same code and copies its program to the others with their own peers, "    \
    "communicators and offsets (`monarch-plan-transfers`, rank-classes); "     \
    "`0` lowers every rank (the same plan, built slower)")                     \
  X(SpecializeClasses, "MONARCH_SPECIALIZE_CLASSES", Bool, "1", 0, 0, "",      \
    Compiler, true,                                                            \
    "`1` (the default) specialises one function per class of ranks whose "     \
    "rank-dependent answers (membership, coordinates, slices, ownership) "     \
    "are equal (`monarch-specialize-ranks`, classes); its members get their "  \
    "own groups and offsets from the mesh; `0` specialises every rank (the "   \
    "same plan, built slower)")                                                \
  X(ClassPrograms, "MONARCH_CLASS_PROGRAMS", Bool, "1", 0, 0, "", Compiler,    \
    true,                                                                      \
    "`1` (the default) keeps the rank programs of a class as one program and " \
    "a `monarch.rank_member` per other member (its peers, communicators and "  \
    "offsets) from `monarch-plan-transfers` to the plan builder, which "       \
    "instantiates them (docs/spmd-classes.md); `0` writes every member's "     \
    "program (the same plan, built slower)")                                   \
  X(KernelCut, "MONARCH_KERNEL_CUT", Choice, "contraction", 0, 0,              \
    "comm|contraction", Compiler, true,                                        \
    "where a rank's compute is cut into kernels: `contraction` (the "          \
    "default) at communication, before every matmul-like op (with the "        \
    "transposes, broadcasts and zero fill only it reads) and after 512 ops, "  \
    "so each kernel is one contraction with its elementwise epilogue (XLA's "  \
    "fusions): kernels compile in parallel and repeated layers share them; "   \
    "`comm` only at communication (one kernel per run of compute)")            \
  X(PartitionEngine, "MONARCH_PARTITION_ENGINE", Choice, "own", 0, 0,          \
    "own|upstream", Compiler, true,                                            \
    "which partitioner splits the tensor work over the mesh: `own` "           \
    "(monarch's propagation and expansion, docs/pipeline.md; upstream's for "  \
    "a segment with an op it has no rule for) or `upstream` (MLIR's "          \
    "sharding-propagation and shard-partition, as before; one tensor "         \
    "dimension split over several mesh dimensions is refused with it)")        \
  X(PartitionRemarks, "MONARCH_PARTITION_REMARKS", Bool, "0", 0, 0, "",        \
    Compiler, false,                                                           \
    "`1` prints a remark per segment of work saying how `monarch-partition` "  \
    "partitioned it (split as annotated, with replicated inputs, or on "       \
    "whole values, and why: the op and line it failed at), and one line per "  \
    "function with the counts of ops split, retried and on whole values "      \
    "(on stderr; the plan cache is bypassed so that the passes run)")          \
  X(CheckReplicated, "MONARCH_CHECK_REPLICATED", Bool, "0", 0, 0, "", Python,  \
    true,                                                                      \
    "`1` checks at run time that endpoint results declared replicated "        \
    "(`out=None`) agree across ranks (read when a function is traced)")        \
  X(LogLevel, "MONARCH_LOG_LEVEL", Choice, "info", 0, 0,                       \
    "trace|debug|info|warn|warning|error|err|critical|off",                    \
    Controller | Worker | Python, false,                                       \
    "spdlog level of the controller and workers (Python jobs: `warn`)")        \
  X(Trace, "MONARCH_TRACE", Path, "", 0, 0, "", Controller, false,             \
    "write a Chrome/Perfetto trace of every step to this file when the job "   \
    "stops")                                                                   \
  X(Launcher, "MONARCH_LAUNCHER", Choice, "local", 0, 0, "local|env|slurm",    \
    Controller | Worker, false,                                                \
    "how the controller starts workers (`local`: forks them here; `env`: "     \
    "they are started elsewhere and join; `slurm`: one `srun` job step of "    \
    "every rank); set by the local and slurm launchers in their workers")      \
  X(SlurmArgs, "MONARCH_SLURM_ARGS", String, "", 0, 0, "", Controller, false,  \
    "extra `srun` and `salloc` options of the slurm launcher, split on "       \
    "spaces (e.g. `--partition=debug --time=10`)")                             \
  X(SlurmSrun, "MONARCH_SLURM_SRUN", String, "srun", 0, 0, "", Controller,     \
    false, "the `srun` the slurm launcher runs (a name on PATH or a path)")    \
  X(WorkerBin, "MONARCH_WORKER_BIN", Path, "", 0, 0, "", Controller | Python,  \
    false,                                                                     \
    "the worker executable for the local launcher (`monarch-worker` beside "   \
    "the executable, then `PATH`)")                                            \
  X(ControllerAddress, "MONARCH_CONTROLLER", String, "", 0, 0, "",             \
    Controller | Worker, false,                                                \
    "`host:port` of the controller service; with `MONARCH_RANK`, "             \
    "`MONARCH_WORLD_SIZE` and `MONARCH_JOB_TOKEN`, how an `env`-launched "     \
    "worker joins its job (set by the launcher)")                              \
  X(Rank, "MONARCH_RANK", Int, "", 0, 1 << 30, "", Worker, false,              \
    "this worker's rank (set by the launcher, else `SLURM_PROCID`, else "      \
    "`RANK`)")                                                                 \
  X(WorldSize, "MONARCH_WORLD_SIZE", Int, "", 1, 1 << 30, "",                  \
    Controller | Worker, false,                                                \
    "number of ranks (set by the launcher, else `SLURM_NTASKS`, else "         \
    "`WORLD_SIZE`)")                                                           \
  X(JobToken, "MONARCH_JOB_TOKEN", String, "", 0, 0, "", Controller | Worker,  \
    false, "shared secret every control request carries (random per job)")     \
  X(BindHost, "MONARCH_BIND_HOST", String, "127.0.0.1", 0, 0, "", Controller,  \
    false, "address the controller service listens on")                        \
  X(WorkerHost, "MONARCH_WORKER_HOST", String, "", 0, 0, "", Worker, false,    \
    "address the worker service and Gloo listen on and advertise (default: "   \
    "this host's address on the route to the controller, 127.0.0.1 for a "     \
    "controller on loopback; `0.0.0.0`: listen everywhere, the controller "    \
    "dials the address it saw)")                                               \
  X(HeartbeatMs, "MONARCH_HEARTBEAT_MS", Ms, "200", 1, 3600000, "",            \
    Controller, false, "heartbeat interval told to workers")                   \
  X(HeartbeatTimeoutMs, "MONARCH_HEARTBEAT_TIMEOUT_MS", Ms, "1000", 1,         \
    86400000, "", Controller, false,                                           \
    "silence after which a rank is declared hung")                             \
  X(RemoteHeartbeatTimeoutMs, "MONARCH_REMOTE_HEARTBEAT_TIMEOUT_MS", Ms,       \
    "3000", 1, 86400000, "", Controller, false,                                \
    "silence after which a rank on another host than the controller is "       \
    "declared hung or unreachable (a network outage shorter than this is "     \
    "survived; at least MONARCH_HEARTBEAT_TIMEOUT_MS)")                        \
  X(ControllerTimeoutMs, "MONARCH_CONTROLLER_TIMEOUT_MS", Ms, "3000", 1,       \
    86400000, "", Controller | Worker, false,                                  \
    "silence from the controller after which workers exit")                    \
  X(StartTimeoutMs, "MONARCH_START_TIMEOUT_MS", Ms, "60000", 1, 86400000, "",  \
    Controller, false, "registration of every rank, and each plan load")       \
  X(CommTimeoutMs, "MONARCH_COMM_TIMEOUT_MS", Ms, "30000", 1, 86400000, "",    \
    Worker, false, "rendezvous and per-operation deadline of the data plane")  \
  X(WaitTimeoutMs, "MONARCH_WAIT_TIMEOUT_MS", Ms, "600000", 1, 86400000, "",   \
    Worker, false,                                                             \
    "deadline of every wait of a worker's step loop (a `wait` for its "        \
    "events, the streams draining at the end of a step): a kernel or "         \
    "transfer that takes longer fails the step with DeadlineExceeded")         \
  X(MaxMessageBytes, "MONARCH_MAX_MESSAGE_BYTES", Int, "268435456", 4096,      \
    2147483647, "", Controller | Worker, false,                                \
    "bound on one control frame/message; staged tensors (same-host fast "      \
    "path) do not count")                                                      \
  X(HandshakeTimeoutMs, "MONARCH_HANDSHAKE_TIMEOUT_MS", Ms, "2000", 10,        \
    600000, "", Controller | Worker, false,                                    \
    "a control connection that has not presented the job token this long "     \
    "after connecting is closed")                                              \
  X(FrameTimeoutMs, "MONARCH_FRAME_TIMEOUT_MS", Ms, "30000", 10, 86400000, "", \
    Controller | Worker, false,                                                \
    "a control frame that has begun must arrive whole within this, or its "    \
    "connection is closed (idle connections may wait forever)")                \
  X(Shm, "MONARCH_SHM", Bool, "1", 0, 0, "", Worker, false,                    \
    "`0` forces Gloo TCP between ranks on one host (`1`: shared memory "       \
    "where every member of a communicator shares the host); every rank must "  \
    "see the same value")                                                      \
  X(Hierarchical, "MONARCH_HIERARCHICAL", Bool, "1", 0, 0, "", Worker, false,  \
    "`1`: a CPU communicator spanning hosts with the same number of members "  \
    "on each runs its collectives (all but all_to_all) within each host over " \
    "shared memory and across hosts over Gloo TCP, each host's members "       \
    "carrying a share (docs/executor.md, \"Across hosts\"); `0` runs them "    \
    "over Gloo between every member")                                          \
  X(ShmHost, "MONARCH_SHM_HOST", String, "", 0, 0, "", Worker, false,          \
    "pretend to run on this host when deciding whether the members of a "      \
    "communicator share one (tests; ranks with different values use TCP)")     \
  X(ShmCollectives, "MONARCH_SHM_COLLECTIVES", Choice, "direct", 0, 0,         \
    "direct|messages", Worker, false,                                          \
    "how collectives among the ranks of one host move their data: `direct` "   \
    "reads the peers' mapped areas for inputs up to 64 KB (larger ones, and "  \
    "all_to_all, use the rings); `messages` sends every collective as tagged " \
    "messages through the per-pair rings; every rank must see the same "       \
    "value")                                                                   \
  X(LocalControl, "MONARCH_LOCAL_CONTROL", Bool, "1", 0, 0, "",                \
    Controller | Worker, false,                                                \
    "`0` turns off the same-host fast path (workers on the controller's host " \
    "are dialed over a Unix socket and get tensors of 16 KB and more "         \
    "through shared memory)")                                                  \
  X(CudaDevice, "MONARCH_CUDA_DEVICE", Int, "", 0, 1024, "", Worker, false,    \
    "the CUDA device a worker runs NCCL plans on (its local rank modulo the "  \
    "devices visible)")                                                        \
  X(MaxLocalWorkers, "MONARCH_MAX_LOCAL_WORKERS", Int, "512", 1, 65536, "",    \
    Controller, false,                                                         \
    "the most workers the local launcher starts on this host; a larger mesh "  \
    "is refused before anything starts")                                       \
  X(ReplySpinUs, "MONARCH_REPLY_SPIN_US", Int, "", 0, 1000000, "", Controller, \
    false,                                                                     \
    "how long a step polls for each worker's reply before blocking (30 when "  \
    "the job's workers and the controller each have a core, else 0: a "        \
    "polling controller would take the core a worker needs; `0` blocks at "    \
    "once)")                                                                   \
  X(WorkerSpinUs, "MONARCH_WORKER_SPIN_US", Int, "", 0, 1000000, "", Worker,   \
    false,                                                                     \
    "how long a worker polls for its next request after answering one (20 "    \
    "when the job's workers and controller each have a core, else 0)")         \
  X(WorkerSched, "MONARCH_WORKER_SCHED", Choice, "auto", 0, 0,                 \
    "auto|batch|normal", Worker, false,                                        \
    "the scheduling policy of a worker's threads: `batch` (SCHED_BATCH: a "    \
    "woken worker does not preempt the thread running, so the controller "     \
    "handing a step to every worker is not held up by the first it wakes), "   \
    "`normal`, or `auto`: batch when the job's workers and controller "        \
    "outnumber the cores")                                                     \
  X(FaultInject, "MONARCH_FAULT_INJECT", String, "", 0, 0, "", Worker, false,  \
    "tests only: `raise|drop|exit:STEP:INSTR` or `sleep:STEP:INSTR:MS` "       \
    "injects that failure at that instruction of a worker's program")          \
  X(BuildDir, "MONARCH_BUILD_DIR", Path, "", 0, 0, "", Python, false,          \
    "where Python finds the native extension, the tools and `monarch-worker` " \
    "of a build tree (set by ctest; `<repo>/build` otherwise)")

enum class Id {
#define MONARCH_KNOB_ID(id, ...) id,
  MONARCH_KNOBS(MONARCH_KNOB_ID)
#undef MONARCH_KNOB_ID
};

struct Knob {
  Id id;
  const char *name;
  Type type;
  const char *defaultValue;
  int64_t min, max;
  const char *choices;
  unsigned readers;
  bool compileInput;
  const char *doc;
};

/// Every variable, in declaration order.
const std::vector<Knob> &all();
const Knob &knob(Id id);
/// The variable named `name`, or null.
const Knob *find(const std::string &name);
/// "string", "path", "bool", "int", "ms", "choice".
const char *typeName(Type type);
/// "controller, worker": the readers, for docs.
std::string readersText(unsigned readers);

/// A parsed value: `value` is the variable's, or its default when unset
/// (`isSet` false); `error` says what is wrong with a bad value (then
/// `value` is the default).
template <typename T> struct Value {
  T value{};
  bool isSet = false;
  std::string error;
  bool ok() const { return error.empty(); }
};

/// The raw text, when set and not empty.
std::optional<std::string> raw(Id id);
Value<std::string> getString(Id id); // String, Path, Choice (checked)
Value<bool> getBool(Id id);
Value<int64_t> getInt(Id id);
Value<std::chrono::milliseconds> getMs(Id id);

/// Checks `text` as a value of `k` ("" when fine, else the message
/// "NAME=TEXT: expected ...").
std::string check(const Knob &k, const std::string &text);
/// Checks every variable of `components` that is set; the messages of the
/// bad ones, one per line ("" when all are fine).
std::string validate(unsigned components);

/// "NAME=VALUE;" for every set variable that changes compiled output, in
/// declaration order: part of every plan cache key.
std::string compileKey();

} // namespace monarch::knobs

#endif // MONARCH_SUPPORT_KNOBS_H
