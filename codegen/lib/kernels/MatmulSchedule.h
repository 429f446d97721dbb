//===- MatmulSchedule.h - Transform-dialect schedules --------- -*- C++ -*-===//
//
// The CPU matmul schedule (packing, cache tile, register tile, vector FMA) is
// a transform-dialect script generated per matmul from its static shape and
// applied with the transform interpreter. Shapes it does not cover keep the
// generic tile-and-vectorize path.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_LIB_KERNELS_MATMULSCHEDULE_H
#define MONARCH_CODEGEN_LIB_KERNELS_MATMULSCHEDULE_H

#include "monarch/Codegen/KernelCompiler.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace monarch::codegen::detail {

/// Innermost tile of the generic elementwise schedule (elements).
inline constexpr int64_t kVectorTile = 16;

/// Register and cache tile of the packed matmul schedule.
struct MatmulTiles {
  int64_t mr = 6;     // rows of the register tile
  int64_t nr = 16;    // columns of the register tile = packed panel width
  int64_t kc = 128;   // depth of the cache tile
  bool packA = false; // pack A into [M/mr][K][mr] panels too
};

/// The tiles used for this host (options.cpu); MONARCH_MATMUL_TILES="mr,nr,kc"
/// overrides them for experiments (a fourth field 0 turns A packing off).
MatmulTiles chooseMatmulTiles(const KernelCompileOptions &options);

/// The transform script for one matmul of shape MxNxK, matched by the unit
/// attribute `tag`. Exposed for the kernels tool (`--print-schedule`).
std::string buildMatmulSchedule(int64_t m, int64_t n, int64_t k,
                                llvm::StringRef tag, const MatmulTiles &tiles);

/// Applies the schedule to every linalg.matmul of `scratch` whose shape it
/// covers.
mlir::LogicalResult applyMatmulSchedules(mlir::ModuleOp scratch,
                                         const KernelCompileOptions &options);

} // namespace monarch::codegen::detail

#endif // MONARCH_CODEGEN_LIB_KERNELS_MATMULSCHEDULE_H
