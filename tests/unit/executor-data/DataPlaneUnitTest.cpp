//===- DataPlaneUnitTest.cpp - In-process data-plane tests ------*- C++ -*-===//
//
// Pieces that need no second process: float16/bfloat16 conversions against
// the compiler's _Float16 and a double-precision reference, the stores, Work
// handles, argument checking of createCommunicator and post(), a one-rank
// Gloo communicator, and the fake communicator with threads as ranks.
//
//===----------------------------------------------------------------------===//

#include "core/Reduction.h"
#include "monarch/Executor/Communicator.h"
#include "monarch/Executor/FakeCommunicator.h"

#include "ProcessHarness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <future>
#include <limits>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace monarch::executor;
using monarch::DType;
using monarch::dtypeSize;
using namespace std::chrono_literals;

namespace {

TEST(Half, DecodeMatchesCompilerForEveryBitPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    _Float16 h;
    uint16_t b = uint16_t(bits);
    std::memcpy(&h, &b, 2);
    float want = float(h), got = data::halfToFloat(b);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << bits;
    else
      ASSERT_EQ(got, want) << "bits " << bits;
  }
}

TEST(Half, EncodeMatchesCompilerRounding) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mag(-30, 17);
  for (int i = 0; i < 200000; ++i) {
    float f = std::ldexp(1.0f + (rng() % 1000000) / 1e6f, int(mag(rng)));
    if (rng() & 1)
      f = -f;
    _Float16 h = _Float16(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(data::floatToHalf(f), want) << f;
  }
  EXPECT_EQ(data::floatToHalf(1e6f), 0x7c00); // overflow to infinity
}

TEST(BFloat16, RoundsToNearestEven) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    uint32_t x = rng();
    float f;
    std::memcpy(&f, &x, 4);
    if (!std::isfinite(f) || std::fabs(f) > 1e38f)
      continue;
    uint16_t b = data::floatToBFloat16(f);
    double got = data::bfloat16ToFloat(b);
    // Neighbours of the truncation: the result is the nearer (ties: even).
    uint16_t lo = uint16_t(x >> 16), hi = uint16_t(lo + 1);
    double dlo = std::fabs(double(data::bfloat16ToFloat(lo)) - f);
    double dhi = std::fabs(double(data::bfloat16ToFloat(hi)) - f);
    uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
    ASSERT_EQ(b, want) << f << " got " << got;
  }
}

TEST(Reduction, Float16SumAndAverageGoThroughFloat32) {
  uint16_t a[2] = {data::floatToHalf(1.5f), data::floatToHalf(-2.0f)};
  uint16_t b[2] = {data::floatToHalf(2.25f), data::floatToHalf(8.0f)};
  uint16_t out[2];
  data::reduceElements(out, a, b, 2, DType::F16, ReduceOp::Sum);
  EXPECT_EQ(data::halfToFloat(out[0]), 3.75f);
  EXPECT_EQ(data::halfToFloat(out[1]), 6.0f);
  data::finishAverage(out, 2, DType::F16, 2);
  EXPECT_EQ(data::halfToFloat(out[0]), 1.875f);
  int32_t i[3] = {7, -7, 5};
  data::finishAverage(i, 3, DType::I32, 2);
  EXPECT_EQ(i[0], 3);
  EXPECT_EQ(i[1], -3);
}

/// The bits of `v`, so NaNs and signed zeros compare exactly.
template <typename T> uint64_t bitsOf(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

/// The scalar expression each reduction promises (std::max/std::min as
/// combine() writes them, IEEE add, multiply and divide).
template <typename T> T scalarReduce(T a, T b, ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return a + b;
  case ReduceOp::Prod:
    return a * b;
  case ReduceOp::Max:
    return std::max(a, b);
  case ReduceOp::Min:
    return std::min(a, b);
  }
  return a;
}

template <typename T> void lanesMatchScalar(DType dtype) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uniform(-4, 4);
  const T specials[] = {T(0),
                        -T(0),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::denorm_min(),
                        T(1e30)};
  // Lengths around every vector width (16 float32 or 8 float64 lanes of
  // AVX-512, 8 or 4 of AVX2) and a long one; in place and not.
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(4), size_t(7),
                   size_t(8), size_t(15), size_t(16), size_t(17), size_t(33),
                   size_t(1000), size_t(65537)}) {
    std::vector<T> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = i % 11 == 3 ? specials[i % 7] : T(uniform(rng));
      b[i] = i % 13 == 5 ? specials[(i / 13) % 7] : T(uniform(rng));
    }
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                        ReduceOp::Min, ReduceOp::Avg}) {
      std::vector<T> out(n), inPlace = a;
      data::reduceElements(out.data(), a.data(), b.data(), n, dtype, op);
      data::reduceElements(inPlace.data(), inPlace.data(), b.data(), n, dtype,
                           op);
      if (op == ReduceOp::Avg) {
        data::finishAverage(out.data(), n, dtype, 3);
        data::finishAverage(inPlace.data(), n, dtype, 3);
      }
      for (size_t i = 0; i < n; ++i) {
        T want = scalarReduce(a[i], b[i], op);
        if (op == ReduceOp::Avg)
          want = want / T(3);
        ASSERT_EQ(bitsOf(out[i]), bitsOf(want))
            << monarch::dtypeName(dtype) << " " << reduceOpName(op) << " x" << n
            << " element " << i << ": " << a[i] << ", " << b[i];
        ASSERT_EQ(bitsOf(inPlace[i]), bitsOf(want))
            << "in place: " << monarch::dtypeName(dtype) << " "
            << reduceOpName(op) << " x" << n << " element " << i;
      }
    }
  }
}

TEST(Reduction, VectorLanesGiveTheScalarLoopsBits) {
  // float32 and float64 run in AVX-512, AVX2 or baseline lanes, whichever
  // this machine has: every element must be the scalar expression's, NaNs,
  // infinities, signed zeros and subnormals included.
  lanesMatchScalar<float>(DType::F32);
  lanesMatchScalar<double>(DType::F64);
}

void exerciseStore(Store &store) {
  ASSERT_TRUE(store.set("a", std::string("x\0y", 3)));
  auto got = store.get("a", 100ms);
  ASSERT_TRUE(got) << got.status().toString();
  EXPECT_EQ(*got, std::string("x\0y", 3));
  auto missing = store.get("nope", 50ms);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::DeadlineExceeded);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  Status waited = store.wait({"a", "b"}, 50ms);
  EXPECT_EQ(waited.code(), StatusCode::DeadlineExceeded);
  EXPECT_NE(waited.message().find("'b'"), std::string::npos);
  EXPECT_EQ(waited.message().find("'a'"), std::string::npos);
  std::thread later([&] {
    std::this_thread::sleep_for(30ms);
    (void)store.set("b", "late");
  });
  EXPECT_TRUE(store.wait({"a", "b"}, 2000ms));
  later.join();
  EXPECT_EQ(*store.add("n", 5), 5);
  EXPECT_EQ(*store.add("n", -2), 3);
  EXPECT_EQ(store.add("a", 1).status().code(), StatusCode::InvalidArgument);
  PrefixStore prefixed(store, "p");
  ASSERT_TRUE(prefixed.set("a", "inner"));
  EXPECT_EQ(*store.get("p/a", 10ms), "inner");
  EXPECT_EQ(*store.get("a", 10ms), std::string("x\0y", 3));
}

TEST(Store, InProcess) {
  auto store = createInProcessStore();
  exerciseStore(*store);
}

TEST(Store, FileAddIsAtomicAcrossProcesses) {
  std::string dir =
      ::testing::TempDir() + "/file-store-" + std::to_string(::getpid());
  auto store = createFileStore(dir);
  ASSERT_TRUE(store) << store.status().toString();
  exerciseStore(**store);
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = ::fork();
    if (pid == 0) {
      auto mine = createFileStore(dir);
      for (int i = 0; i < 50; ++i)
        if (!(*mine)->add("counter", 1))
          ::_exit(1);
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(*(*store)->add("counter", 0), 200);
  EXPECT_TRUE(monarch::testing::childProcesses().empty());
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(createFileStore(""));
}

TEST(Work, WaitTimesOutThenCompletes) {
  auto work = std::make_shared<Work>();
  EXPECT_EQ(work->wait(10ms).code(), StatusCode::DeadlineExceeded);
  EXPECT_FALSE(work->isCompleted());
  Status seen(StatusCode::Internal, "unset");
  work->onComplete([&](const Status &s) { seen = s; });
  work->complete(Status(StatusCode::Aborted, "first"));
  work->complete(Status::ok()); // ignored
  EXPECT_EQ(work->wait(10ms).code(), StatusCode::Aborted);
  EXPECT_EQ(seen.code(), StatusCode::Aborted);
}

TEST(CreateCommunicator, RejectsBadArguments) {
  auto store = createInProcessStore();
  auto code = [&](int rank, int size, std::vector<int> ranks,
                  std::string name) {
    auto c = createCommunicator(Backend::Gloo, *store, rank, size, ranks, name);
    return c ? StatusCode::Ok : c.status().code();
  };
  EXPECT_EQ(code(0, 0, {}, "a"), StatusCode::InvalidArgument);
  EXPECT_EQ(code(2, 2, {}, "b"), StatusCode::InvalidArgument);
  EXPECT_EQ(code(0, 2, {1}, "c"), StatusCode::InvalidArgument); // non-member
  EXPECT_EQ(code(0, 2, {0, 0}, "d"), StatusCode::InvalidArgument);
  EXPECT_EQ(code(0, 2, {0, 5}, "e"), StatusCode::InvalidArgument);
  EXPECT_EQ(code(0, 1, {}, ""), StatusCode::InvalidArgument);
}

TEST(CreateCommunicator, MissingInterfaceIsAnError) {
  // (An unresolvable hostname fails too, but only after the resolver's own
  // timeouts, which depend on the machine's DNS set-up.)
  auto store = createInProcessStore();
  CommOptions options;
  options.timeout = 1000ms;
  options.interface = "nosuchnic0";
  auto c = createCommunicator(Backend::Gloo, *store, 0, 1, {}, "i", options);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), StatusCode::Unavailable);
  EXPECT_NE(c.status().message().find("gloo communicator 'i'"),
            std::string::npos)
      << c.status().message();
}

TEST(CreateCommunicator, NcclWithoutDeviceIsUnavailable) {
  if (backendAvailable(Backend::Nccl))
    GTEST_SKIP() << "a CUDA device is present";
  auto store = createInProcessStore();
  auto c = createCommunicator(Backend::Nccl, *store, 0, 1, {}, "n");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), StatusCode::Unavailable);
  EXPECT_NE(c.status().message().find("nccl"), std::string::npos)
      << c.status().message();
}

TEST(GlooOneRank, EveryOpAndBadOps) {
  auto store = createInProcessStore();
  CommOptions options;
  options.timeout = 2000ms;
  auto made =
      createCommunicator(Backend::Gloo, *store, 0, 1, {}, "solo", options);
  ASSERT_TRUE(made) << made.status().toString();
  Communicator &c = **made;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  std::vector<float> in = {1, 2, 3, 4}, out(4);
  ASSERT_TRUE(c.allReduce(in.data(), out.data(), 4, DType::F32, ReduceOp::Avg)
                  ->wait(1s));
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  ASSERT_TRUE(c.allGather(in.data(), out.data(), 4, DType::F32)->wait(1s));
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  ASSERT_TRUE(c.post({CommOp::send(in.data(), 4, DType::F32, 0, 3),
                      CommOp::recv(out.data(), 4, DType::F32, 0, 3)})
                  ->wait(1s));
  EXPECT_EQ(out, in);
  auto bad = [&](CommOp op) {
    Status st = c.post({op})->wait(1s);
    EXPECT_EQ(st.code(), StatusCode::InvalidArgument) << st.toString();
    EXPECT_NE(st.message().find("gloo"), std::string::npos) << st.message();
    return st.message();
  };
  EXPECT_NE(bad(CommOp::send(in.data(), 4, DType::F32, 1)).find("peer 1"),
            std::string::npos);
  EXPECT_NE(bad(CommOp::broadcast(in.data(), out.data(), 4, DType::F32, 3))
                .find("root 3"),
            std::string::npos);
  bad(CommOp::recv(nullptr, 4, DType::F32, 0));
  bad(CommOp::send(in.data(), 4, DType::F32, 0, kMaxTag));
  bad(CommOp::allToAll(in.data(), in.data() + 1, 2, DType::F32));
  // A send to self outside a group with its receive.
  EXPECT_EQ(c.send(in.data(), 4, DType::F32, 0)->wait(1s).code(),
            StatusCode::InvalidArgument);
  c.abort("done");
  EXPECT_TRUE(c.isAborted());
  EXPECT_EQ(c.allReduce(in.data(), out.data(), 4, DType::F32)->wait(1s).code(),
            StatusCode::Aborted);
}

/// Two Gloo ranks as threads of this process.
std::vector<std::unique_ptr<Communicator>> glooPair(Store &store,
                                                    const std::string &name) {
  std::vector<std::unique_ptr<Communicator>> comms(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      CommOptions options;
      options.timeout = 5000ms;
      auto c =
          createCommunicator(Backend::Gloo, store, r, 2, {}, name, options);
      if (c)
        comms[r] = std::move(*c);
      else
        ADD_FAILURE() << c.status().toString();
    });
  for (auto &t : threads)
    t.join();
  return comms;
}

TEST(GlooInProcess, CompletionCallbacksMayCallBackIn) {
  auto store = createInProcessStore();
  auto comms = glooPair(*store, "callbacks");
  ASSERT_TRUE(comms[0] && comms[1]);
  Communicator &c = *comms[0];
  float x = 0;
  auto pending = c.recv(&x, 1, DType::F32, 1); // never sent
  std::promise<Status> again;
  pending->onComplete([&](const Status &) {
    // Re-entering from the completing thread must not deadlock.
    c.abort("again");
    again.set_value(c.send(&x, 1, DType::F32, 1)->wait(1s));
  });
  std::thread aborter([&] { c.abort("test"); });
  auto fut = again.get_future();
  ASSERT_EQ(fut.wait_for(5s), std::future_status::ready) << "deadlock";
  EXPECT_EQ(fut.get().code(), StatusCode::Aborted);
  aborter.join();
  EXPECT_EQ(pending->wait(1s).code(), StatusCode::Aborted);
  // The other rank sees this one leave.
  EXPECT_EQ(comms[1]->recv(&x, 1, DType::F32, 0)->wait(5s).code(),
            StatusCode::Unavailable);
}

/// Runs `fn(rank, comm)` on a thread per rank of a fake world.
template <typename Fn> void onFakeRanks(FakeCommWorld &world, Fn fn) {
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < world.size(); ++r)
    comms.push_back(world.communicator(r));
  std::vector<std::thread> threads;
  for (int r = 0; r < world.size(); ++r)
    threads.emplace_back([&, r] { fn(r, *comms[r]); });
  for (auto &t : threads)
    t.join();
}

TEST(FakeCommunicator, CollectivesAndSendRecv) {
  FakeCommWorld world(3);
  onFakeRanks(world, [](int r, Communicator &c) {
    std::vector<int32_t> in(6), out(6), gathered(18), scattered(2);
    for (int i = 0; i < 6; ++i)
      in[i] = r * 10 + i;
    EXPECT_TRUE(c.allReduce(in.data(), out.data(), 6, DType::I32)->wait(5s));
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(out[i], 30 + 3 * i);
    EXPECT_TRUE(
        c.allGather(in.data(), gathered.data(), 6, DType::I32)->wait(5s));
    EXPECT_EQ(gathered[13], 21);
    EXPECT_TRUE(c.reduceScatter(in.data(), scattered.data(), 2, DType::I32,
                                ReduceOp::Max)
                    ->wait(5s));
    EXPECT_EQ(scattered[0], 20 + 2 * r);
    int32_t v = r == 1 ? 99 : 0;
    EXPECT_TRUE(c.broadcast(&v, &v, 1, DType::I32, 1)->wait(5s));
    EXPECT_EQ(v, 99);
    int right = (r + 1) % 3, left = (r + 2) % 3;
    int32_t got = -1;
    EXPECT_TRUE(c.post({CommOp::send(&r, 1, DType::I32, right, 4),
                        CommOp::recv(&got, 1, DType::I32, left, 4)})
                    ->wait(5s));
    EXPECT_EQ(got, left);
  });
  EXPECT_EQ(world.postedGroups(0), 5);
}

TEST(FakeCommunicator, ExplicitTagsMatchAcrossDuplicates) {
  FakeCommWorld world(2);
  onFakeRanks(world, [](int r, Communicator &c) {
    auto dup = c.duplicate("dup");
    ASSERT_TRUE(dup);
    // Rank 0 reduces on the original, rank 1 on the duplicate.
    Communicator &mine = r == 0 ? c : **dup;
    int32_t v = r + 1;
    CommOp op = CommOp::allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
    op.tag = 5;
    EXPECT_TRUE(mine.post({op})->wait(5s));
    EXPECT_EQ(v, 3);
  });
}

TEST(FakeCommunicator, KilledRankFailsPeersNamingIt) {
  FakeCommWorld world(3, 5000ms);
  world.kill(2);
  onFakeRanks(world, [](int r, Communicator &c) {
    float x = 1;
    auto start = std::chrono::steady_clock::now();
    Status st = c.allReduce(&x, &x, 1, DType::F32)->wait(5s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    if (r == 2) {
      EXPECT_EQ(st.code(), StatusCode::Aborted);
    } else {
      EXPECT_EQ(st.code(), StatusCode::Unavailable);
      EXPECT_NE(st.message().find("rank 2"), std::string::npos);
    }
  });
}

TEST(FakeCommunicator, SilentPeerTimesOutAndAbortUnblocks) {
  FakeCommWorld world(2, 100ms);
  auto c0 = world.communicator(0);
  auto c1 = world.communicator(1);
  float x = 0;
  EXPECT_EQ(c0->recv(&x, 1, DType::F32, 1)->wait(5s).code(),
            StatusCode::DeadlineExceeded);
  FakeCommWorld slow(2, 10000ms);
  auto s0 = slow.communicator(0);
  auto s1 = slow.communicator(1);
  auto w = s0->recv(&x, 1, DType::F32, 1);
  s1->abort("test");
  EXPECT_EQ(w->wait(2s).code(), StatusCode::Aborted);
}

} // namespace
