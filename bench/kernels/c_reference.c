/*===- c_reference.c - The C loops the generated kernels are measured by ---===*
 *
 * Compiled separately with clang-22 -O3 -march=native (see CMakeLists.txt),
 * so the comparison is against the best the C compiler does with the same
 * loop on this machine.
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>

void monarch_bench_c_relu_chain(const float *restrict a,
                                const float *restrict b,
                                const float *restrict c, float *restrict out,
                                long n) {
  for (long i = 0; i < n; ++i)
    out[i] = fmaxf(a[i] * b[i] + c[i], 0.0f) * 0.5f;
}
