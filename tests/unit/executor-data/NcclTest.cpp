//===- NcclTest.cpp - A one-rank NCCL communicator on a GPU -----*- C++ -*-===//
//
// Runs only where a CUDA device is visible (tests/gpu/run.sh on a machine
// with a GPU); skips elsewhere. One rank: a send to self grouped with its
// receive, and all_reduce / all_gather / broadcast compared with the result
// computed on the CPU.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Communicator.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

using namespace monarch::executor;
using monarch::DType;
using monarch::dtypeSize;
using namespace std::chrono_literals;

namespace {

TEST(NcclOneRank, SendToSelfAndAllReduceMatchCpu) {
  Status avail = backendAvailable(Backend::Nccl);
  if (!avail)
    GTEST_SKIP() << avail.toString();
  auto store = createInProcessStore();
  CommOptions options;
  options.timeout = 20000ms;
  auto made =
      createCommunicator(Backend::Nccl, *store, 0, 1, {}, "gpu", options);
  ASSERT_TRUE(made) << made.status().toString();
  Communicator &c = **made;
  const size_t n = 1 << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = float(i % 1000) * 0.5f - 7.0f;
  float *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&in), n * sizeof(float)),
            cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&out), n * sizeof(float)),
            cudaSuccess);
  ASSERT_EQ(
      cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  std::vector<float> back(n);
  auto fetch = [&] {
    std::fill(back.begin(), back.end(), -1.0f);
    ASSERT_EQ(
        cudaMemcpy(back.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost),
        cudaSuccess);
  };

  // Send to self, grouped with the receive.
  ASSERT_EQ(cudaMemset(out, 0, n * sizeof(float)), cudaSuccess);
  Status st = c.post({CommOp::send(in, n, DType::F32, 0),
                      CommOp::recv(out, n, DType::F32, 0)})
                  ->wait(20s);
  ASSERT_TRUE(st) << st.toString();
  fetch();
  EXPECT_EQ(back, host);

  // all_reduce of one rank: the CPU result is the input (sum, max, avg).
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg}) {
    ASSERT_EQ(cudaMemset(out, 0, n * sizeof(float)), cudaSuccess);
    st = c.allReduce(in, out, n, DType::F32, op)->wait(20s);
    ASSERT_TRUE(st) << st.toString();
    fetch();
    EXPECT_EQ(back, host) << reduceOpName(op);
  }
  ASSERT_EQ(cudaMemset(out, 0, n * sizeof(float)), cudaSuccess);
  ASSERT_TRUE(c.allGather(in, out, n, DType::F32)->wait(20s));
  fetch();
  EXPECT_EQ(back, host);

  // A duplicate (ncclCommSplit) works alongside.
  auto dup = c.duplicate("gpu-dup");
  ASSERT_TRUE(dup) << dup.status().toString();
  ASSERT_TRUE((*dup)->broadcast(in, out, n, DType::F32, 0)->wait(20s));
  fetch();
  EXPECT_EQ(back, host);

  c.abort("test done");
  EXPECT_EQ(c.allReduce(in, out, n, DType::F32)->wait(5s).code(),
            StatusCode::Aborted);
  cudaFree(in);
  cudaFree(out);
}

} // namespace
