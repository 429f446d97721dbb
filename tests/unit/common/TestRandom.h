//===- TestRandom.h - Seeded randomness for property tests ------*- C++ -*-===//

#ifndef MONARCH_TESTS_UNIT_TESTRANDOM_H
#define MONARCH_TESTS_UNIT_TESTRANDOM_H

#include <cstdint>
#include <random>

namespace monarch::test {

using Rng = std::mt19937_64;

/// A uniformly drawn integer in [lo, hi].
inline int64_t uniform(Rng &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// True with probability `p`.
inline bool chance(Rng &rng, double p) {
  return std::bernoulli_distribution(p)(rng);
}

} // namespace monarch::test

#endif // MONARCH_TESTS_UNIT_TESTRANDOM_H
