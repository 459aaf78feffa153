// Python bindings of normlab's CPU norm kernels: one forward and one backward pass per variant,
// rows in parallel, as torch's own LayerNorm kernels do. Kernels in row_norms.cpp and
// pointwise.cpp, shared helpers in common.h; built on first use by normlab/norms/native.py, which
// holds the autograd Functions around them; the math they must match is in functional.py.
//
// Row norms (LayerNorm family, AdaNorm, RMSNorm, ScaleNorm) share one kernel pair:
//   y = (x - m) r,  r = 1 / sigma,  out = scale * y * (1 - k y) * w + b
// with m the row mean (or 0) and sigma from ss = sum((x - m)^2) by `kind`:
//   0: sqrt(ss / dn + eps)  1: sqrt(ss / dn) + eps  2: max(sqrt(ss / dn), eps)
// Backward, with gy = g w scale (1 - k y) (AdaNorm's phi is a constant):
//   dx = r (gy - [mu live] mean(gy) - [sigma live] c (x - m) sum(gy (x - m)))
// where c = q r and d sigma / d x_i = q (x_i - m); the forward stores c per row.
//
// Element-wise norms (DyT, Derf): out = w f(alpha x + s) + b, f = tanh or erf. Backward
// recomputes f from x, so only x is saved, as LayerNorm saves x.
//
// float32 uses tanh/erf/exp written as branch-free polynomials the compiler vectorises (checked
// against torch's in tests/test_native.py); float64 uses the C library's. Only this file includes
// torch/extension.h (pybind11): the kernels compile against ATen alone, in parallel.
#include <torch/extension.h>

#include "common.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("row_norm_fwd", &normlab::row_norm_fwd);
  m.def("row_norm_bwd", &normlab::row_norm_bwd);
  m.def("detached_grad", &normlab::detached_grad);
  m.def("pointwise_fwd", &normlab::pointwise_fwd);
  m.def("pointwise_bwd", &normlab::pointwise_bwd);
  m.def("float_math", &normlab::float_math);
}
