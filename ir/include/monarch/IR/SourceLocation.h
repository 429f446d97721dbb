//===- SourceLocation.h - The user's line inside an MLIR location -*- C++
//-*-===//
//
// The tracer records the user's file:line:col on every op; passes wrap it
// in fused, name and call-site locations. These helpers find it again for
// plans, remarks and diagnostics that name the user's line in text.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_SOURCELOCATION_H
#define MONARCH_IR_SOURCELOCATION_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace monarch {

/// The first FileLineColLoc inside `loc`, looking through NameLoc,
/// CallSiteLoc (callee first), FusedLoc and OpaqueLoc.
inline std::optional<mlir::FileLineColLoc> findFileLoc(mlir::Location loc,
                                                       int depth = 0) {
  if (depth > 32)
    return std::nullopt;
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return file;
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc))
    return findFileLoc(name.getChildLoc(), depth + 1);
  if (auto call = mlir::dyn_cast<mlir::CallSiteLoc>(loc)) {
    if (auto callee = findFileLoc(call.getCallee(), depth + 1))
      return callee;
    return findFileLoc(call.getCaller(), depth + 1);
  }
  if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc))
    for (mlir::Location inner : fused.getLocations())
      if (auto file = findFileLoc(inner, depth + 1))
        return file;
  if (auto opaque = mlir::dyn_cast<mlir::OpaqueLoc>(loc))
    return findFileLoc(opaque.getFallbackLocation(), depth + 1);
  return std::nullopt;
}

/// `file:line:col` of the user's line in `loc`, or "" when it has none.
inline std::string formatFileLoc(mlir::Location loc) {
  std::optional<mlir::FileLineColLoc> file = findFileLoc(loc);
  if (!file)
    return "";
  return (file->getFilename().getValue() + ":" +
          std::to_string(file->getLine()) + ":" +
          std::to_string(file->getColumn()))
      .str();
}

/// Prints a remark the user asked for (MONARCH_PARTITION_REMARKS) on
/// stderr at their line, `file:line:col: remark: message`: handlers that
/// collect diagnostics for an error message show remarks at once instead.
inline void printRemark(mlir::Diagnostic &diag) {
  std::string at = formatFileLoc(diag.getLocation());
  llvm::errs() << (at.empty() ? std::string("<unknown>") : at)
               << ": remark: " << diag << "\n";
}

/// Appends `diag` as the compiler prints diagnostics: `loc: severity:
/// message`, then `loc: note: message` per note, one per line. The one
/// format of every handler that collects diagnostics into an error message
/// (the frontend's verifier and lowering, CompileSession).
inline void printDiagnostic(mlir::Diagnostic &diag, llvm::raw_ostream &os) {
  auto severity = [](mlir::DiagnosticSeverity s) {
    switch (s) {
    case mlir::DiagnosticSeverity::Error:
      return "error";
    case mlir::DiagnosticSeverity::Warning:
      return "warning";
    case mlir::DiagnosticSeverity::Remark:
      return "remark";
    case mlir::DiagnosticSeverity::Note:
      return "note";
    }
    return "note";
  };
  diag.getLocation().print(os);
  os << ": " << severity(diag.getSeverity()) << ": " << diag << "\n";
  for (mlir::Diagnostic &note : diag.getNotes()) {
    note.getLocation().print(os);
    os << ": note: " << note << "\n";
  }
}

} // namespace monarch

#endif // MONARCH_IR_SOURCELOCATION_H
