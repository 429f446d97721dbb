//===- PlanCacheTest.cpp - The on-disk compile cache ------------*- C++ -*-===//
//
// Hit, miss, corrupt entry, disabled cache, key sensitivity, and where the
// directory comes from in the environment.
//
//===----------------------------------------------------------------------===//

#include "SamplePlan.h"

#include "ScopedEnv.h"

#include "monarch/Codegen/PlanCache.h"
#include "monarch/Plan/PlanFile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace monarch::codegen;
using namespace monarch::plan;
namespace fs = std::filesystem;

namespace {

class PlanCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("mcplan-cache-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    StatusOr<std::string> b =
        serializePlan(monarch::plan::testing::samplePlan());
    ASSERT_TRUE(b.isOk());
    bytes = *b;
  }
  void TearDown() override { fs::remove_all(dir); }

  PlanCache cache(bool enabled = true) {
    return PlanCache(PlanCacheConfig{enabled, dir.string()});
  }

  fs::path dir;
  std::string bytes;
};

TEST_F(PlanCacheTest, MissThenHitWithTheSameBytes) {
  PlanCache c = cache();
  std::string key = planCacheKey("module {}", "compiler", "options");
  EXPECT_FALSE(c.lookup(key).has_value());
  ASSERT_TRUE(c.store(key, bytes).isOk());
  std::optional<std::string> hit = c.lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, bytes);
  // Entries are sharded by the first two hex digits of the key.
  EXPECT_TRUE(fs::exists(dir / key.substr(0, 2) / (key + ".mcplan")));
  EXPECT_EQ(c.entryPath(key),
            (dir / key.substr(0, 2) / (key + ".mcplan")).string());
  // No temporary files are left next to the entry.
  size_t files = 0;
  for (auto &e : fs::recursive_directory_iterator(dir))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST_F(PlanCacheTest, KeysDependOnEveryInput) {
  std::string key = planCacheKey("m", "c", "o");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, planCacheKey("m", "c", "o"));
  EXPECT_NE(key, planCacheKey("m2", "c", "o"));
  EXPECT_NE(key, planCacheKey("m", "c2", "o"));
  EXPECT_NE(key, planCacheKey("m", "c", "o2"));
  // Length prefixes: moving a character between fields changes the key.
  EXPECT_NE(planCacheKey("ab", "c", "o"), planCacheKey("a", "bc", "o"));
}

TEST_F(PlanCacheTest, CorruptEntryIsRemovedAndReportedAsMiss) {
  PlanCache c = cache();
  std::string key = planCacheKey("x", "y", "z");
  ASSERT_TRUE(c.store(key, bytes).isOk());
  for (std::string damaged :
       {bytes.substr(0, bytes.size() / 2), std::string("junk"),
        std::string(bytes).replace(40, 1, "\x7f")}) {
    std::ofstream(c.entryPath(key), std::ios::binary | std::ios::trunc)
        << damaged;
    std::string why;
    EXPECT_FALSE(c.lookup(key, &why).has_value());
    EXPECT_FALSE(why.empty());
    EXPECT_FALSE(fs::exists(c.entryPath(key))) << why;
    // Rebuilt: storing again makes it a hit.
    ASSERT_TRUE(c.store(key, bytes).isOk());
    ASSERT_TRUE(c.lookup(key).has_value());
  }
}

TEST_F(PlanCacheTest, DisabledCacheNeitherReadsNorWrites) {
  PlanCache on = cache(true), off = cache(false);
  std::string key = planCacheKey("a", "b", "c");
  ASSERT_TRUE(on.store(key, bytes).isOk());
  EXPECT_FALSE(off.lookup(key).has_value());
  std::string other = planCacheKey("d", "e", "f");
  EXPECT_TRUE(off.store(other, bytes).isOk());
  EXPECT_FALSE(fs::exists(on.entryPath(other)));
}

TEST_F(PlanCacheTest, UnwritableDirectoryIsAnError) {
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  PlanCache c(PlanCacheConfig{true, (dir / "file").string()});
  Status s = c.store(planCacheKey("a", "b", "c"), bytes);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("cannot create cache directory"),
            std::string::npos)
      << s.message();
}

using monarch::testing::ScopedEnv;

TEST(PlanCacheConfig, FromTheEnvironment) {
  ScopedEnv home("HOME", "/home/u"), xdg("XDG_CACHE_HOME", nullptr),
      dirEnv("MONARCH_CACHE_DIR", nullptr),
      off("MONARCH_DISABLE_CACHE", nullptr);
  PlanCacheConfig c = planCacheConfigFromEnvironment();
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.directory, "/home/u/.cache/monarch-compile");
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(planCacheConfigFromEnvironment().directory,
              "/xdg/monarch-compile");
    ScopedEnv m("MONARCH_CACHE_DIR", "/elsewhere");
    EXPECT_EQ(planCacheConfigFromEnvironment().directory, "/elsewhere");
  }
  {
    ScopedEnv d("MONARCH_DISABLE_CACHE", "1");
    EXPECT_FALSE(planCacheConfigFromEnvironment().enabled);
  }
  {
    ScopedEnv d("MONARCH_DISABLE_CACHE", "0");
    EXPECT_TRUE(planCacheConfigFromEnvironment().enabled);
  }
  {
    ScopedEnv h("HOME", nullptr);
    EXPECT_FALSE(planCacheConfigFromEnvironment().enabled);
  }
}

TEST(PlanCacheConfig, FingerprintNamesTheCompilerFiles) {
  const void *anchor = reinterpret_cast<const void *>(&planCacheKey);
  std::string fp = compilerFingerprint({anchor});
  EXPECT_NE(fp.find("monarch-compile"), std::string::npos);
  EXPECT_NE(fp.find("libMonarchCodegen"), std::string::npos) << fp;
  EXPECT_EQ(fp, compilerFingerprint({anchor}));
}

} // namespace
