//===- DTypeTest.cpp - The one element-type enum ----------------*- C++ -*-===//

#include "monarch/Support/DType.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace monarch;

TEST(DType, BothSpellingsParseBackToTheSameType) {
  std::set<std::string> names;
  for (DType d : kAllDTypes) {
    EXPECT_EQ(parseDType(dtypeName(d)), d) << dtypeName(d);
    EXPECT_EQ(parseDType(dtypeMlirName(d)), d) << dtypeMlirName(d);
    EXPECT_TRUE(names.insert(dtypeName(d)).second) << dtypeName(d);
    EXPECT_TRUE(names.insert(dtypeMlirName(d)).second) << dtypeMlirName(d);
  }
  EXPECT_EQ(parseDType("bool"), DType::I1);
  EXPECT_EQ(parseDType("uint8"), DType::UI8);
  EXPECT_EQ(parseDType("float128"), std::nullopt);
  EXPECT_EQ(parseDType(""), std::nullopt);
}

TEST(DType, SizesAndKinds) {
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I16), 2u);
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  // A value decoded from an untrusted plan that is no DType has no size.
  EXPECT_EQ(dtypeSize(static_cast<DType>(0)), 0u);
  EXPECT_EQ(dtypeSize(static_cast<DType>(11)), 0u);
  EXPECT_STREQ(dtypeName(static_cast<DType>(42)), "unknown");
  int floats = 0;
  for (DType d : kAllDTypes)
    floats += isFloatDType(d);
  EXPECT_EQ(floats, 4);
}

// The plan's wire values (plan/idl/ExecutionPlan.thrift, also checked by a
// static_assert in PlanThrift.cpp): a stored plan must keep meaning the same.
TEST(DType, WireValuesAreStable) {
  EXPECT_EQ(static_cast<int>(DType::F32), 1);
  EXPECT_EQ(static_cast<int>(DType::I1), 5);
  EXPECT_EQ(static_cast<int>(DType::I64), 9);
  EXPECT_EQ(static_cast<int>(DType::UI8), 10);
}
