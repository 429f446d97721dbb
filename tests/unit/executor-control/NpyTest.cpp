//===- NpyTest.cpp - .npy files against numpy itself
//-----------------------===//
//
// numpy writes, Npy.h reads (values compared); Npy.h writes, numpy reads
// (checked by numpy). Malformed files get errors, never crashes.
//
//===----------------------------------------------------------------------===//
#include "TestPlans.h"

#include "monarch/Executor/Npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

using namespace monarch::executor;

namespace {

int python(const std::string &code) {
  std::string cmd = std::string(MONARCH_PYTHON) + " -c \"" + code + "\"";
  return std::system(cmd.c_str());
}

TEST(Npy, ReadsWhatNumpyWrites) {
  std::string dir = ::testing::TempDir();
  ASSERT_EQ(python("import numpy as np; d='" + dir +
                   "'; np.save(d+'/f32.npy', np.arange(6, dtype=np.float32)"
                   ".reshape(2,3)/4); np.save(d+'/i64.npy', np.array([-3, 7, "
                   "1<<40])); np.save(d+'/s.npy', np.float64(2.5)); "
                   "np.save(d+'/f.npy', np.asfortranarray(np.ones((2,2), "
                   "np.float32))); np.save(d+'/u16.npy', np.zeros(3, "
                   "np.uint16))"),
            0);
  auto f32 = readNpyFile(dir + "/f32.npy");
  ASSERT_TRUE(f32.isOk()) << f32.status().toString();
  EXPECT_EQ(f32->describe(), "float32[2, 3]");
  std::vector<float> got = monarch::testing::toFloats(*f32);
  EXPECT_EQ(got, (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1, 1.25f}));
  auto i64 = readNpyFile(dir + "/i64.npy");
  ASSERT_TRUE(i64.isOk()) << i64.status().toString();
  int64_t v[3];
  std::memcpy(v, i64->data.data(), sizeof(v));
  EXPECT_EQ(v[0], -3);
  EXPECT_EQ(v[2], int64_t(1) << 40);
  auto scalar = readNpyFile(dir + "/s.npy");
  ASSERT_TRUE(scalar.isOk()) << scalar.status().toString();
  EXPECT_EQ(scalar->describe(), "float64[]");
  // Fortran order and dtypes the executor does not move are refused.
  auto fortran = readNpyFile(dir + "/f.npy");
  EXPECT_NE(fortran.status().message().find("Fortran"), std::string::npos);
  auto u16 = readNpyFile(dir + "/u16.npy");
  EXPECT_NE(u16.status().message().find("unsupported dtype"),
            std::string::npos);
}

TEST(Npy, NumpyReadsWhatWeWrite) {
  std::string dir = ::testing::TempDir();
  HostTensor t = monarch::testing::floats({1.5f, -2, 3, 4, 5, 6});
  t.shape = {3, 2};
  ASSERT_TRUE(writeNpyFile(dir + "/ours.npy", t).isOk());
  HostTensor s;
  s.dtype = "int32";
  s.shape = {};
  int32_t seven = 7;
  s.data.assign(reinterpret_cast<const char *>(&seven), 4);
  ASSERT_TRUE(writeNpyFile(dir + "/scalar.npy", s).isOk());
  EXPECT_EQ(python("import numpy as np; d='" + dir +
                   "'; a=np.load(d+'/ours.npy'); assert a.dtype==np.float32 "
                   "and a.shape==(3,2) and a[0,0]==1.5 and a[2,1]==6, a; "
                   "b=np.load(d+'/scalar.npy'); assert b.shape==() and b==7 "
                   "and b.dtype==np.int32, b"),
            0);
  HostTensor bad = t;
  bad.data.resize(5);
  EXPECT_EQ(writeNpyFile(dir + "/bad.npy", bad).code(),
            StatusCode::InvalidArgument);
}

TEST(Npy, MalformedBytesAreErrors) {
  EXPECT_FALSE(parseNpy("").isOk());
  EXPECT_FALSE(parseNpy("\x93NUMPY\x01\x00\xff\xff").isOk());
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(1000000, 1000000), }\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  auto huge = parseNpy(bytes, "huge.npy");
  ASSERT_FALSE(huge.isOk());
  EXPECT_NE(huge.status().message().find("huge.npy"), std::string::npos);
}

} // namespace
