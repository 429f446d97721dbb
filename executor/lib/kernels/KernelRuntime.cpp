//===- KernelRuntime.cpp - Load compiled kernels from memory -- -*- C++ -*-===//
//
// dlopen needs a path; an anonymous memfd gives one (/proc/self/fd/N) without
// touching the file system. The fallback writes a private temporary file and
// unlinks it as soon as dlopen has mapped it.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/KernelRuntime.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <optional>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using monarch::executor::Status;
using monarch::executor::StatusCode;
using monarch::executor::StatusOr;

namespace monarch::executor {
namespace {

/// Writes all of `data` to `fd`.
bool writeAll(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string dlErrorText() {
  const char *err = ::dlerror();
  return err ? std::string(err) : std::string("unknown dlopen error");
}

/// dlopen through an anonymous memory file; nullptr with `error` set when
/// memfd is not available or dlopen fails.
void *openFromMemfd(std::string_view binary, std::string &error,
                    bool &unavailable, int &keptFd) {
  int fd = ::memfd_create("monarch-kernels", MFD_CLOEXEC);
  if (fd < 0) {
    unavailable = true;
    error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  if (!writeAll(fd, binary)) {
    error = std::string("writing the memory file: ") + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = dlErrorText();
    ::close(fd);
    return nullptr;
  }
  keptFd = fd; // See LoadedKernelLibrary::memfd_.
  return handle;
}

void *openFromTempFile(std::string_view binary, std::string &error) {
  const char *dir = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(dir && *dir ? dir : "/tmp") + "/monarch-kernels-XXXXXX.so";
  int fd = ::mkstemps(tmpl.data(), 3);
  if (fd < 0) {
    error = std::string("creating a temporary file: ") + std::strerror(errno);
    return nullptr;
  }
  bool written = writeAll(fd, binary);
  ::close(fd);
  void *handle = nullptr;
  if (!written)
    error = std::string("writing ") + tmpl + ": " + std::strerror(errno);
  else if (!(handle = ::dlopen(tmpl.c_str(), RTLD_NOW | RTLD_LOCAL)))
    error = dlErrorText();
  ::unlink(tmpl.c_str());
  return handle;
}

/// Per-thread cache of the kernels' heap temporaries (packed matmul panels,
/// intermediate tensors). A kernel frees what it allocates before it
/// returns, on the same thread, so the next call finds its blocks here
/// instead of paying fresh mmap page faults. Blocks carry their capacity in
/// a 64-byte header; the cache keeps at most kMaxCachedBytes per thread and
/// frees everything when the thread exits.
class ScratchCache {
public:
  static constexpr size_t kHeader = 64;
  static constexpr size_t kMaxCachedBytes = size_t(1) << 30;
  static constexpr size_t kMaxBlocks = 64;

  ~ScratchCache() {
    for (void *block : blocks)
      std::free(block);
  }

  void *allocate(size_t size) {
    // Reuse the smallest cached block that fits without wasting more than
    // half of it.
    size_t best = blocks.size();
    for (size_t i = 0; i < blocks.size(); ++i) {
      size_t cap = capacity(blocks[i]);
      if (cap >= size && cap / 2 <= size &&
          (best == blocks.size() || cap < capacity(blocks[best])))
        best = i;
    }
    void *block;
    if (best != blocks.size()) {
      block = blocks[best];
      cachedBytes -= capacity(block);
      blocks.erase(blocks.begin() + best);
    } else {
      block = std::malloc(size + kHeader);
      if (!block)
        return nullptr;
      std::memcpy(block, &size, sizeof(size));
    }
    return static_cast<char *>(block) + kHeader;
  }

  void release(void *ptr) {
    if (!ptr)
      return;
    void *block = static_cast<char *>(ptr) - kHeader;
    blocks.push_back(block);
    cachedBytes += capacity(block);
    while (cachedBytes > kMaxCachedBytes || blocks.size() > kMaxBlocks) {
      cachedBytes -= capacity(blocks.front());
      std::free(blocks.front());
      blocks.erase(blocks.begin());
    }
  }

private:
  static size_t capacity(void *block) {
    size_t cap;
    std::memcpy(&cap, block, sizeof(cap));
    return cap;
  }
  std::vector<void *> blocks;
  size_t cachedBytes = 0;
};

ScratchCache &scratchCache() {
  thread_local ScratchCache cache;
  return cache;
}

void *kernelAlloc(int64_t size) {
  return scratchCache().allocate(size < 0 ? 0 : static_cast<size_t>(size));
}

void kernelFree(void *ptr) { scratchCache().release(ptr); }

/// Points a loaded library's allocation hooks (see NativeEmitter.cpp) at the
/// scratch cache; libraries without temporaries have no hooks.
void installAllocatorHooks(void *handle) {
  if (auto **allocFn =
          reinterpret_cast<void **>(::dlsym(handle, "monarch_kernel_alloc_fn")))
    *allocFn = reinterpret_cast<void *>(&kernelAlloc);
  if (auto **freeFn =
          reinterpret_cast<void **>(::dlsym(handle, "monarch_kernel_free_fn")))
    *freeFn = reinterpret_cast<void *>(&kernelFree);
}

/// Where this thread's KernelSliceRecording collects (null: nowhere).
thread_local std::vector<KernelSlice> *tSlices = nullptr;

/// `monarch_prof_event_fn` of every loaded library (NativeEmitter.cpp's
/// profile hooks call it after each loop nest of a profiled kernel).
void recordKernelSlice(const void *counts, int64_t slot, int64_t startNs,
                       int64_t endNs) {
  if (tSlices)
    tSlices->push_back({counts, slot, startNs, endNs});
}

void installSliceHook(void *handle) {
  if (auto **eventFn =
          reinterpret_cast<void **>(::dlsym(handle, "monarch_prof_event_fn")))
    *eventFn = reinterpret_cast<void *>(&recordKernelSlice);
}

/// Kernels that call OpenBLAS (codegen's BlasCalls.cpp) get it as a
/// dependency of the library. A worker is one rank on its share of the
/// cores, so BLAS runs on the calling thread: OPENBLAS_NUM_THREADS defaults
/// to 1 here (a value the user set is kept), before OpenBLAS is first
/// loaded, and an OpenBLAS already loaded is told the same.
int blasThreads() {
  static const int threads = [] {
    ::setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
    int n = std::atoi(std::getenv("OPENBLAS_NUM_THREADS"));
    return n > 0 ? n : 1;
  }();
  return threads;
}

void applyBlasThreads(void *handle) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(
          ::dlsym(handle, "openblas_set_num_threads")))
    set(blasThreads());
}

} // namespace

StatusOr<std::unique_ptr<LoadedKernelLibrary>>
LoadedKernelLibrary::load(std::string_view binary, std::string name) {
  static constexpr char elfMagic[] = {0x7f, 'E', 'L', 'F'};
  if (binary.size() < 64 || std::memcmp(binary.data(), elfMagic, 4) != 0)
    return Status(StatusCode::InvalidArgument,
                  "loading " + name +
                      ": not an ELF shared object (a CPU kernel library "
                      "was expected; " +
                      std::to_string(binary.size()) + " bytes)");
  (void)blasThreads();
  std::string error;
  bool memfdUnavailable = false;
  int memfd = -1;
  void *handle = openFromMemfd(binary, error, memfdUnavailable, memfd);
  if (!handle && memfdUnavailable)
    handle = openFromTempFile(binary, error);
  if (!handle)
    return Status(StatusCode::InvalidArgument,
                  "loading " + name + ": " + error);
  installAllocatorHooks(handle);
  installSliceHook(handle);
  applyBlasThreads(handle);
  return std::unique_ptr<LoadedKernelLibrary>(
      new LoadedKernelLibrary(handle, memfd, std::move(name)));
}

LoadedKernelLibrary::~LoadedKernelLibrary() {
  if (handle_)
    ::dlclose(handle_);
  if (memfd_ >= 0)
    ::close(memfd_);
}

StatusOr<KernelFunction>
LoadedKernelLibrary::lookup(const std::string &symbol) const {
  ::dlerror();
  void *sym = ::dlsym(handle_, symbol.c_str());
  if (!sym)
    return Status(StatusCode::NotFound,
                  name_ + " has no kernel named '" + symbol + "'");
  return reinterpret_cast<KernelFunction>(sym);
}

Status LoadedKernelLibrary::call(const std::string &symbol,
                                 void **buffers) const {
  StatusOr<KernelFunction> fn = lookup(symbol);
  if (!fn)
    return fn.status();
  if (!buffers)
    return Status(StatusCode::InvalidArgument,
                  "calling " + symbol + ": null buffer list");
  (*fn)(buffers);
  return Status::ok();
}

} // namespace monarch::executor

namespace monarch::executor {

namespace {

/// A profiled kernel's two exported tables (codegen's KernelProfile.cpp):
/// per slot, nanoseconds and calls; and one line per slot describing it.
struct ProfileTables {
  uint64_t *counts;
  const char *ops;
};

std::optional<ProfileTables> profileTables(void *handle,
                                           const std::string &symbol) {
  auto *counts = static_cast<uint64_t *>(
      ::dlsym(handle, (symbol + "_prof_counts").c_str()));
  const auto *ops = static_cast<const char *>(
      ::dlsym(handle, (symbol + "_prof_ops").c_str()));
  if (!counts || !ops)
    return std::nullopt;
  return ProfileTables{counts, ops};
}

/// The kernel's loop nests by slot, from its ops table (one line per slot:
/// op, location, shapes, flops, bytes, separated by tabs); no times.
std::vector<KernelOpProfile> opRows(const std::string &symbol,
                                    const ProfileTables &tables) {
  std::vector<KernelOpProfile> rows;
  std::string_view text(tables.ops);
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view()
                                         : text.substr(end + 1);
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != line.npos;
         start = tab + 1)
      fields.emplace_back(line.substr(start, tab - start));
    fields.emplace_back(line.substr(start));
    if (fields.size() != 5)
      break;
    KernelOpProfile row;
    row.symbol = symbol;
    row.op = fields[0];
    row.location = fields[1];
    row.shapes = fields[2];
    row.flops = std::strtoll(fields[3].c_str(), nullptr, 10);
    row.bytes = std::strtoll(fields[4].c_str(), nullptr, 10);
    rows.push_back(std::move(row));
  }
  return rows;
}

} // namespace

KernelSliceRecording::KernelSliceRecording() : previous_(tSlices) {
  tSlices = &slices_;
}

KernelSliceRecording::~KernelSliceRecording() { tSlices = previous_; }

std::vector<KernelOpProfile>
LoadedKernelLibrary::profile(const std::vector<std::string> &symbols) const {
  std::vector<KernelOpProfile> rows;
  for (const std::string &symbol : symbols) {
    std::optional<ProfileTables> tables = profileTables(handle_, symbol);
    if (!tables)
      continue;
    std::vector<KernelOpProfile> kernelRows = opRows(symbol, *tables);
    for (size_t slot = 0; slot < kernelRows.size(); ++slot) {
      const uint64_t *counts = tables->counts + 2 * slot;
      kernelRows[slot].nanoseconds =
          __atomic_load_n(&counts[0], __ATOMIC_RELAXED);
      kernelRows[slot].calls = __atomic_load_n(&counts[1], __ATOMIC_RELAXED);
      rows.push_back(std::move(kernelRows[slot]));
    }
  }
  return rows;
}

std::pair<const void *, std::vector<KernelOpProfile>>
LoadedKernelLibrary::sliceTable(const std::string &symbol) const {
  std::optional<ProfileTables> tables = profileTables(handle_, symbol);
  if (!tables)
    return {nullptr, {}};
  return {tables->counts, opRows(symbol, *tables)};
}

void LoadedKernelLibrary::resetProfile(
    const std::vector<std::string> &symbols) const {
  for (const std::string &symbol : symbols) {
    std::optional<ProfileTables> tables = profileTables(handle_, symbol);
    if (!tables)
      continue;
    size_t slots =
        std::count(tables->ops, tables->ops + std::strlen(tables->ops), '\n');
    for (size_t i = 0; i < 2 * slots; ++i)
      __atomic_store_n(&tables->counts[i], 0, __ATOMIC_RELAXED);
  }
}

std::string formatKernelProfile(std::vector<KernelOpProfile> profile,
                                size_t top) {
  std::stable_sort(profile.begin(), profile.end(),
                   [](const KernelOpProfile &a, const KernelOpProfile &b) {
                     return a.nanoseconds > b.nanoseconds;
                   });
  uint64_t total = 0;
  for (const KernelOpProfile &row : profile)
    total += row.nanoseconds;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%10s %6s %7s %10s %8s %8s  %s\n",
                "total ms", "share", "calls", "us/call", "GFLOP/s", "GB/s",
                "op  shapes  line  kernel");
  out += line;
  size_t shown = 0;
  for (const KernelOpProfile &row : profile) {
    if (top && shown++ >= top)
      break;
    double perCall =
        row.calls ? double(row.nanoseconds) / double(row.calls) : 0.0;
    double gflops = perCall > 0 ? double(row.flops) / perCall : 0.0;
    double gbs = perCall > 0 ? double(row.bytes) / perCall : 0.0;
    std::snprintf(
        line, sizeof line, "%10.3f %5.1f%% %7llu %10.2f %8.2f %8.2f  ",
        row.nanoseconds / 1e6,
        total ? 100.0 * double(row.nanoseconds) / double(total) : 0.0,
        static_cast<unsigned long long>(row.calls), perCall / 1e3, gflops, gbs);
    out += line;
    out += row.op + "  " + row.shapes + "  " + row.location + "  " +
           row.symbol + "\n";
  }
  std::snprintf(line, sizeof line,
                "%10.3f ms in %zu loop nests (time inside kernels, between "
                "their profile hooks)\n",
                total / 1e6, profile.size());
  out += line;
  return out;
}

} // namespace monarch::executor
