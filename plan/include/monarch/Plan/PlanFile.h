//===- PlanFile.h - Reading and writing .mcplan files -----------*- C++ -*-===//
//
// A `.mcplan` file is a 32-byte header followed by the ExecutionPlan encoded
// with Thrift's compact protocol (plan/idl/ExecutionPlan.thrift):
//
//   bytes  0..7   magic "\x89MCPLAN\n"
//   bytes  8..11  format version, little-endian u32 (kPlanFormatVersion)
//   bytes 12..15  reserved, zero
//   bytes 16..23  payload size in bytes, little-endian u64
//   bytes 24..31  FNV-1a 64 hash of the payload, little-endian u64
//
// A reader accepts exactly its own format version. Everything here returns
// errors as values (monarch::executor::Status) and never throws: the Thrift
// code runs, exceptions and all, inside the MonarchPlan library. Safe to call
// from -fno-exceptions code.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_PLANFILE_H
#define MONARCH_PLAN_PLANFILE_H

#include "monarch/Plan/Plan.h"
#include "monarch/Support/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace monarch::plan {

using executor::Status;
using executor::StatusCode;
using executor::StatusOr;

inline constexpr char kPlanMagic[8] = {'\x89', 'M', 'C', 'P',
                                       'L',    'A', 'N', '\n'};
inline constexpr size_t kPlanHeaderSize = 32;

/// The whole file: header and payload. Fails only when the plan does not
/// pass validatePlan.
StatusOr<std::string> serializePlan(const ExecutionPlan &plan);

/// What serializePlan's caller says of the plan: `Validated` when it has
/// just passed validatePlan (the plan builder's last step), which is then
/// not run again (at 4,096 ranks, a tenth of a compile).
enum class PlanChecked { Unchecked, Validated };
StatusOr<std::string> serializePlan(const ExecutionPlan &plan,
                                    PlanChecked checked);

/// Parses and validates a whole file. Rejects (InvalidArgument, with a
/// message saying which) a file that is not a plan, is truncated, carries
/// another format version, fails its checksum, does not decode, or decodes
/// to an inconsistent plan.
StatusOr<ExecutionPlan> deserializePlan(std::string_view bytes);

/// A plan file in memory: its bytes (what goes to the workers and the
/// cache) and their decoding (what the controller reads), made once and
/// shared. The compiler hands one to the controller in the same process
/// (`Controller::loadPlan`), so neither copies nor decodes it again.
struct SharedPlan {
  std::shared_ptr<const std::string> bytes;
  std::shared_ptr<const ExecutionPlan> plan;
};

/// deserializePlan of `bytes`, kept with them.
StatusOr<SharedPlan> decodeSharedPlan(std::string bytes);

/// Decodes and validates a bare Thrift compact payload (no header): what
/// deserializePlan does after checking the header. Exposed for the fuzzer.
StatusOr<ExecutionPlan> decodePlanPayload(std::string_view payload);

/// What validatePlan checks: the whole plan, or a plan decoded for one rank
/// (deserializePlanForRank), whose steps hold only that rank's programs, so
/// that what spans every rank's program (sharded outputs tiling their
/// value) is left to the controller's full decode.
enum class ValidateScope { AllRanks, KeptRanks };

/// Checks every index, size and reference of `plan` (kernel, communicator and
/// plan indices in range, buffers inside their arena, waits naming earlier
/// asynchronous instructions, peers in the mesh, known enum values), so that
/// the executor can trust a plan that passed.
Status validatePlan(const ExecutionPlan &plan,
                    ValidateScope scope = ValidateScope::AllRanks);

/// What one worker binds (issue 15): `plan` holds, in each step, only the
/// program of world rank `worldRank` (none where it runs nothing);
/// `commStreams[step][communicator]` lists, for each communicator the rank
/// is a member of, the streams any rank of the step uses it on (every
/// member must create it alike), and `backends[step]` the backends of
/// every communicator the step uses. Both come from the file's table
/// (format 7), so the other ranks' programs are not read, nor the members
/// of communicators the rank is not in: binding costs about the file's
/// bytes instead of ranks x instructions. The header, decoding and the kept
/// programs are checked as deserializePlan checks them.
struct RankPlan {
  ExecutionPlan plan;
  std::vector<std::map<int32_t, std::set<int64_t>>> commStreams;
  std::vector<std::set<Backend>> backends;
};
StatusOr<RankPlan> deserializePlanForRank(std::string_view bytes,
                                          int64_t worldRank);

/// The format version in a file's header, without decoding the rest.
StatusOr<uint32_t> peekPlanFormatVersion(std::string_view bytes);

/// Writes atomically (a temporary file in the same directory, then rename).
Status writePlanFile(const ExecutionPlan &plan, const std::string &path);
/// Writes `bytes` to `path` atomically (temporary file, then rename).
Status writeFileAtomically(const std::string &path, std::string_view bytes);

/// Reads a whole file ("-" reads standard input).
StatusOr<std::string> readFileBytes(const std::string &path);
/// readFileBytes + deserializePlan; messages name the file.
StatusOr<ExecutionPlan> readPlanFile(const std::string &path);

/// FNV-1a 64 of `bytes`.
uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ULL);
/// The header's checksum of the payload (format 7): FNV-1a's xor-multiply
/// over 8-byte words in four lanes (docs/plan.md), fast enough that a
/// worker's bind does not notice it.
uint64_t planChecksum(std::string_view bytes);

} // namespace monarch::plan

#endif // MONARCH_PLAN_PLANFILE_H
