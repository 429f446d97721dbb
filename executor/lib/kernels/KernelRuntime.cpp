//===- KernelRuntime.cpp - Load compiled kernels from memory -- -*- C++ -*-===//
//
// dlopen needs a path; an anonymous memfd gives one (/proc/self/fd/N) without
// touching the file system. The fallback writes a private temporary file and
// unlinks it as soon as dlopen has mapped it.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/KernelRuntime.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
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
