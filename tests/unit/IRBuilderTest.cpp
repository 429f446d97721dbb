//===- IRBuilderTest.cpp - Building monarch IR through the C++ API -*- C++ -*-===//

#include "monarch/IR/MonarchDialect.h"

#include <gtest/gtest.h>

TEST(MonarchDialect, Loads) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<monarch::MonarchDialect>();
  EXPECT_NE(ctx.getLoadedDialect("monarch"), nullptr);
}
