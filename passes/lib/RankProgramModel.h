//===- RankProgramModel.h - Rank programs as instruction lists --*- C++ -*-===//
//
// The one model of `monarch.rank_program`s that monarch-schedule and
// monarch-verify-plan reason over (internal to passes/lib): every
// instruction with its kind, stream, group and buffer operands; the stream
// entries (one asynchronous instruction, or the adjacent members of a group,
// docs/plan-semantics.md rule 4); and byte segments of an arena, with
// whatever a pass tracks about them. A pass adds its own facts beside the
// model, indexed by instruction id.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_PASSES_LIB_RANKPROGRAMMODEL_H
#define MONARCH_PASSES_LIB_RANKPROGRAMMODEL_H

#include "monarch/IR/MonarchDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>

namespace monarch::rankmodel {

constexpr unsigned kNone = ~0u;

enum class InstrKind : uint8_t {
  // Asynchronous: issued onto a stream, yield an event.
  Launch,
  Send,
  Recv,
  Collective,
  /// Blocks issue until its events have completed.
  Wait,
  // Host instructions: complete when issued.
  FeedBuffer,
  FetchBuffer,
  StateBuffer,
  /// Reads its buffers and formats them (mc.debug_print).
  PrintBuffers,
  /// Not a plan instruction (the rank program verifier refuses it).
  Unknown,
};

/// One buffer operand of an instruction: an index into
/// `RankProgramModel::buffers`. An instruction lists its reads before its
/// writes. `state_buffer` writes its buffer: binding state defines the
/// bytes' contents for the step (it is not an access at run time, which is
/// why the hazard check skips it).
struct Access {
  unsigned buffer;
  bool write;
};

/// One instruction of one rank program.
struct Instr {
  mlir::Operation *op = nullptr;
  InstrKind kind = InstrKind::Unknown;
  int64_t rank = 0;
  /// Position in the rank program, from 0.
  unsigned pos = 0;
  /// Stream and group of an asynchronous instruction (a launch has no
  /// group), its stream entry, and its position among the asynchronous
  /// instructions of its stream.
  int64_t stream = -1;
  std::optional<uint64_t> group;
  unsigned entry = kNone;
  unsigned streamPos = kNone;
  /// The last wait before this instruction on its rank: it is issued only
  /// once that wait has completed.
  unsigned gate = kNone;
  llvm::SmallVector<Access, 4> accesses;
  /// A send's or receive's peer and communicator, a collective's
  /// communicator: the op's, or a member's (monarch.rank_member).
  int64_t peer = -1;
  mlir::StringAttr comm;
  /// For an instruction of a member: its id less that of the instruction of
  /// the class program it instantiates (`op`), whose events `idOf` numbers.
  unsigned delta = 0;

  bool isAsync() const { return kind == InstrKind::Launch || isComm(); }
  bool isComm() const {
    return kind == InstrKind::Send || kind == InstrKind::Recv ||
           kind == InstrKind::Collective;
  }
  bool isHost() const { return !isAsync() && kind != InstrKind::Wait; }
};

/// A stream entry: one asynchronous instruction or one group, whose members
/// are the adjacent instructions [first, last].
struct Entry {
  unsigned first, last;
  /// Position among the entries of its stream, and the entry before it.
  unsigned streamIndex;
  unsigned prev;
};

/// A group that breaks rule 4 of docs/plan-semantics.md, at `instr`, the
/// first member that does (one issue per group and rank program).
struct GroupIssue {
  enum Kind {
    /// `instr` follows `other`, of the same group, on another stream.
    SpansStreams,
    /// Other instructions separate `instr` from `other`, the last earlier
    /// member of its group.
    NotAdjacent,
  } kind;
  unsigned instr, other;
};

/// One rank program: instructions [begin, end) of the model.
struct Program {
  RankProgramOp op;
  int64_t rank = 0;
  unsigned begin = 0, end = 0;
  /// Its stream entries [entryBegin, entryEnd).
  unsigned entryBegin = 0, entryEnd = 0;
  /// A member of a class (monarch.rank_member): the instructions of its
  /// program's with the member's rank, peers and communicators.
  bool member = false;
  /// The asynchronous instructions of each stream, in program order.
  llvm::DenseMap<int64_t, llvm::SmallVector<unsigned>> streams;
};

/// The instructions of one or more rank programs (one plan's, for the
/// verifier), numbered across all of them in program order.
class RankProgramModel {
public:
  /// Appends the instructions of `program`.
  void addProgram(RankProgramOp program);
  /// Appends the instructions of `member`, whose program is `programs[of]`:
  /// that program's, with the member's rank, peers and communicators (its
  /// groups issues are the program's, reported once).
  void addMember(RankMemberOp member, unsigned of);

  llvm::SmallVector<Instr> instrs;
  llvm::SmallVector<Entry> entries;
  llvm::SmallVector<Program> programs;
  /// The distinct buffers, in order of first access.
  llvm::SmallVector<BufferAttr> buffers;
  llvm::DenseMap<mlir::Operation *, unsigned> idOf;
  llvm::SmallVector<GroupIssue> groupIssues;

private:
  unsigned bufferId(BufferAttr buffer);
  llvm::DenseMap<mlir::Attribute, unsigned> bufferIds;
};

//===----------------------------------------------------------------------===//
// Byte segments of an arena
//===----------------------------------------------------------------------===//

/// Bytes [start, end) of an arena and what a pass tracks about them (its
/// last writer and the readers since), in a map keyed by start. Segments
/// never overlap; bytes that nothing has touched have none.
template <typename T> struct Segment {
  int64_t end;
  T value;
};
template <typename T> using SegmentMap = std::map<int64_t, Segment<T>>;

/// Makes `at` a segment boundary (the two halves of a split segment keep its
/// value); returns the first segment at or after `at`.
template <typename T>
typename SegmentMap<T>::iterator splitSegments(SegmentMap<T> &map, int64_t at) {
  auto it = map.upper_bound(at);
  if (it == map.begin())
    return it;
  auto prev = std::prev(it);
  if (prev->first == at)
    return prev;
  if (at >= prev->second.end)
    return it;
  Segment<T> right = prev->second;
  prev->second.end = at;
  return map.emplace_hint(it, at, std::move(right));
}

/// Calls `fn(Segment<T> &)` on the segments that cover [lo, hi) exactly,
/// in order: splits at both ends and fills gaps with segments holding T().
template <typename T, typename Fn>
void forEachSegmentIn(SegmentMap<T> &map, int64_t lo, int64_t hi, Fn fn) {
  splitSegments(map, hi);
  auto it = splitSegments(map, lo);
  for (int64_t at = lo; at < hi; ++it) {
    if (it == map.end() || it->first > at) {
      int64_t end = it == map.end() ? hi : std::min(hi, it->first);
      it = map.emplace_hint(it, at, Segment<T>{end, T()});
    }
    fn(it->second);
    at = it->second.end;
  }
}

/// Calls `fn(Segment<T> &)` on every segment overlapping [lo, hi), in
/// order, without changing the map, until `fn` returns true.
template <typename T, typename Fn>
void findOverlapping(SegmentMap<T> &map, int64_t lo, int64_t hi, Fn fn) {
  auto it = map.upper_bound(lo);
  if (it != map.begin() && std::prev(it)->second.end > lo)
    --it;
  for (; it != map.end() && it->first < hi; ++it)
    if (fn(it->second))
      return;
}

/// Replaces whatever covers [lo, hi) by one segment holding `value`.
template <typename T>
void assignSegments(SegmentMap<T> &map, int64_t lo, int64_t hi, T value) {
  splitSegments(map, hi);
  auto first = splitSegments(map, lo);
  map.erase(first, map.lower_bound(hi));
  map.emplace(lo, Segment<T>{hi, std::move(value)});
}

} // namespace monarch::rankmodel

#endif // MONARCH_PASSES_LIB_RANKPROGRAMMODEL_H
