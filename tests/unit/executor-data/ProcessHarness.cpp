//===- ProcessHarness.cpp - N ranks as real processes for tests -*- C++ -*-===//

#include "ProcessHarness.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef DATA_PLANE_RANK_BINARY
#error "DATA_PLANE_RANK_BINARY must name the data-plane-rank executable"
#endif

namespace monarch::testing {

RankGroup::RankGroup() {
  char tmpl[] = "/tmp/monarch-data-plane-XXXXXX";
  char *dir = ::mkdtemp(tmpl);
  storeDir_ = dir ? dir : "/tmp";
}

RankGroup::~RankGroup() {
  for (RankProcess &p : procs_) {
    if (!p.exited) {
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, nullptr, 0);
      p.exited = true;
    }
    if (p.outFd >= 0)
      ::close(p.outFd);
  }
  std::error_code ec;
  std::filesystem::remove_all(storeDir_, ec);
}

void RankGroup::start(const std::string &scenario, int size, int timeoutMs,
                      const std::string &arg) {
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r)
    ranks.push_back(r);
  start(scenario, size, ranks, timeoutMs, arg);
}

void RankGroup::start(const std::string &scenario, int size,
                      const std::vector<int> &ranks, int timeoutMs,
                      const std::string &arg) {
  for (int rank : ranks) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::dup2(fds[1], 1);
      std::string r = std::to_string(rank), n = std::to_string(size),
                  t = std::to_string(timeoutMs);
      const char *argv[] = {
          DATA_PLANE_RANK_BINARY, scenario.c_str(), r.c_str(),   n.c_str(),
          storeDir_.c_str(),      t.c_str(),        arg.c_str(), nullptr};
      ::execv(argv[0], const_cast<char **>(argv));
      ::_exit(127);
    }
    ::close(fds[1]);
    RankProcess p;
    p.rank = rank;
    p.pid = pid;
    p.outFd = fds[0];
    procs_.push_back(p);
  }
}

RankProcess &RankGroup::process(int rank) {
  for (RankProcess &p : procs_)
    if (p.rank == rank)
      return p;
  static RankProcess none;
  ADD_FAILURE() << "no process for rank " << rank;
  return none;
}

void RankGroup::pump(int timeoutMs) {
  std::vector<pollfd> fds;
  for (RankProcess &p : procs_)
    if (p.outFd >= 0)
      fds.push_back({p.outFd, POLLIN, 0});
  if (!fds.empty()) {
    ::poll(fds.data(), fds.size(), timeoutMs);
  } else {
    ::usleep(timeoutMs * 1000);
  }
  for (RankProcess &p : procs_) {
    if (p.outFd >= 0) {
      pollfd one{p.outFd, POLLIN, 0};
      while (::poll(&one, 1, 0) > 0) {
        char buf[4096];
        ssize_t n = ::read(p.outFd, buf, sizeof(buf));
        if (n <= 0) {
          ::close(p.outFd);
          p.outFd = -1;
          break;
        }
        p.out.append(buf, n);
      }
    }
    if (!p.exited) {
      int status = 0;
      if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
        p.exited = true;
        p.exitTime = Clock::now();
        p.exitCode =
            WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      }
    }
  }
}

bool RankGroup::waitForLine(int rank, const std::string &line,
                            Clock::time_point deadline) {
  for (;;) {
    RankProcess &p = process(rank);
    if (p.out.find(line + "\n") != std::string::npos)
      return true;
    if (Clock::now() >= deadline || (p.exited && p.outFd < 0))
      return false;
    pump(5);
  }
}

bool RankGroup::waitAll(Clock::time_point deadline) {
  for (;;) {
    bool all = true;
    for (RankProcess &p : procs_)
      all = all && p.exited && p.outFd < 0;
    if (all)
      return true;
    if (Clock::now() >= deadline) {
      for (RankProcess &p : procs_)
        if (!p.exited)
          ::kill(p.pid, SIGKILL);
      for (RankProcess &p : procs_)
        if (!p.exited) {
          ::waitpid(p.pid, nullptr, 0);
          p.exited = true;
          p.exitCode = -SIGKILL;
        }
      return false;
    }
    pump(5);
  }
}

void RankGroup::kill(int rank) { ::kill(process(rank).pid, SIGKILL); }

std::optional<Clock::time_point>
RankGroup::killWhenReady(int victim, std::chrono::milliseconds within) {
  for (const RankProcess &p : procs_)
    if (!waitForLine(p.rank, "READY", Clock::now() + std::chrono::seconds(20)))
      return std::nullopt;
  Clock::time_point killed = Clock::now();
  kill(victim);
  if (!waitAll(killed + within))
    return std::nullopt;
  return killed;
}

long RankGroup::exitedAfterMs(int rank, Clock::time_point since) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          process(rank).exitTime - since)
          .count());
}

std::vector<RankStatus> RankGroup::statuses(int rank) {
  std::vector<RankStatus> out;
  std::istringstream in(process(rank).out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("STATUS ", 0) != 0)
      continue;
    std::istringstream fields(line.substr(7));
    RankStatus s;
    fields >> s.rank >> s.code >> s.elapsedMs;
    std::getline(fields, s.message);
    if (!s.message.empty() && s.message[0] == ' ')
      s.message.erase(0, 1);
    out.push_back(s);
  }
  return out;
}

std::string RankGroup::describe() const {
  std::string s;
  for (const RankProcess &p : procs_)
    s += "rank " + std::to_string(p.rank) + " exit " +
         std::to_string(p.exitCode) + " output:\n" + p.out;
  return s;
}

std::vector<pid_t> childProcesses() {
  std::vector<pid_t> out;
  pid_t self = ::getpid();
  DIR *dir = ::opendir("/proc");
  if (!dir)
    return out;
  while (dirent *e = ::readdir(dir)) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0)
      continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string text;
    std::getline(stat, text);
    size_t close = text.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(text.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == self)
      out.push_back(pid);
  }
  ::closedir(dir);
  return out;
}

} // namespace monarch::testing
