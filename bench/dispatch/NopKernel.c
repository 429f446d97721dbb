/*===- NopKernel.c - A kernel that does nothing, for dispatch_bench -------===*
 *
 * Built as a shared object whose bytes dispatch_bench puts in a plan's
 * kernel library (the compiled-kernel ABI: void symbol(void **buffers)), so
 * that a step of K launches measures what the interpreter spends per
 * launch.
 *
 *===----------------------------------------------------------------------===*/
void monarch_bench_nop(void **buffers) { (void)buffers; }
