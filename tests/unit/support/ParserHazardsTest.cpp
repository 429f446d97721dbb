//===- ParserHazardsTest.cpp - Inputs upstream parsers crash on -*- C++ -*-===//

#include "monarch/Support/ParserHazards.h"

#include <gtest/gtest.h>

using monarch::findParserHazard;

TEST(ParserHazards, IntegersThatFitAreLeftToTheParser) {
  EXPECT_FALSE(findParserHazard("permutation = [1, 0]"));
  EXPECT_FALSE(findParserHazard("dimensions = [9223372036854775807]"));
  EXPECT_FALSE(findParserHazard("dimensions = [-9223372036854775808]"));
  EXPECT_FALSE(findParserHazard("dimensions = [00000000000000000000001]"));
  EXPECT_FALSE(findParserHazard("dimensions = [ ]"));
  EXPECT_FALSE(findParserHazard("dimensions = [ 1 ,2 ]"));
  // Other attributes, the generic form, comments and a missing `=` are
  // the parser's business (it reports them without crashing).
  EXPECT_FALSE(findParserHazard("shape = [100000000000000000000]"));
  EXPECT_FALSE(findParserHazard("{dimensions = array<i64: 1>}"));
  EXPECT_FALSE(findParserHazard("// the permutation = = [x]"));
  EXPECT_FALSE(findParserHazard("permutation [1, 0]"));
  EXPECT_FALSE(findParserHazard("permutation"));
  EXPECT_FALSE(findParserHazard(""));
}

TEST(ParserHazards, MalformedArraysAreRefusedWhereTheyGoWrong) {
  // Each of these makes MLIR 22's linalg parsers crash after their error.
  struct Case {
    const char *text;
    size_t col;
  } cases[] = {{"permutation = [1, 0", 20},  {"permutation = = [1, 0]", 15},
               {"permutation = [a, 0]", 16}, {"permutation = [1.5, 0]", 17},
               {"permutation = [1 0]", 18},  {"permutation = [1, 0,]", 21},
               {"dimensions = [-]", 15}};
  for (const Case &c : cases) {
    auto h = findParserHazard(c.text);
    ASSERT_TRUE(h) << c.text;
    EXPECT_EQ(h->line, 1u) << c.text;
    EXPECT_EQ(h->col, c.col) << c.text;
    EXPECT_NE(h->message.find("expected a list of integers"), std::string::npos)
        << c.text;
  }
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
