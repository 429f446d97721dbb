/*===- TestKernels.c - Kernels for the executor tests ---------------------===*
 *
 * Built as a shared object whose bytes the tests put in a plan's kernel
 * library, with the compiled-kernel ABI: void symbol(void **buffers), inputs
 * then outputs.
 *
 *===----------------------------------------------------------------------===*/
void monarch_test_add4(void **buffers) {
  const float *a = (const float *)buffers[0];
  const float *b = (const float *)buffers[1];
  float *out = (float *)buffers[2];
  for (int i = 0; i < 4; ++i)
    out[i] = a[i] + b[i];
}
