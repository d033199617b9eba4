"""CPU kernels below the op table: NumPy work on two threads, fused elementwise kernels compiled
with numba or a C compiler (cached), used by ops, optimizers and the compiler alike."""
