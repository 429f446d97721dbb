//===- KnobsTest.cpp - The registry of MONARCH_* variables ----------------===//
#include "monarch/Support/Knobs.h"

#include "ScopedEnv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

using namespace monarch::knobs;

using monarch::testing::ScopedEnv;

TEST(Knobs, EveryEntryIsWellFormed) {
  std::set<std::string> names;
  for (const Knob &k : all()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " twice";
    EXPECT_EQ(std::string(k.name).rfind("MONARCH_", 0), 0u) << k.name;
    EXPECT_GT(std::string(k.doc).size(), 10u) << k.name;
    EXPECT_NE(k.readers, 0u) << k.name;
    EXPECT_EQ(&knob(k.id), &k);
    EXPECT_EQ(find(k.name), &k);
    if (*k.defaultValue) {
      EXPECT_EQ(check(k, k.defaultValue), "") << k.name;
    }
    if (k.type == Type::Choice) {
      EXPECT_NE(std::string(k.choices), "") << k.name;
    }
  }
  EXPECT_EQ(find("MONARCH_NOPE"), nullptr);
}

TEST(Knobs, TypedGettersParseStrictly) {
  {
    ScopedEnv e("MONARCH_COMM_TIMEOUT_MS", nullptr);
    Value<std::chrono::milliseconds> v = getMs(Id::CommTimeoutMs);
    EXPECT_TRUE(v.ok());
    EXPECT_FALSE(v.isSet);
    EXPECT_EQ(v.value.count(), 30000);
  }
  {
    ScopedEnv e("MONARCH_COMM_TIMEOUT_MS", "250");
    EXPECT_EQ(getMs(Id::CommTimeoutMs).value.count(), 250);
    EXPECT_TRUE(getMs(Id::CommTimeoutMs).isSet);
  }
  for (const char *bad : {"abc", "10ms", "0", "-1", " 5", "99999999999"}) {
    ScopedEnv e("MONARCH_COMM_TIMEOUT_MS", bad);
    Value<std::chrono::milliseconds> v = getMs(Id::CommTimeoutMs);
    EXPECT_FALSE(v.ok()) << bad;
    EXPECT_FALSE(v.isSet) << bad;
    EXPECT_EQ(v.value.count(), 30000) << bad;
    EXPECT_EQ(v.error, std::string("MONARCH_COMM_TIMEOUT_MS=") + bad +
                           ": expected a number of milliseconds in "
                           "1..86400000");
  }
  for (auto [text, value] : {std::pair{"1", true},
                             {"TRUE", true},
                             {"yes", true},
                             {"0", false},
                             {"off", false}}) {
    ScopedEnv e("MONARCH_SHM", text);
    EXPECT_EQ(getBool(Id::Shm).value, value) << text;
  }
  {
    ScopedEnv e("MONARCH_SHM", "2");
    EXPECT_FALSE(getBool(Id::Shm).ok());
    EXPECT_TRUE(getBool(Id::Shm).value); // the default
  }
  {
    ScopedEnv e("MONARCH_BACKEND", "nccl");
    EXPECT_EQ(getString(Id::Backend).value, "nccl");
  }
  {
    ScopedEnv e("MONARCH_BACKEND", "ncc");
    EXPECT_NE(getString(Id::Backend).error.find("expected one of gloo,nccl"),
              std::string::npos);
    EXPECT_EQ(getString(Id::Backend).value, "gloo");
  }
  for (const char *good : {"8,32,256", "4,16,128,0"}) {
    ScopedEnv e("MONARCH_MATMUL_TILES", good);
    EXPECT_TRUE(getString(Id::MatmulTiles).ok()) << good;
  }
  for (const char *bad : {"8,32", "8,0,256", "8,32,256,2", "a,b,c"}) {
    ScopedEnv e("MONARCH_MATMUL_TILES", bad);
    EXPECT_FALSE(getString(Id::MatmulTiles).ok()) << bad;
  }
}

TEST(Knobs, ValidateChecksOnlyItsComponents) {
  ScopedEnv a("MONARCH_HEARTBEAT_MS", "soon"); // controller
  ScopedEnv b("MONARCH_SHM", "perhaps");       // worker
  EXPECT_EQ(validate(Controller), "MONARCH_HEARTBEAT_MS=soon: expected a "
                                  "number of milliseconds in 1..3600000");
  EXPECT_EQ(validate(Worker), "MONARCH_SHM=perhaps: expected 1 or 0 "
                              "(true/false, on/off, yes/no)");
  EXPECT_EQ(validate(Compiler), "");
  EXPECT_NE(validate(Controller | Worker).find('\n'), std::string::npos);
}

TEST(Knobs, CompileKeyHasTheSetCompileInputsOnly) {
  ScopedEnv a("MONARCH_MATMUL_TILES", nullptr);
  ScopedEnv b("MONARCH_BACKEND", nullptr);
  ScopedEnv c("MONARCH_CHECK_REPLICATED", nullptr);
  ScopedEnv d("MONARCH_LOG_LEVEL", "debug"); // not a compile input
  EXPECT_EQ(compileKey(), "");
  ScopedEnv e("MONARCH_MATMUL_TILES", "4,16,128");
  EXPECT_EQ(compileKey(), "MONARCH_MATMUL_TILES=4,16,128;");
}
