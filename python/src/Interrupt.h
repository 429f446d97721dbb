//===- Interrupt.h - Ctrl-C aborts a running native call -------*- C++ -*-===//
//
// While a blocking executor call runs with the GIL released, Python cannot
// run its SIGINT handler, so Ctrl-C used to wait for the step to end (4.5 s
// after the signal for a 6 s step). An InterruptScope installs, for the
// duration of the call, a SIGINT handler that wakes a watcher thread (one
// per process, through an eventfd: the only thing it does in the signal
// handler besides calling the handler it replaced, Python's, which marks
// the interrupt for Python) and the watcher interrupts the scope's
// controller: every rank's step is aborted and the call returns. After it
// the caller runs `PyErr_CheckSignals`, which raises KeyboardInterrupt.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PYTHON_INTERRUPT_H
#define MONARCH_PYTHON_INTERRUPT_H

#include "monarch/Executor/Controller.h"

namespace monarch::python {

class InterruptScope {
public:
  /// `what` names the call in the abort's reason ("f()").
  InterruptScope(executor::Controller &controller, std::string what);
  ~InterruptScope();
  InterruptScope(const InterruptScope &) = delete;
  InterruptScope &operator=(const InterruptScope &) = delete;

  /// Whether SIGINT arrived while the scope was active.
  bool interrupted() const;
  /// Interrupts the scope's controller (the watcher thread calls it).
  void interruptNow() const;

private:
  executor::Controller &controller_;
  std::string what_;
  uint64_t firstSignal_;
};

} // namespace monarch::python

#endif // MONARCH_PYTHON_INTERRUPT_H
