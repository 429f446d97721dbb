//===- PlanSimulate.cpp - Predict a step from its plan --------------------===//

#include "monarch/Plan/PlanSimulate.h"

#include "monarch/Support/JsonText.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <sstream>
#include <tuple>

namespace monarch::plan {

using executor::Status;
using executor::StatusCode;
using executor::StatusOr;

namespace {

SimTopology preset(const std::string &name) {
  SimTopology t;
  t.name = name;
  if (name == "dgx-h100" || name == "dgx-h200") {
    // H100 SXM: ~60 TFLOP/s fp32 (990 bf16 with tensor cores; the plan does
    // not say which a kernel uses, so fp32), HBM3 3.35 TB/s (H200: HBM3e
    // 4.8 TB/s); NVLink 4 450 GB/s per direction within the 8-GPU node;
    // 8x400 Gb/s InfiniBand NDR per node (50 GB/s per GPU) across.
    t.flopsPerUs = 60e6;
    t.memBytesPerUs = name == "dgx-h200" ? 4.8e6 : 3.35e6;
    t.launchUs = 4;
    t.hostUs = 1;
    t.issueUs = 0.5;
    t.intraAlphaUs = 3;
    t.intraBytesPerUs = 450e3;
    t.interAlphaUs = 8;
    t.interBytesPerUs = 50e3;
    t.ranksPerHost = 8;
    // A controller reaches each worker with one pipelined message: about a
    // microsecond a rank, not this 2-core machine's wake-ups; it copies
    // arrays at a server's memcpy rate.
    t.rankUs = 1;
    t.controllerBytesPerUs = 10e3;
  } else if (name == "cpu-cluster-25g") {
    // Hosts of 32 cores (one rank each: ~50 GFLOP/s fp32 with AVX2 FMA, 10
    // GB/s of memory bandwidth), shared memory within a host, 25 GbE (3.1
    // GB/s, ~25 us through the kernel's TCP stack) across.
    t.flopsPerUs = 50e3;
    t.memBytesPerUs = 10e3;
    t.intraAlphaUs = 10;
    t.intraBytesPerUs = 6e3;
    t.interAlphaUs = 25;
    t.interBytesPerUs = 3.1e3;
    t.ranksPerHost = 32;
    t.rankUs = 1;
    t.controllerBytesPerUs = 10e3;
  }
  // "this-machine": the defaults, fitted on this 2-vCPU VM: 40 GFLOP/s
  // puts a data-parallel MLP-512 step (BLAS contractions and fused
  // elementwise kernels together) at the measured time (5.7 ms measured,
  // 9.5 ms predicted at 20); shared-memory collectives 4 GB/s and ~20 us a
  // round trip (docs/executor.md, transfer_bench); its 2 cores shared by
  // the local mesh's workers.
  if (name == "this-machine")
    t.coresPerHost = 2;
  return t;
}

const char *const kPresets[] = {"this-machine", "dgx-h100", "dgx-h200",
                                "cpu-cluster-25g"};

/// An asynchronous instruction waiting on its stream.
struct Pending {
  size_t instr;
  double issued;
};

double kernelUs(const ExecutionPlan &plan, const Instruction &in,
                const SimTopology &t) {
  double bytes = 0;
  for (const Buffer &b : in.launch.ins)
    bytes += static_cast<double>(b.sizeInBytes());
  for (const Buffer &b : in.launch.outs)
    bytes += static_cast<double>(b.sizeInBytes());
  double flops = 0;
  if (in.launch.kernel >= 0 &&
      in.launch.kernel < static_cast<int32_t>(plan.kernels.size()))
    flops = static_cast<double>(plan.kernels[in.launch.kernel].flops);
  return t.launchUs + std::max(flops / t.flopsPerUs, bytes / t.memBytesPerUs);
}

std::string nameOf(const ExecutionPlan &plan, const Instruction &in) {
  switch (in.kind) {
  case InstrKind::Launch:
    return in.launch.kernel >= 0 &&
                   in.launch.kernel < static_cast<int32_t>(plan.kernels.size())
               ? "launch @" + plan.kernels[in.launch.kernel].name
               : "launch";
  case InstrKind::Send:
    return "send to " + std::to_string(in.p2p.peer);
  case InstrKind::Recv:
    return "recv from " + std::to_string(in.p2p.peer);
  case InstrKind::Collective:
    return collectiveKindName(in.collective.kind);
  default:
    return instrKindName(in.kind);
  }
}

} // namespace

Status setTopologyField(SimTopology &t, const std::string &key, double value) {
  if (key == "ranks_per_host" || key == "cores_per_host") {
    if (!(value >= 0) || value != std::floor(value) || value > 1e9)
      return Status(StatusCode::InvalidArgument,
                    key + " must be a non-negative integer");
    (key == "ranks_per_host" ? t.ranksPerHost : t.coresPerHost) =
        static_cast<int>(value);
    return Status::ok();
  }
  // The controller's costs may be zero (a model of the ranks alone).
  if (key == "call_us" || key == "array_us" || key == "rank_us" ||
      key == "controller_bytes_per_us") {
    if (!(value >= 0) || !std::isfinite(value))
      return Status(StatusCode::InvalidArgument,
                    "topology field '" + key + "' must be non-negative");
    (key == "call_us"    ? t.callUs
     : key == "array_us" ? t.arrayUs
     : key == "rank_us"  ? t.rankUs
                         : t.controllerBytesPerUs) = value;
    return Status::ok();
  }
  const std::pair<const char *, double *> fields[] = {
      {"flops_per_us", &t.flopsPerUs},
      {"mem_bytes_per_us", &t.memBytesPerUs},
      {"launch_us", &t.launchUs},
      {"host_us", &t.hostUs},
      {"issue_us", &t.issueUs},
      {"intra_alpha_us", &t.intraAlphaUs},
      {"intra_bytes_per_us", &t.intraBytesPerUs},
      {"inter_alpha_us", &t.interAlphaUs},
      {"inter_bytes_per_us", &t.interBytesPerUs}};
  for (const auto &[name, field] : fields)
    if (key == name) {
      if (!(value > 0) || !std::isfinite(value))
        return Status(StatusCode::InvalidArgument,
                      "topology field '" + key + "' must be positive");
      *field = value;
      return Status::ok();
    }
  return Status(StatusCode::InvalidArgument,
                "unknown topology field '" + key + "'");
}

std::vector<std::string> topologyPresets() {
  return std::vector<std::string>(std::begin(kPresets), std::end(kPresets));
}

StatusOr<SimTopology> topologyPreset(const std::string &name) {
  for (const char *p : kPresets)
    if (name == p)
      return preset(name);
  std::string list;
  for (const char *p : kPresets)
    list += (list.empty() ? "" : ", ") + std::string(p);
  return Status(StatusCode::NotFound, "unknown topology preset '" + name +
                                          "' (presets: " + list +
                                          "; or a TOPOLOGY.json file)");
}

StatusOr<SimResult> simulatePlan(const ExecutionPlan &plan,
                                 const SimTopology &t) {
  SimResult result;
  std::ostringstream trace;
  trace << "{\"traceEvents\":[";
  bool firstEvent = true;
  auto event = [&](const std::string &name, int64_t pid, int64_t tid,
                   double start, double dur, const std::string &loc) {
    trace << (firstEvent ? "" : ",") << "\n{\"name\":\"" << jsonEscape(name)
          << "\",\"ph\":\"X\",\"pid\":" << pid << ",\"tid\":" << tid
          << ",\"ts\":" << start << ",\"dur\":" << std::max(dur, 0.0);
    if (!loc.empty())
      trace << ",\"args\":{\"loc\":\"" << jsonEscape(loc) << "\"}";
    trace << "}";
    firstEvent = false;
  };

  for (const StepPlan &step : plan.plans) {
    // Which host each rank is on, by the plan's topology of this mesh.
    std::map<int64_t, int64_t> hostOf;
    for (const MeshTopology &topo : plan.topology)
      if (topo.mesh == step.mesh)
        for (size_t h = 0; h < topo.hosts.size(); ++h)
          for (int64_t r : topo.hosts[h].ranks)
            hostOf[r] = static_cast<int64_t>(h);
    // The simulated machine's hosts when it says how many ranks each
    // holds; else where the plan puts them (one host for the local
    // launcher).
    auto host = [&](int64_t rank) -> int64_t {
      if (t.ranksPerHost > 0)
        return rank / t.ranksPerHost;
      auto it = hostOf.find(rank);
      return it != hostOf.end() ? it->second : 0;
    };

    size_t n = step.programs.size();
    // Ranks sharing a host's cores compute that much slower.
    std::map<int64_t, int64_t> onHost;
    for (const RankProgram &p : step.programs)
      ++onHost[host(p.rank)];
    auto slowdown = [&](int64_t rank) {
      if (t.coresPerHost <= 0)
        return 1.0;
      return std::max(1.0,
                      static_cast<double>(onHost[host(rank)]) / t.coresPerHost);
    };
    std::map<int64_t, size_t> indexOf;
    for (size_t i = 0; i < n; ++i)
      indexOf[step.programs[i].rank] = i;
    struct RankState {
      size_t pc = 0;
      double host = 0;
      std::map<int64_t, double> streamFree;
      std::map<int64_t, std::deque<Pending>> queues;
      std::vector<double> done;
      // Sequence numbers of this rank's communication: (communicator,
      // peer) for point to point, communicator for collectives.
      std::map<std::pair<int32_t, int64_t>, int> p2pSeq;
      std::map<int32_t, int> collSeq;
      std::vector<std::tuple<int32_t, int64_t, int>> key; // per instr
      SimRank stats;
    };
    std::vector<RankState> ranks(n);
    for (size_t i = 0; i < n; ++i) {
      const RankProgram &p = step.programs[i];
      ranks[i].done.assign(p.instructions.size(), -1);
      ranks[i].key.resize(p.instructions.size());
      ranks[i].stats.rank = p.rank;
      for (size_t k = 0; k < p.instructions.size(); ++k) {
        const Instruction &in = p.instructions[k];
        if (in.kind == InstrKind::Send || in.kind == InstrKind::Recv) {
          int &seq = ranks[i].p2pSeq[{in.p2p.communicator, in.p2p.peer}];
          ranks[i].key[k] = {in.p2p.communicator, in.p2p.peer, seq++};
        } else if (in.kind == InstrKind::Collective) {
          int &seq = ranks[i].collSeq[in.collective.communicator];
          ranks[i].key[k] = {in.collective.communicator, -1, seq++};
        }
      }
    }
    SimStep out;
    out.plan = step.symbol;

    // The head of `rank`'s stream, if it is the instruction with `key`.
    auto headWith =
        [&](size_t r, int64_t stream,
            const std::tuple<int32_t, int64_t, int> &key) -> const Pending * {
      auto q = ranks[r].queues.find(stream);
      if (q == ranks[r].queues.end() || q->second.empty())
        return nullptr;
      const Pending &head = q->second.front();
      return ranks[r].key[head.instr] == key ? &head : nullptr;
    };
    auto finish = [&](size_t r, int64_t stream, double start, double end,
                      bool comm) {
      RankState &s = ranks[r];
      const Pending head = s.queues[stream].front();
      s.queues[stream].pop_front();
      s.done[head.instr] = end;
      s.streamFree[stream] = end;
      (comm ? s.stats.commUs : s.stats.computeUs) += end - start;
      const Instruction &in = step.programs[r].instructions[head.instr];
      event(nameOf(plan, in), s.stats.rank, stream, start, end - start,
            in.loc.file.empty() ? "" : in.loc.str());
    };
    auto link = [&](const std::vector<int64_t> &members) {
      bool same = std::all_of(members.begin(), members.end(), [&](int64_t r) {
        return host(r) == host(members.front());
      });
      // Shared memory moves bytes with the ranks' own cores: as slow as
      // their kernels where the ranks outnumber the host's cores.
      return same ? std::make_tuple(t.intraAlphaUs,
                                    t.intraBytesPerUs /
                                        slowdown(members.front()),
                                    std::string("same host"))
                  : std::make_tuple(t.interAlphaUs, t.interBytesPerUs,
                                    std::string("network"));
    };

    bool progress = true;
    while (progress) {
      progress = false;
      // 1. Issue what each rank's issuing thread can.
      for (size_t r = 0; r < n; ++r) {
        RankState &s = ranks[r];
        const std::vector<Instruction> &code = step.programs[r].instructions;
        while (s.pc < code.size()) {
          const Instruction &in = code[s.pc];
          if (in.kind == InstrKind::Wait) {
            double until = s.host;
            bool ready = true;
            for (int32_t e : in.wait.events) {
              if (e < 0 || static_cast<size_t>(e) >= s.done.size() ||
                  s.done[e] < 0) {
                ready = false;
                break;
              }
              until = std::max(until, s.done[e]);
            }
            if (!ready)
              break;
            if (until > s.host) {
              s.stats.waitUs += until - s.host;
              event("wait", s.stats.rank, -1, s.host, until - s.host,
                    in.loc.file.empty() ? "" : in.loc.str());
            }
            s.host = until;
            s.done[s.pc] = s.host;
          } else if (std::optional<int64_t> stream = in.stream()) {
            s.queues[*stream].push_back({s.pc, s.host});
            s.host += t.issueUs;
          } else {
            // A feed or fetch also copies its buffer (into the arena from
            // the controller's staging memory, or out of it).
            double us = t.hostUs;
            if (in.kind == InstrKind::FeedBuffer ||
                in.kind == InstrKind::FetchBuffer)
              us += static_cast<double>(in.io.buffer.sizeInBytes()) /
                    t.memBytesPerUs;
            event(nameOf(plan, in), s.stats.rank, -1, s.host, us,
                  in.loc.file.empty() ? "" : in.loc.str());
            s.host += us;
            s.done[s.pc] = s.host;
          }
          ++s.pc;
          progress = true;
        }
      }
      // 2. Run what the streams' heads can.
      for (size_t r = 0; r < n; ++r) {
        for (auto &[stream, queue] : ranks[r].queues) {
          if (queue.empty())
            continue;
          const Pending head = queue.front();
          const Instruction &in = step.programs[r].instructions[head.instr];
          double start = std::max(head.issued, ranks[r].streamFree[stream]);
          if (in.kind == InstrKind::Launch) {
            finish(r, stream, start,
                   start +
                       kernelUs(plan, in, t) * slowdown(step.programs[r].rank),
                   false);
            progress = true;
            break; // the queue map may have changed
          }
          if (in.kind == InstrKind::Send || in.kind == InstrKind::Recv) {
            auto peer = indexOf.find(in.p2p.peer);
            if (peer == indexOf.end())
              return Status(StatusCode::InvalidArgument,
                            "plan '" + step.symbol + "': peer " +
                                std::to_string(in.p2p.peer) +
                                " has no program");
            size_t p = peer->second;
            // The matching instruction of the peer: the same sequence
            // number on the same communicator, towards this rank.
            auto key = ranks[r].key[head.instr];
            std::get<1>(key) = step.programs[r].rank;
            const Instruction *other = nullptr;
            int64_t otherStream = -1;
            for (auto &[s2, q2] : ranks[p].queues)
              if (const Pending *h = headWith(p, s2, key)) {
                const Instruction &cand =
                    step.programs[p].instructions[h->instr];
                if (cand.kind != in.kind) {
                  other = &cand;
                  otherStream = s2;
                  start = std::max(
                      start, std::max(h->issued, ranks[p].streamFree[s2]));
                }
              }
            if (!other)
              continue;
            const Buffer &b = in.p2p.buffer;
            auto [alpha, beta, cls] =
                link({step.programs[r].rank, step.programs[p].rank});
            double end = start + alpha + b.sizeInBytes() / beta;
            out.linkBytes[cls] += b.sizeInBytes();
            finish(r, stream, start, end, true);
            finish(p, otherStream, start, end, true);
            progress = true;
            break;
          }
          if (in.kind == InstrKind::Collective) {
            const CollectiveInstr &c = in.collective;
            if (c.communicator < 0 ||
                c.communicator >=
                    static_cast<int32_t>(plan.communicators.size()))
              return Status(StatusCode::InvalidArgument,
                            "plan '" + step.symbol +
                                "': a collective names no communicator");
            const std::vector<int64_t> &members =
                plan.communicators[c.communicator].ranks;
            auto key = ranks[r].key[head.instr];
            std::vector<std::pair<size_t, int64_t>> heads;
            bool all = true;
            for (int64_t m : members) {
              auto it = indexOf.find(m);
              if (it == indexOf.end()) {
                all = false;
                break;
              }
              bool found = false;
              for (auto &[s2, q2] : ranks[it->second].queues)
                if (const Pending *h = headWith(it->second, s2, key)) {
                  start = std::max(
                      start,
                      std::max(h->issued, ranks[it->second].streamFree[s2]));
                  heads.push_back({it->second, s2});
                  found = true;
                  break;
                }
              if (!found) {
                all = false;
                break;
              }
            }
            if (!all)
              continue;
            double g = static_cast<double>(members.size());
            double bytes = static_cast<double>(
                std::max(c.input.sizeInBytes(), c.output.sizeInBytes()));
            auto [alpha, beta, cls] = link(members);
            double cost = 0;
            switch (c.kind) {
            case CollectiveKind::AllReduce: {
              // NCCL picks the cheaper of a ring (2(g-1) latencies, the
              // bytes twice over (g-1)/g) and a double binary tree (up and
              // down ceil(log2 g) levels, the bytes twice, pipelined): at
              // 4,096 ranks a small gradient's ring is 8,190 latencies.
              double ring =
                  2 * (g - 1) * alpha + 2 * (g - 1) / g * bytes / beta;
              double tree = 2 * std::ceil(std::log2(std::max(g, 2.0))) * alpha +
                            2 * bytes / beta;
              cost = std::min(ring, tree);
              break;
            }
            case CollectiveKind::AllGather:
            case CollectiveKind::ReduceScatter:
            case CollectiveKind::AllToAll:
              cost = (g - 1) * alpha + (g - 1) / g * bytes / beta;
              break;
            case CollectiveKind::Broadcast:
              cost = std::log2(std::max(g, 2.0)) * alpha + bytes / beta;
              break;
            }
            if (members.size() <= 1)
              cost = 0;
            out.linkBytes[cls] += static_cast<int64_t>(bytes);
            for (auto &[m, s2] : heads)
              finish(m, s2, start, start + cost, true);
            progress = true;
            break;
          }
        }
      }
    }
    for (size_t r = 0; r < n; ++r) {
      RankState &s = ranks[r];
      if (s.pc < step.programs[r].instructions.size())
        return Status(
            StatusCode::Internal,
            "plan '" + step.symbol + "': rank " + std::to_string(s.stats.rank) +
                " cannot go past instruction " + std::to_string(s.pc) +
                " in the model (its events never complete)");
      for (auto &[stream, queue] : s.queues)
        if (!queue.empty())
          return Status(StatusCode::Internal,
                        "plan '" + step.symbol + "': rank " +
                            std::to_string(s.stats.rank) + " stream " +
                            std::to_string(stream) +
                            " never finishes its communication in the model "
                            "(no matching peer)");
      double end = s.host;
      size_t last = 0;
      for (size_t k = 0; k < s.done.size(); ++k)
        if (s.done[k] >= end) {
          end = s.done[k];
          last = k;
        }
      s.stats.finishUs = end;
      out.ranks.push_back(s.stats);
      if (end >= out.stepUs) {
        out.stepUs = end;
        out.criticalRank = s.stats.rank;
        const std::vector<Instruction> &code = step.programs[r].instructions;
        // A wait (or a host instruction after one) finishes because of
        // what it waited for: name the asynchronous instruction that
        // completed last, the work the rank was waiting on.
        double latest = -1;
        size_t at = last;
        for (size_t j = 0; j <= last && j < code.size(); ++j)
          if (code[j].isAsync() && s.done[j] > latest) {
            latest = s.done[j];
            at = j;
          }
        last = at;
        if (!code.empty()) {
          out.criticalOp = nameOf(plan, code[last]);
          out.criticalLoc =
              code[last].loc.file.empty() ? "" : code[last].loc.str();
        }
      }
    }
    // The bytes the controller copies: each array it feeds into staging
    // (or cuts into shards) and each result it reassembles, once whatever
    // the ranks.
    double ioBytes = 0;
    for (const std::vector<ValueType> *values : {&step.inputs, &step.outputs})
      for (const ValueType &v : *values)
        ioBytes += static_cast<double>(
            std::max<int64_t>(Buffer{0, v.dtype, v.shape}.sizeInBytes(), 0));
    out.controllerUs =
        t.callUs +
        t.arrayUs *
            static_cast<double>(step.inputs.size() + step.outputs.size()) +
        (t.controllerBytesPerUs > 0 ? ioBytes / t.controllerBytesPerUs : 0) +
        t.rankUs *
            static_cast<double>(std::max<size_t>(step.programs.size(), 1) - 1);
    out.stepUs += out.controllerUs;
    result.steps.push_back(std::move(out));
  }
  trace << "\n]}\n";
  result.chromeTrace = trace.str();
  return result;
}

std::string simulationReport(const SimResult &result, const SimTopology &t) {
  std::ostringstream os;
  char buf[256];
  os << "simulated on topology '" << t.name << "'\n";
  for (const SimStep &s : result.steps) {
    std::snprintf(buf, sizeof buf, "plan @%s: predicted step %.1f us\n",
                  s.plan.c_str(), s.stepUs);
    os << buf;
    std::snprintf(buf, sizeof buf,
                  "  controller %.1f us (a call, the arrays it feeds and "
                  "fetches, the ranks it reaches)\n",
                  s.controllerUs);
    os << buf;
    os << "  critical path ends on rank " << s.criticalRank << " at '"
       << s.criticalOp << "'"
       << (s.criticalLoc.empty() ? "" : " (" + s.criticalLoc + ")") << "\n";
    os << "  rank   compute us      comm us      wait us    finish us\n";
    // Beyond 16 ranks, consecutive ranks with the same figures share a row
    // ("1-4095"): a 4,096-rank data-parallel step prints two.
    bool group = s.ranks.size() > 16;
    double compute = 0, comm = 0, busy = 0;
    for (size_t i = 0; i < s.ranks.size();) {
      const SimRank &r = s.ranks[i];
      auto same = [&](const SimRank &o) {
        auto near = [](double a, double b) { return std::abs(a - b) < 0.05; };
        return near(o.computeUs, r.computeUs) && near(o.commUs, r.commUs) &&
               near(o.waitUs, r.waitUs) && near(o.finishUs, r.finishUs);
      };
      size_t j = i + 1;
      while (group && j < s.ranks.size() && same(s.ranks[j]) &&
             s.ranks[j].rank == s.ranks[j - 1].rank + 1)
        ++j;
      std::string ranks = std::to_string(r.rank);
      if (j > i + 1)
        ranks += "-" + std::to_string(s.ranks[j - 1].rank);
      std::snprintf(buf, sizeof buf, "  %4s %12.1f %12.1f %12.1f %12.1f\n",
                    ranks.c_str(), r.computeUs, r.commUs, r.waitUs, r.finishUs);
      os << buf;
      for (size_t k = i; k < j; ++k) {
        compute += s.ranks[k].computeUs;
        comm += s.ranks[k].commUs;
        busy += s.ranks[k].finishUs;
      }
      i = j;
    }
    for (const auto &[cls, bytes] : s.linkBytes)
      os << "  bytes over " << cls << ": " << bytes << "\n";
    if (busy > 0) {
      std::snprintf(buf, sizeof buf,
                    "  over the ranks: %.0f%% of the step in compute, %.0f%% "
                    "in communication\n",
                    100 * compute / busy, 100 * comm / busy);
      os << buf;
    }
  }
  return os.str();
}

} // namespace monarch::plan
