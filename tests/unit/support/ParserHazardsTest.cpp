//===- ParserHazardsTest.cpp - Inputs upstream parsers crash on -*- C++ -*-===//

#include "monarch/Support/ParserHazards.h"

#include <gtest/gtest.h>

using monarch::findParserHazard;

TEST(ParserHazards, IntegersThatFitAreLeftToTheParser) {
  EXPECT_FALSE(findParserHazard("permutation = [1, 0]"));
  EXPECT_FALSE(findParserHazard("dimensions = [9223372036854775807]"));
  EXPECT_FALSE(findParserHazard("dimensions = [-9223372036854775808]"));
  EXPECT_FALSE(findParserHazard("dimensions = [00000000000000000000001]"));
  // Other attributes and unterminated arrays are the parser's business.
  EXPECT_FALSE(findParserHazard("shape = [100000000000000000000]"));
  EXPECT_FALSE(findParserHazard("permutation = [1, 0"));
  EXPECT_FALSE(findParserHazard("permutation"));
  EXPECT_FALSE(findParserHazard(""));
}

TEST(ParserHazards, TooLargeIsFoundAtItsLineAndColumn) {
  auto h = findParserHazard("a\n  x permutation = [0, 9223372036854775808]");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->line, 2u);
  EXPECT_EQ(h->col, 23u);
  EXPECT_NE(h->message.find("`permutation`"), std::string::npos);
  h = findParserHazard("dimensions=[\n -9223372036854775809]");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->line, 2u);
  EXPECT_EQ(h->col, 2u); // at the sign
  EXPECT_TRUE(findParserHazard("dimensions = [18446744073709551616]"));
}
