//===- ProgressTest.cpp - Progress lines for long work --------------------===//
//
// Off a terminal with MONARCH_LOG_LEVEL=info, a ProgressLine writes lines:
// nothing for work shorter than its delay, then the current text at most
// once a second, then the total. (On a terminal it rewrites one line; that
// is checked by hand: `script -qc "monarch-run P --steps 30000"`.)
//
//===----------------------------------------------------------------------===//
#include "monarch/Support/Progress.h"

#include "ScopedEnv.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace monarch;
using namespace std::chrono_literals;

namespace {

/// Runs `body` with stderr sent to a file; returns what it wrote. The file
/// is named by the process: ctest -j runs each test of this file as its own
/// process at once, and one truncating another's file left NULs where the
/// other's first line had been.
template <typename Body> std::string capturedStderr(Body body) {
  std::string path = ::testing::TempDir() + "progress-stderr-" +
                     std::to_string(::getpid()) + ".txt";
  std::fflush(stderr);
  int saved = ::dup(STDERR_FILENO);
  FILE *file = std::fopen(path.c_str(), "w");
  ::dup2(::fileno(file), STDERR_FILENO);
  body();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::fclose(file);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

} // namespace

TEST(Progress, ShortWorkIsSilent) {
  monarch::testing::ScopedEnv level("MONARCH_LOG_LEVEL", "info");
  std::string out = capturedStderr([] {
    ProgressLine line("testing", 2s);
    line.update("a");
  });
  EXPECT_EQ(out, "");
}

TEST(Progress, LongWorkWritesAtMostALineASecondThenTheTotal) {
  monarch::testing::ScopedEnv level("MONARCH_LOG_LEVEL", "info");
  std::string out = capturedStderr([] {
    ProgressLine line("testing", 100ms);
    line.update("first");
    std::this_thread::sleep_for(300ms);
    for (int i = 0; i < 1000; ++i)
      line.update("step " + std::to_string(i));
    std::this_thread::sleep_for(1600ms);
  });
  EXPECT_EQ(out.rfind("monarch: testing: first (0.", 0), 0u) << out;
  EXPECT_NE(out.find("monarch: testing: step 999 ("), std::string::npos) << out;
  EXPECT_EQ(out.find("step 500"), std::string::npos) << out;
  EXPECT_NE(out.find("monarch: testing: done in "), std::string::npos) << out;
  size_t lines = 0;
  for (char c : out)
    lines += c == '\n';
  EXPECT_EQ(lines, 3u) << out;
}

TEST(Progress, WithoutInfoLogsNothingIsWrittenOffATerminal) {
  monarch::testing::ScopedEnv level("MONARCH_LOG_LEVEL", "warn");
  std::string out = capturedStderr([] {
    ProgressLine line("testing", 10ms);
    line.update("a");
    std::this_thread::sleep_for(100ms);
  });
  EXPECT_EQ(out, "");
}
