//===- CompiledExamplesTest.cpp - Real compiled plans on real workers -----===//
//
// Compiles examples/ir/*.mlir with the monarch-compile binary (kernels
// through MLIR, the plan through the codegen), runs their compiled functions
// on local workers, and checks the numbers against references computed here
// with plain loops: the two-stage pipeline of actors (4 ranks, a transfer
// between slices, an SGD update all-reduced inside each stage) and the
// data-parallel MLP training loop (20 steps, loss checked step by step).
//
//===----------------------------------------------------------------------===//
#include "TestPlans.h"

#include "monarch/Executor/Controller.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

using namespace monarch::executor;
using namespace monarch::testing;

namespace {

using Matrix = std::vector<float>; // row-major

Matrix matmul(const Matrix &a, const Matrix &b, int m, int k, int n) {
  Matrix c(m * n, 0.0f);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j)
        c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

Matrix transpose(const Matrix &a, int m, int n) {
  Matrix t(m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      t[j * m + i] = a[i * n + j];
  return t;
}

HostTensor tensor(const Matrix &values, std::vector<int64_t> shape) {
  HostTensor t = floats(values);
  t.shape = std::move(shape);
  return t;
}

HostTensor scalar(float v) {
  HostTensor t = floats({v});
  t.shape = {};
  return t;
}

Matrix random(size_t n, std::mt19937 &rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  Matrix m(n);
  for (float &v : m)
    v = dist(rng);
  return m;
}

/// Compiles `example` to a plan file in the test's temp dir; "" on failure.
std::string compileExample(const std::string &example) {
  std::string out = ::testing::TempDir() + example + ".mcplan";
  const char *bin = std::getenv("MONARCH_COMPILE_BIN");
  std::string cmd = std::string(bin ? bin : MONARCH_COMPILE_BIN) + " " +
                    MONARCH_SOURCE_DIR + "/examples/ir/" + example +
                    ".mlir -o " + out;
  if (std::system(cmd.c_str()) != 0)
    return "";
  return readFile(out);
}

void expectNear(const Matrix &got, const Matrix &want, float tol,
                const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
        << what << " element " << i;
}

std::unique_ptr<Controller> start(int ranks) {
  auto c = Controller::start(localOptions(ranks));
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return c.isOk() ? std::move(c).value() : nullptr;
}

TEST(CompiledExamples, PipelineOfActorsMatchesTheReference) {
  std::string plan = compileExample("pipeline");
  ASSERT_FALSE(plan.empty()) << "monarch-compile failed";
  auto c = start(4);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(plan).isOk());
  std::mt19937 rng(7);
  Matrix w0 = random(16, rng, 1.0f), w1 = random(16, rng, 1.0f);
  Matrix x = random(32, rng, 1.0f);
  ASSERT_TRUE(c->setActorState("@s0::@w", tensor(w0, {4, 4})).isOk());
  ASSERT_TRUE(c->setActorState("@s1::@w", tensor(w1, {4, 4})).isOk());
  auto y = c->call("pipeline", {tensor(x, {8, 4})});
  ASSERT_TRUE(y.isOk()) << y.status().toString();
  expectNear(toFloats((*y)[0]), matmul(matmul(x, w0, 8, 4, 4), w1, 8, 4, 4),
             1e-5f, "pipeline(x)");

  // SGD inside each stage (the gradient all-reduced over the stage's ranks),
  // then the forward pass again with the updated parameters.
  Matrix g0 = random(16, rng, 1.0f), g1 = random(16, rng, 1.0f);
  float lr = 0.25f;
  auto none = c->call("apply_update",
                      {tensor(g0, {4, 4}), tensor(g1, {4, 4}), scalar(lr)});
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_TRUE(none->empty());
  for (int i = 0; i < 16; ++i) {
    w0[i] -= lr * g0[i];
    w1[i] -= lr * g1[i];
  }
  for (int r : {0, 1}) {
    auto w = c->getActorState("@s0::@w", r);
    ASSERT_TRUE(w.isOk()) << w.status().toString();
    expectNear(toFloats(*w), w0, 1e-6f, "s0 w on rank " + std::to_string(r));
  }
  y = c->call("pipeline", {tensor(x, {8, 4})});
  ASSERT_TRUE(y.isOk()) << y.status().toString();
  expectNear(toFloats((*y)[0]), matmul(matmul(x, w0, 8, 4, 4), w1, 8, 4, 4),
             1e-5f, "pipeline(x) after the update");
  EXPECT_TRUE(c->stop().isOk());
}

TEST(CompiledExamples, TensorParallelMlpMatchesTheReference) {
  std::string plan = compileExample("tensor_parallel");
  ASSERT_FALSE(plan.empty()) << "monarch-compile failed";
  auto c = start(4);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(plan).isOk());
  std::mt19937 rng(5);
  Matrix w1 = random(16 * 64, rng, 0.5f), w2 = random(64 * 8, rng, 0.5f);
  Matrix x = random(8 * 16, rng, 1.0f);
  // setup() scatters column shards of w1 and row shards of w2 as actor state.
  auto setup = c->call("setup", {tensor(w1, {16, 64}), tensor(w2, {64, 8})});
  ASSERT_TRUE(setup.isOk()) << setup.status().toString();
  auto out = c->call("mlp", {tensor(x, {8, 16})});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(out->size(), 3u);
  Matrix h = matmul(x, w1, 8, 16, 64);
  for (float &v : h)
    v = std::max(v, 0.0f);
  Matrix y = matmul(h, w2, 8, 64, 8);
  expectNear(toFloats((*out)[0]), y, 1e-4f, "forward (all_reduce)");
  expectNear(toFloats((*out)[1]), h, 1e-5f, "hidden (all_gather)");
  expectNear(toFloats((*out)[2]), y, 1e-4f, "forward_partial (partial sum)");
  // Rank 2 holds columns 32..47 of w1.
  auto shard = c->getActorState("@tp::@w1", 2);
  ASSERT_TRUE(shard.isOk()) << shard.status().toString();
  Matrix want(16 * 16);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      want[i * 16 + j] = w1[i * 64 + 32 + j];
  expectNear(toFloats(*shard), want, 0.0f, "w1 shard of rank 2");
  EXPECT_TRUE(c->stop().isOk());
}

TEST(CompiledExamples, DataParallelTrainingLossFallsLikeTheReference) {
  std::string plan = compileExample("data_parallel");
  ASSERT_FALSE(plan.empty()) << "monarch-compile failed";
  auto c = start(4);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(plan).isOk());
  std::mt19937 rng(11);
  const int B = 32, I = 16, H = 32, O = 8, ranks = 4;
  Matrix w1 = random(I * H, rng, 0.3f), w2 = random(H * O, rng, 0.3f);
  Matrix x = random(B * I, rng, 1.0f), t = random(B * O, rng, 1.0f);
  // Rank 0's parameters are broadcast to the others by the plan; others
  // get garbage to prove it.
  ASSERT_TRUE(c->setActorState("@mlp::@w1", tensor(w1, {I, H}), 0).isOk());
  ASSERT_TRUE(c->setActorState("@mlp::@w2", tensor(w2, {H, O}), 0).isOk());
  ASSERT_TRUE(
      c->setActorState("@mlp::@w1", tensor(random(I * H, rng, 5), {I, H}), 3)
          .isOk());
  float lr = 0.05f;
  std::vector<float> losses;
  for (int step = 0; step < 20; ++step) {
    // Reference: forward on the whole batch, loss = mean squared error
    // (the mean over ranks of each rank's mean), then the gradients the
    // ranks compute on their rows, averaged over ranks.
    Matrix h0 = matmul(x, w1, B, I, H), h = h0;
    for (float &v : h)
      v = std::max(v, 0.0f);
    Matrix y = matmul(h, w2, B, H, O), d(B * O);
    double sq = 0;
    for (int i = 0; i < B * O; ++i) {
      d[i] = y[i] - t[i];
      sq += double(d[i]) * d[i];
    }
    float loss = static_cast<float>(sq / (B * O));
    Matrix g2 = matmul(transpose(h, B, H), d, H, B, O);
    Matrix dh = matmul(d, transpose(w2, H, O), B, O, H);
    for (int i = 0; i < B * H; ++i)
      if (h0[i] <= 0)
        dh[i] = 0;
    Matrix g1 = matmul(transpose(x, B, I), dh, I, B, H);
    for (int i = 0; i < I * H; ++i)
      w1[i] -= lr * g1[i] / ranks;
    for (int i = 0; i < H * O; ++i)
      w2[i] -= lr * g2[i] / ranks;

    auto out = c->call("train_step",
                       {tensor(x, {B, I}), tensor(t, {B, O}), scalar(lr)});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    float got = toFloats((*out)[0])[0];
    EXPECT_NEAR(got, loss, 1e-4f * (1 + loss)) << "loss at step " << step;
    losses.push_back(got);
  }
  std::printf("data-parallel MLP on 4 workers: loss %.5f at step 0, %.5f at "
              "step 19\n",
              losses.front(), losses.back());
  EXPECT_LT(losses.back(), 0.8f * losses.front());
  EXPECT_TRUE(c->stop().isOk());
}

} // namespace
