//===- Status.h - The project's one error value ----------------*- C++ -*-===//
//
// Errors are values: every fallible runtime call,
// and the MLIR-free plan model the compiler shares with the worker, returns
// a must-use `Status` or `StatusOr<T>`. Exceptions from Thrift and Gloo are
// caught in the glue code and converted here. Kept free of LLVM and MLIR so
// the worker binary stays small. (Compiler code that runs inside MLIR uses
// LogicalResult and diagnostics instead.) The names are also visible as
// `monarch::executor::Status` etc., which is how the runtime spells them.
// An error the user caused while tracing also carries their SourceLoc (the
// frontend's Result<T> is StatusOr<T>).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_STATUS_H
#define MONARCH_SUPPORT_STATUS_H

#include <cassert>
#include <optional>
#include <source_location>
#include <string>
#include <utility>

namespace monarch {

/// A user's source position. By default the caller's (C++ users of the
/// TraceBuilder get their own lines; Python passes the traced line).
struct SourceLoc {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;

  static SourceLoc
  current(std::source_location here = std::source_location::current()) {
    return {here.file_name(), static_cast<unsigned>(here.line()),
            static_cast<unsigned>(here.column())};
  }
  /// `file:line:col` ("<unknown>" without a file).
  std::string str() const {
    if (file.empty())
      return "<unknown>";
    return file + ":" + std::to_string(line) + ":" + std::to_string(col);
  }
};

enum class StatusCode {
  Ok = 0,
  InvalidArgument, // a malformed plan, message, or argument
  NotFound,
  Unimplemented, // an operation a backend does not support
  Unavailable,   // a peer or the controller cannot be reached
  DeadlineExceeded,
  PermissionDenied, // a wrong job token
  Aborted,          // the job was aborted (another rank failed)
  Internal,
};

const char *statusCodeName(StatusCode code);

/// What kind of mistake in the user's program an error reports, beside its
/// code: callers that class errors read it instead of the message (Python
/// maps each kind to one exception class: ShapeError, ShardingError, ...).
/// Runtime errors leave it `Unspecified`.
enum class ErrorKind {
  Unspecified = 0,
  Program,     // any other mistake in a traced program
  Shape,       // incompatible shapes: matmul, broadcasting, reshape, axes
  Sharding,    // a sharding that does not fit the tensor or the mesh
  Mesh,        // an unknown mesh, mesh dimension or placement
  Unsupported, // an op, dtype or form the compiler does not support
};

const char *errorKindName(ErrorKind kind);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  /// An error at the user's line, of `kind`.
  Status(StatusCode code, std::string message, SourceLoc loc,
         ErrorKind kind = ErrorKind::Unspecified)
      : code_(code), message_(std::move(message)), loc_(std::move(loc)),
        kind_(kind) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  /// "DeadlineExceeded: rank 2 did not answer within 2000 ms".
  std::string toString() const;
  /// Where the user caused it (an empty file when not known).
  const SourceLoc &loc() const { return loc_; }
  /// What kind of mistake it reports (Unspecified for runtime errors).
  ErrorKind kind() const { return kind_; }
  /// `file:line:col: error: message`, like an MLIR diagnostic (without a
  /// location: `error: message`).
  std::string str() const {
    if (loc_.file.empty())
      return "error: " + message_;
    return loc_.str() + ": error: " + message_;
  }
  /// Itself: code generic over Status and StatusOr<T> asks either.
  const Status &status() const { return *this; }

  /// Prefixes the message with context ("while loading plan: ...").
  Status withContext(const std::string &context) const {
    return isOk() ? *this
                  : Status(code_, context + ": " + message_, loc_, kind_);
  }

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
  SourceLoc loc_;
  ErrorKind kind_ = ErrorKind::Unspecified;
};

template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(T value) : value_(std::move(value)) {}
  StatusOr(Status status) : status_(std::move(status)) {
    assert(!status_.isOk() && "StatusOr from an ok Status has no value");
  }
  bool isOk() const { return value_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Status &status() const { return status_; }
  T &value() & { return *value_; }
  const T &value() const & { return *value_; }
  T &&value() && { return std::move(*value_); }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  T &operator*() { return *value_; }

private:
  Status status_;
  std::optional<T> value_;
};

inline const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "Ok";
  case StatusCode::InvalidArgument:
    return "InvalidArgument";
  case StatusCode::NotFound:
    return "NotFound";
  case StatusCode::Unimplemented:
    return "Unimplemented";
  case StatusCode::Unavailable:
    return "Unavailable";
  case StatusCode::DeadlineExceeded:
    return "DeadlineExceeded";
  case StatusCode::PermissionDenied:
    return "PermissionDenied";
  case StatusCode::Aborted:
    return "Aborted";
  case StatusCode::Internal:
    return "Internal";
  }
  return "Unknown";
}

inline const char *errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Unspecified:
    return "unspecified";
  case ErrorKind::Program:
    return "program";
  case ErrorKind::Shape:
    return "shape";
  case ErrorKind::Sharding:
    return "sharding";
  case ErrorKind::Mesh:
    return "mesh";
  case ErrorKind::Unsupported:
    return "unsupported";
  }
  return "unspecified";
}

inline std::string Status::toString() const {
  return isOk() ? std::string("Ok")
                : std::string(statusCodeName(code_)) + ": " + message_;
}

} // namespace monarch

namespace monarch::executor {
using ::monarch::Status;
using ::monarch::StatusCode;
using ::monarch::statusCodeName;
using ::monarch::StatusOr;
} // namespace monarch::executor

#endif // MONARCH_SUPPORT_STATUS_H
