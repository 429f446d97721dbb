//===- Supervisor.cpp - Fail-fast supervision of a job's workers ----------===//
//
// Every failure signal lands here: an error a worker reports, a worker
// process ending (launcher), heartbeats stopping (monitor thread), a control
// connection dropping (dispatchers). The first root cause fails the job: the
// waiting call wakes at once with it, and a teardown thread aborts every
// rank's communicators (WorkerService.abort), tells the rest to exit
// (heartbeat replies) and has the launcher kill what is left. Errors that
// are only consequences (a peer saw the connection close, Aborted) wait a
// short grace for their cause so the user sees the rank that failed first.
//
//===----------------------------------------------------------------------===//
#include "ControllerImpl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace monarch::executor {

std::string Controller::Impl::describeRankLocked(int rank) const {
  std::string text = "rank " + std::to_string(rank);
  if (rank < 0 || rank >= static_cast<int>(workers.ranks.size()))
    return text;
  const RankState &r = workers.ranks[rank];
  // A rank on another host names it: its address, and its host name when
  // that says more.
  std::string host;
  if (r.remote && !r.host.empty())
    host = r.host + (r.hostname.empty() || r.hostname == r.host
                         ? std::string()
                         : " (" + r.hostname + ")");
  if (r.pid && !host.empty())
    text += " (pid " + std::to_string(r.pid) + " on host " + host + ")";
  else if (r.pid)
    text += " (pid " + std::to_string(r.pid) + ")";
  else if (!host.empty())
    text += " (on host " + host + ")";
  return text;
}

void InstructionTable::record(const std::string &plan,
                              std::vector<Names> perRank) {
  text_[plan] = std::move(perRank);
  byHash_[planHash(plan)] = plan;
}

std::pair<std::string, InstructionTable::Names>
InstructionTable::lookup(uint32_t hash, int rank) const {
  auto name = byHash_.find(hash);
  if (name == byHash_.end())
    return {"?", {}};
  auto it = text_.find(name->second);
  if (it == text_.end() || rank < 0 ||
      rank >= static_cast<int>(it->second.size()))
    return {name->second, {}};
  return {name->second, it->second[rank]};
}

namespace {

/// "instruction 3 'launch @k0' (model.py:12:5)".
std::string describeInstruction(
    int instruction,
    const std::vector<std::pair<std::string, std::string>> *text) {
  std::string out = "instruction " + std::to_string(instruction);
  if (text && instruction >= 0 &&
      instruction < static_cast<int>(text->size())) {
    const auto &[name, location] = (*text)[instruction];
    if (!name.empty())
      out += " '" + name + "'";
    if (!location.empty())
      out += " (" + location + ")";
  }
  return out;
}

} // namespace

std::string Controller::Impl::progressPageLocked(int rank) const {
  const ProgressPage *page = workers.ranks[rank].progressPage;
  if (!page)
    return "";
  // The streams first: a kernel or a transfer is where a step spends its
  // time; the issuing thread is then usually at a wait for them.
  struct Seen {
    int stream;
    uint32_t plan;
    int64_t step;
    int instruction;
  };
  std::vector<Seen> busy;
  Seen issuing{-1, 0, -1, -1};
  int claimed = std::min(page->claimed.load(), ProgressPage::kSlots);
  for (int i = 0; i < claimed; ++i) {
    const ProgressSlot &slot = page->slots[i];
    Seen seen{slot.stream.load(), slot.plan.load(), slot.step.load(),
              slot.instruction.load()};
    if (seen.stream < 0)
      issuing = seen;
    else if (seen.instruction >= 0 && seen.plan != 0)
      busy.push_back(seen);
  }
  if (issuing.instruction < 0 && busy.empty())
    return "";
  uint32_t plan = issuing.instruction >= 0 ? issuing.plan : busy[0].plan;
  int64_t step = issuing.instruction >= 0 ? issuing.step : busy[0].step;
  auto [planName, names] = instructionTable.lookup(plan, rank);
  const InstructionTable::Names *text = names.empty() ? nullptr : &names;
  std::string out =
      "during step " + std::to_string(step) + " of plan '" + planName + "'";
  std::vector<std::string> parts;
  for (const Seen &s : busy)
    if (s.plan == plan && s.step == step)
      parts.push_back("stream " + std::to_string(s.stream) + " at " +
                      describeInstruction(s.instruction, text));
  if (issuing.instruction >= 0)
    parts.push_back("the issuing thread at " +
                    describeInstruction(issuing.instruction, text));
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? "; " : ": ") + parts[i];
  return out;
}

std::string Controller::Impl::whereLocked(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(workers.ranks.size()))
    return "";
  // A same-host worker's page says where each of its threads is now.
  if (std::string now = progressPageLocked(rank); !now.empty())
    return now;
  const control::Progress &p = workers.ranks[rank].progress;
  if (p.step < 0 || workers.ranks[rank].progressPage)
    return "while idle";
  std::string text =
      "during step " + std::to_string(p.step) + " of plan '" + p.plan + "'";
  if (p.instruction >= 0) {
    text += ", last seen at instruction " + std::to_string(p.instruction);
    if (!p.op.empty())
      text += " '" + p.op + "'";
    if (!p.location.empty())
      text += " (" + p.location + ")";
  }
  return text;
}

Status Controller::Impl::rankFailureLocked(int rank, const std::string &plan,
                                           int64_t step, int instruction,
                                           const std::string &op,
                                           const std::string &location,
                                           const Status &status) const {
  std::string text = describeRankLocked(rank) + " failed";
  if (step >= 0)
    text += " in step " + std::to_string(step) + " of plan '" + plan + "'";
  if (instruction >= 0) {
    text += " at instruction " + std::to_string(instruction);
    if (!op.empty())
      text += " '" + op + "'";
    if (!location.empty())
      text += " (" + location + ")";
  }
  text += ": " + status.toString();
  return Status(status.code(), text);
}

void Controller::Impl::reportFailure(Status status, bool rootCause) {
  std::lock_guard<std::mutex> lock(mutex);
  reportFailureLocked(std::move(status), rootCause);
}

void Controller::Impl::reportFailureLocked(Status status, bool rootCause) {
  // What the workers logged before the failure comes out before it.
  if (logFolder)
    logFolder->flush(LogFolder::Clock::now(), /*all=*/true);
  if (supervisor.failed || stopping)
    return;
  if (rootCause) {
    finalizeLocked(std::move(status));
    return;
  }
  if (!supervisor.pendingSecondary) {
    supervisor.pendingSecondary = std::move(status);
    supervisor.pendingSince = Clock::now();
  }
}

void Controller::interrupt(const std::string &reason) {
  Impl &s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.supervisor.failed || s.stopping)
    return;
  s.supervisor.interrupted = true;
  s.reportFailureLocked(Status(StatusCode::Aborted, reason),
                        /*rootCause=*/true);
}

void Controller::Impl::finalizeLocked(Status status) {
  supervisor.failed = true;
  supervisor.failure = std::move(status);
  supervisor.pendingSecondary.reset();
  spdlog::error("job failed: {}", supervisor.failure.toString());
  cv.notify_all();
  std::string reason = supervisor.failure.message();
  supervisor.teardown = std::thread([this, reason] { runTeardown(reason); });
}

void Controller::Impl::runTeardown(std::string reason) {
  // First unblock the caller: it may be reading a reply on a dispatch
  // connection from a rank that will never answer. Then abort every rank's
  // communicators so ranks blocked on the failed one return; each on its
  // own connection (the dispatch ones may be blocked).
  std::vector<ControlEndpoint> targets;
  {
    std::lock_guard<std::mutex> lock(mutex);
    workers.interruptCalls();
    targets = workers.liveEndpoints();
  }
  std::vector<std::thread> aborters;
  for (const ControlEndpoint &endpoint : targets) {
    aborters.emplace_back([this, endpoint, reason] {
      auto client = ControlClient::dial(endpoint, limits, 300, 300);
      if (client.isOk())
        (void)(*client)->abort("job aborted: " + reason);
    });
  }
  for (auto &t : aborters)
    t.join();
  // Workers exit by themselves on their next heartbeat; kill the rest.
  if (launcher)
    launcher->terminate(std::chrono::milliseconds(1000));
}

void Controller::Impl::onWorkerExit(const WorkerExit &exit) {
  std::lock_guard<std::mutex> lock(mutex);
  if (exit.rank >= 0 && exit.rank < static_cast<int>(workers.ranks.size())) {
    workers.ranks[exit.rank].exited = true;
    if (!workers.ranks[exit.rank].pid)
      workers.ranks[exit.rank].pid = exit.pid;
  }
  cv.notify_all();
  if (stopping || supervisor.failed)
    return;
  // A process that is no one rank (srun) names itself; its ranks report
  // their own ends.
  std::string text =
      (exit.rank < 0 && !exit.process.empty() ? exit.process
                                              : describeRankLocked(exit.rank)) +
      " " + exit.describe();
  bool unregistered = exit.rank >= 0 &&
                      exit.rank < static_cast<int>(workers.ranks.size()) &&
                      !workers.ranks[exit.rank].registered;
  if (unregistered)
    text += " before registering with the controller";
  else if (exit.rank >= 0)
    text += " " + whereLocked(exit.rank);
  reportFailureLocked(Status(StatusCode::Unavailable, text), true);
}

void Controller::Impl::printLine(const std::string &line) {
  if (options.printSink) {
    options.printSink(line);
    return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void Controller::Impl::deliverPrints(
    const std::vector<std::vector<std::string>> &perRank) {
  for (const std::string &line : foldRankLines(perRank))
    printLine(line);
}

void Controller::Impl::logForwarded(int rank, int level,
                                    const std::string &line) {
  if (level == 7) { // A debug_print line of a failed step.
    printLine(rankPrefix({rank}) + line);
    return;
  }
  if (options.logSink) {
    options.logSink(rank, level, line);
    return;
  }
  if (logFolder) {
    logFolder->add(rank, level, line);
    return;
  }
  if (level < 0 || level > 6)
    level = 2;
  spdlog::log(static_cast<spdlog::level::level_enum>(level), "[rank {}] {}",
              rank, line);
}

void Controller::Impl::createLogFolder() {
  // A line waits for the other ranks' copies for one heartbeat period (they
  // ride on heartbeats) and a little more.
  logFolder = std::make_unique<LogFolder>(
      options.heartbeatInterval + std::chrono::milliseconds(100),
      [](int level, const std::string &line) {
        if (level < 0 || level > 6)
          level = 2;
        spdlog::log(static_cast<spdlog::level::level_enum>(level), "{}", line);
      });
}

void Controller::Impl::startMonitor() {
  supervisor.monitor = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::milliseconds(20));
      logFolder->flush();
      if (stopping)
        break;
      if (supervisor.failed)
        continue;
      Clock::time_point now = Clock::now();
      if (supervisor.pendingSecondary &&
          now - supervisor.pendingSince >= options.rootCauseGrace) {
        finalizeLocked(*supervisor.pendingSecondary);
        continue;
      }
      for (size_t r = 0; r < workers.ranks.size(); ++r) {
        RankState &rank = workers.ranks[r];
        if (!rank.registered || rank.exited)
          continue;
        auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(
            now - rank.lastSeen);
        auto limit = rank.remote ? std::max(options.heartbeatTimeout,
                                            options.remoteHeartbeatTimeout)
                                 : options.heartbeatTimeout;
        if (silent > limit) {
          std::string text = describeRankLocked(static_cast<int>(r)) +
                             " sent no heartbeat for " +
                             std::to_string(silent.count()) +
                             " ms (hung, stopped or unreachable) " +
                             whereLocked(static_cast<int>(r));
          finalizeLocked(Status(StatusCode::DeadlineExceeded, text));
          break;
        }
      }
    }
  });
}

} // namespace monarch::executor
