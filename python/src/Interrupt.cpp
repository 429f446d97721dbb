//===- Interrupt.cpp - Ctrl-C aborts a running native call ----------------===//
//
// See Interrupt.h.
//
//===----------------------------------------------------------------------===//
#include "Interrupt.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <set>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>

namespace monarch::python {

namespace {

std::mutex gMutex;
/// Active scopes (calls in flight, on any thread).
std::set<const InterruptScope *> gActive;
struct sigaction gPrevious;
int gEventFd = -1;
/// SIGINTs seen so far (read by scopes to tell whether one hit them).
std::atomic<uint64_t> gSignals{0};

void onSigint(int sig, siginfo_t *info, void *context) {
  int saved = errno;
  gSignals.fetch_add(1);
  uint64_t one = 1;
  if (gEventFd >= 0)
    (void)!::write(gEventFd, &one, sizeof(one));
  // Python's own handler marks the interrupt; KeyboardInterrupt is raised
  // when the call returns.
  if (gPrevious.sa_flags & SA_SIGINFO) {
    if (gPrevious.sa_sigaction)
      gPrevious.sa_sigaction(sig, info, context);
  } else if (gPrevious.sa_handler != SIG_DFL &&
             gPrevious.sa_handler != SIG_IGN && gPrevious.sa_handler) {
    gPrevious.sa_handler(sig);
  }
  errno = saved;
}

void watch() {
  while (true) {
    uint64_t count = 0;
    if (::read(gEventFd, &count, sizeof(count)) != sizeof(count)) {
      if (errno == EINTR)
        continue;
      return;
    }
    std::lock_guard<std::mutex> lock(gMutex);
    for (const InterruptScope *scope : gActive)
      scope->interruptNow();
  }
}

} // namespace

void InterruptScope::interruptNow() const {
  controller_.interrupt(
      "interrupted (KeyboardInterrupt) during " + what_ +
      ": the step was aborted on every rank and the mesh's workers "
      "stopped; create a new mesh to run again, or give the function a "
      "restart policy (on_failure=mc.Restart(...)) to resume from the "
      "last checkpoint");
}

InterruptScope::InterruptScope(executor::Controller &controller,
                               std::string what)
    : controller_(controller), what_(std::move(what)),
      firstSignal_(gSignals.load()) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gEventFd < 0) {
    gEventFd = ::eventfd(0, EFD_CLOEXEC);
    if (gEventFd < 0)
      return;
    std::thread(watch).detach();
  }
  if (gActive.empty()) {
    struct sigaction ours = {};
    ours.sa_sigaction = onSigint;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    struct sigaction previous = {};
    if (::sigaction(SIGINT, nullptr, &previous) != 0 ||
        previous.sa_handler == SIG_IGN)
      return; // an ignored SIGINT stays ignored
    gPrevious = previous;
    ::sigaction(SIGINT, &ours, nullptr);
  }
  gActive.insert(this);
}

InterruptScope::~InterruptScope() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gActive.erase(this) && gActive.empty())
    ::sigaction(SIGINT, &gPrevious, nullptr);
}

bool InterruptScope::interrupted() const {
  return gSignals.load() != firstSignal_;
}

} // namespace monarch::python
