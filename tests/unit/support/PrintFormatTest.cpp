//===- PrintFormatTest.cpp - mc.debug_print's text against numpy's --------===//
//
// The expected strings are what numpy 2 and Python's format() print for the
// same values (str(np.float32(1e10)), format(-2.5, '+08.2f'), ...).
//
//===----------------------------------------------------------------------===//
#include "monarch/Support/PrintFormat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

using namespace monarch;
using namespace monarch::printfmt;

namespace {

template <typename T>
std::string scalar(DType dtype, T v, std::string_view spec = {}) {
  return formatValue({dtype, &v, {}}, spec);
}

uint16_t half(float f) {
  // Exact for the values used here (representable in binary16).
  uint32_t x;
  std::memcpy(&x, &f, 4);
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(((x >> 16) & 0x8000) | (exp << 10) |
                               ((x >> 13) & 0x3ff));
}

TEST(PrintFormat, ScalarsPrintAsNumpyPrintsThem) {
  EXPECT_EQ(scalar(DType::F32, 0.1f), "0.1");
  EXPECT_EQ(scalar(DType::F32, 1.0f), "1.0");
  EXPECT_EQ(scalar(DType::F32, 2.5f), "2.5");
  EXPECT_EQ(scalar(DType::F32, -0.0f), "-0.0");
  EXPECT_EQ(scalar(DType::F32, 1e10f), "1e+10");
  EXPECT_EQ(scalar(DType::F32, 123456789.0f), "1.2345679e+08");
  EXPECT_EQ(scalar(DType::F32, 1e-5f), "1e-05");
  EXPECT_EQ(scalar(DType::F32, 1234.5f), "1234.5");
  EXPECT_EQ(scalar(DType::F64, 123456789.0), "123456789.0");
  EXPECT_EQ(scalar(DType::F64, 1e15), "1000000000000000.0");
  EXPECT_EQ(scalar(DType::F64, 1e16), "1e+16");
  EXPECT_EQ(scalar(DType::F64, 0.0001), "0.0001");
  EXPECT_EQ(scalar(DType::F32, 1.0f / 0.0f), "inf");
  EXPECT_EQ(scalar(DType::I32, int32_t{-7}), "-7");
  EXPECT_EQ(scalar(DType::I64, int64_t{1} << 40), "1099511627776");
  EXPECT_EQ(scalar(DType::I1, uint8_t{1}), "True");
  EXPECT_EQ(scalar(DType::F16, half(999.0f)), "999.0");
  EXPECT_EQ(scalar(DType::F16, half(1234.0f)), "1.234e+03");
  // bfloat16 0.1 is 0.10009765625: the shortest text that reads back as it.
  uint16_t bf = 0x3dcd;
  EXPECT_EQ(scalar(DType::BF16, bf), "0.1");
}

TEST(PrintFormat, SpecsFollowPythonsFormat) {
  EXPECT_EQ(scalar(DType::F64, 3.14159, ".3f"), "3.142");
  EXPECT_EQ(scalar(DType::F32, -2.5f, "+08.2f"), "-0002.50");
  EXPECT_EQ(scalar(DType::I32, int32_t{7}, ">5d"), "    7");
  EXPECT_EQ(scalar(DType::F64, 0.25, ".1%"), "25.0%");
  EXPECT_EQ(scalar(DType::F64, 12345.678, ".3e"), "1.235e+04");
  EXPECT_EQ(scalar(DType::I32, int32_t{5}, "^7d"), "   5   ");
  Status bad = validSpec(",.2f");
  EXPECT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("unsupported format spec"), std::string::npos);
  EXPECT_EQ(bad.kind(), monarch::ErrorKind::Unsupported);
  EXPECT_EQ(validSpec(".f").kind(), monarch::ErrorKind::Program);
}

TEST(PrintFormat, ArraysPrintAsNumpyPrintsThem) {
  std::vector<int32_t> v(24);
  std::iota(v.begin(), v.end(), 0);
  EXPECT_EQ(formatValue({DType::I32, v.data(), {2, 3, 4}}),
            "[[[ 0  1  2  3]\n  [ 4  5  6  7]\n  [ 8  9 10 11]]\n\n"
            " [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]");
  uint8_t b[2] = {1, 0};
  EXPECT_EQ(formatValue({DType::I1, b, {2}}), "[ True False]");
  std::vector<int32_t> big(2000);
  std::iota(big.begin(), big.end(), 0);
  EXPECT_EQ(formatValue({DType::I32, big.data(), {2000}}),
            "[   0    1    2 ... 1997 1998 1999]");
  EXPECT_EQ(formatValue({DType::I32, big.data(), {40, 50}}),
            "[[   0    1    2 ...   47   48   49]\n"
            " [  50   51   52 ...   97   98   99]\n"
            " [ 100  101  102 ...  147  148  149]\n"
            " ...\n"
            " [1850 1851 1852 ... 1897 1898 1899]\n"
            " [1900 1901 1902 ... 1947 1948 1949]\n"
            " [1950 1951 1952 ... 1997 1998 1999]]");
  float f[3] = {1.0f, 2.5f, -0.125f};
  EXPECT_EQ(formatValue({DType::F32, f, {3}}), "[ 1.     2.5   -0.125]");
  auto floats = [](std::vector<double> v, DType dtype = DType::F64) {
    std::vector<float> f32(v.begin(), v.end());
    const void *data =
        dtype == DType::F64 ? static_cast<const void *>(v.data()) : f32.data();
    return formatValue({dtype, data, {static_cast<int64_t>(v.size())}});
  };
  // str(np.array(...)) of the same values.
  EXPECT_EQ(floats({1.0, 2.5}), "[1.  2.5]");
  EXPECT_EQ(floats({0, 1, 2}, DType::F32), "[0. 1. 2.]");
  EXPECT_EQ(floats({1e10, 1}), "[1.e+10 1.e+00]");
  EXPECT_EQ(floats({1.5e10, 1}, DType::F32), "[1.5e+10 1.0e+00]");
  EXPECT_EQ(floats({1.25e-5, 1}), "[1.25e-05 1.00e+00]");
  EXPECT_EQ(floats({-1e10, 2.5e-3}), "[-1.0e+10  2.5e-03]");
  EXPECT_EQ(floats({0.1, 0.25, -3}), "[ 0.1   0.25 -3.  ]");
  EXPECT_EQ(floats({1.0 / 3, 2.0 / 3}, DType::F32), "[0.33333334 0.6666667 ]");
  EXPECT_EQ(floats({1.0 / 3, 2.0 / 3}), "[0.33333333 0.66666667]");
  EXPECT_EQ(floats({NAN, 1, INFINITY}), "[nan  1. inf]");
  EXPECT_EQ(floats({100, 2000.5}), "[ 100.  2000.5]");
  EXPECT_EQ(formatValue({DType::F32, f, {3}}, ".2f"), "[ 1.00  2.50 -0.12]");
  EXPECT_EQ(formatValue({DType::F32, f, {0}}), "[]");
}

TEST(PrintFormat, ParsesFieldsAndRefusesWhatItCannotPrint) {
  std::vector<Piece> pieces;
  Status ok = parse("step {0} loss {1:.3f} {{literal}}", 2, pieces);
  ASSERT_TRUE(ok.isOk()) << ok.message();
  float loss = 0.12345f;
  int32_t step = 3;
  EXPECT_EQ(format(pieces, {{DType::I32, &step, {}}, {DType::F32, &loss, {}}}),
            "step 3 loss 0.123 {literal}");
  Status past = parse("{2}", 2, pieces);
  EXPECT_FALSE(past.isOk());
  EXPECT_NE(past.message().find("names value 2, but there are 2"),
            std::string::npos);
  // A format written wrong is the program's mistake; a spec Python's
  // format() takes but this printer lacks is unsupported.
  EXPECT_EQ(past.kind(), monarch::ErrorKind::Program);
  EXPECT_EQ(parse("{x}", 1, pieces).kind(), monarch::ErrorKind::Program);
  EXPECT_EQ(parse("{0", 1, pieces).kind(), monarch::ErrorKind::Program);
  EXPECT_EQ(parse("a } b", 0, pieces).kind(), monarch::ErrorKind::Program);
  EXPECT_EQ(parse("{0:,}", 1, pieces).kind(), monarch::ErrorKind::Unsupported);
}

} // namespace
