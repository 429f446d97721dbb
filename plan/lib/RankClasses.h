//===- RankClasses.h - Ranks that run the same instruction stream -*- C++
//-*-===//
//
// SPMD in the plan file (format 3): the programs of a step's ranks are
// mostly one instruction stream parameterised by the rank (data parallel:
// every rank runs the same launches and collectives on its own shard).
// The file stores each class of ranks' stream once; the other ranks of the
// class refer to it and list what differs, instruction by instruction: the
// peer and communicator of a send or receive, the communicator and root of
// a collective, the shard offsets of a feed, fetch or split state. Everything
// else (kernels, buffers, streams, events, source locations) must be equal for
// two ranks to share a stream. The in-memory ExecutionPlan stays one
// program per rank: the writer finds the classes, the reader expands them.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_LIB_RANKCLASSES_H
#define MONARCH_PLAN_LIB_RANKCLASSES_H

#include "monarch/Plan/Plan.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace monarch::plan::detail {

/// Instruction `instruction`'s rank-dependent fields where a rank differs
/// from the stream it shares (unset: the stream's value).
struct RankPatch {
  int32_t instruction = 0;
  std::optional<int64_t> peer;
  std::optional<int32_t> communicator;
  std::optional<int64_t> root;
  std::optional<std::vector<int64_t>> offsets;
  std::optional<int32_t> kernel;
};

/// For every program of `step`, the index of the earlier program whose
/// stream it shares, or -1 when it holds its own (the first of its class).
std::vector<int32_t> findRankClasses(const StepPlan &step);

/// What `program` changes in `shared` (same length, equal but for the
/// rank-dependent fields: findRankClasses' contract).
std::vector<RankPatch> rankPatches(const std::vector<Instruction> &shared,
                                   const std::vector<Instruction> &program);

/// The error of a patch or rule (`what`) naming instruction `index` of a
/// stream of `size` instructions, or nullopt when there is one.
std::optional<std::string> outOfStream(const char *what, int32_t index,
                                       size_t size);

/// `shared` with `patches` applied; an error names the first patch that
/// does not fit (an index out of range, a field the instruction does not
/// have).
std::optional<std::string>
applyRankPatches(std::vector<Instruction> &instructions,
                 const std::vector<RankPatch> &patches);

/// Format 6: a rank-dependent field computed from the rank instead of
/// stored per rank (the file's rules of a class, kept on the program that
/// holds the stream). For a rank r of the class whose stream is rank s's:
/// the peer is s's plus (r - s) modulo the mesh's size; the communicator is the
/// one of s's family (the same mesh, its members a translate of s's: the mesh
/// groups over the same dimensions) that holds r (s's where none holds it
/// alone: a patch gives r's); offsets[d] are s's plus sum_k
/// slopes[d][k] * (c_k(r) - c_k(s)) over the step mesh's coordinates.
/// Patches apply after the rules.
struct RankRule {
  int32_t instruction = 0;
  bool peerShift = false;
  bool communicatorOfRank = false;
  /// offsets.size() x mesh dimensions, row-major; empty: no offset rule.
  std::vector<int64_t> offsetSlopes;
};

/// What the rules read of the plan: a step mesh's coordinates and the
/// communicators as translates of one another. A family (the communicators
/// of one mesh whose members are a translate of one another's) is indexed
/// when a rule first asks for it: a worker decoding its own program asks
/// for its own communicators' families, not all of them.
class RankGeometry {
public:
  RankGeometry(const ExecutionPlan &plan, const std::string &mesh);
  /// `rank`'s coordinates on the step's mesh (row-major).
  std::vector<int64_t> coords(int64_t rank) const;
  size_t numDims() const { return sizes.size(); }
  /// `rank` + `delta` modulo the mesh's size (a ring wraps).
  int64_t shiftRank(int64_t rank, int64_t delta) const;
  /// The communicator of communicator `c`'s family that holds `rank`, or
  /// -1 when none does or two do.
  int32_t ofRank(int32_t c, int64_t rank) const;

private:
  /// Indexes communicator `c`'s family (which communicators are in it).
  void indexFamily(int32_t c) const;
  /// Whether communicator `c` holds `rank`.
  bool holds(int32_t c, int64_t rank) const;

  const ExecutionPlan &plan;
  std::vector<int64_t> sizes;
  /// Per communicator: its family, -1 for none (no members), -2 while
  /// not indexed; and whether its members ascend (-1 while unknown).
  mutable std::vector<int32_t> familyOf;
  mutable std::vector<int8_t> ascending;
  struct Family {
    std::vector<int32_t> members;
    /// First member -> the communicators starting there, for a family of
    /// more communicators than each has members.
    std::unordered_multimap<int64_t, int32_t> byFirst;
  };
  mutable std::vector<Family> families;
};

/// The rules that reproduce, for every member of the class whose stream is
/// program `holder`'s (shares[i] == holder), as many of its rank-dependent
/// fields as hold for all of them.
std::vector<RankRule> findRankRules(const StepPlan &step,
                                    const std::vector<int32_t> &shares,
                                    int32_t holder, const RankGeometry &geo);

/// `instructions` (program `fromRank`'s stream) with `rules` applied for
/// rank `rank`; an error names the first rule that does not fit.
std::optional<std::string>
applyRankRules(std::vector<Instruction> &instructions,
               const std::vector<RankRule> &rules, int64_t fromRank,
               int64_t rank, const RankGeometry &geo);

/// Format 7: a list of ranks that is a box: offset + sum_k i_k * strides[k]
/// for 0 <= i_k < sizes[k], row-major (the last dimension fastest).
struct RankBox {
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

/// `ranks` as a box of at most 16 dimensions, or nullopt when it is none
/// (or empty). The box expands to exactly `ranks`.
std::optional<RankBox> rankBox(const std::vector<int64_t> &ranks);

/// Whether `box` holds `rank`, spending its size from `budget` as
/// expandRankBox does and refusing what it refuses, without expanding a
/// box whose strides nest (a worker asks whether it is in a class of
/// 2,048 ranks).
std::optional<std::string> rankBoxHolds(const RankBox &box, int64_t rank,
                                        int64_t &budget, bool &holds);

/// The least and greatest rank of `box` and how many it holds, spending its
/// size from `budget` as expandRankBox does and refusing what it refuses,
/// without expanding a box whose strides nest (a worker checks a host of 4,096
/// ranks it never reads).
std::optional<std::string> rankBoxBounds(const RankBox &box, int64_t &budget,
                                         int64_t &lo, int64_t &hi,
                                         int64_t &count);

/// Appends `box`'s ranks to `out`, spending its size from `budget` (the
/// ranks a decode may still expand: a hostile file's box of 2^60 ranks
/// is refused, not allocated); an error says what does not fit.
std::optional<std::string> expandRankBox(const RankBox &box, int64_t &budget,
                                         std::vector<int64_t> &out);

/// When `c` follows `previous` in a run of communicators (its name
/// numbering on, the same mesh and backend, the same number of members),
/// the amount every member moved by; nullopt when they did not all move
/// alike. Format 7 stores such a run as one entry; --print-plan prints it
/// as one row.
std::optional<int64_t> shiftedCommunicator(const Communicator &previous,
                                           const Communicator &c);

/// What `member`'s stream changes in `holder`'s once `rules` (the class's)
/// gave it its rank's fields: the patches the file stores for it.
std::vector<RankPatch> patchesAfterRules(const RankProgram &holder,
                                         const std::vector<RankRule> &rules,
                                         const RankProgram &member,
                                         const RankGeometry &geo);

/// The rank of mesh `mesh` that world rank `worldRank` is, or -1 (an
/// unknown mesh, or one not holding it).
int64_t meshRankOf(const ExecutionPlan &plan, const std::string &mesh,
                   int64_t worldRank);

/// `name` with its trailing number plus one (`@f.comm7` -> `@f.comm8`), or
/// "" when it ends in no number (or one with a leading zero, or too long):
/// the communicators' names the file leaves out (format 7).
std::string nextNumberedName(const std::string &name);
/// nextNumberedName applied k times (k >= 0; "" where it would be).
std::string numberedName(const std::string &name, int64_t k);

} // namespace monarch::plan::detail

#endif // MONARCH_PLAN_LIB_RANKCLASSES_H
