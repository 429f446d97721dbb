//===- WorkerProcess.h - The monarch-worker process ------------*- C++ -*-===//
#ifndef MONARCH_WORKER_WORKERPROCESS_H
#define MONARCH_WORKER_WORKERPROCESS_H

namespace monarch::worker {

/// Runs a worker configured from the environment until it is told to stop
/// or loses its controller; returns the process exit code.
int runWorker();

} // namespace monarch::worker

#endif // MONARCH_WORKER_WORKERPROCESS_H
