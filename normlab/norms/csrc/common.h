// Shared by the kernels of normlab/norms/csrc: float math the compiler can vectorise, per-thread
// sums, and argument helpers. See module.cpp for what the kernels compute and why.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace normlab {

using at::Tensor;

// ------------------------------------------------------------------ vectorisable float math

inline float exp_f(float x) {
  // Cephes expf: 2^n e^r with |r| <= ln2 / 2. NaN passes the clamps (comparisons are false).
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// tanh and erf as x P(x^2) / Q(x^2) on a clamped x (the rational forms of Eigen's fast float
// tanh and erf): one division and no exp, ~4e-7 relative error against float64 (2-3x torch's
// own float32 functions), checked in tests/test_native.py.
inline float rational(float x, float lim, const float* a, int na, const float* b, int nb) {
  x = x < -lim ? -lim : x;  // NaN passes (comparisons are false)
  x = x > lim ? lim : x;
  const float z = x * x;
  float p = a[na - 1];
  for (int i = na - 2; i >= 0; --i) p = p * z + a[i];
  float q = b[nb - 1];
  for (int i = nb - 2; i >= 0; --i) q = q * z + b[i];
  return x * p / q;
}

inline constexpr float kTanhA[] = {4.89352455891786e-03f, 6.37261928875436e-04f, 1.48572235717979e-05f,
                            5.12229709037114e-08f, -8.60467152213735e-11f, 2.00018790482477e-13f,
                            -2.76076847742355e-16f};
inline constexpr float kTanhB[] = {4.89352518554385e-03f, 2.26843463243900e-03f, 1.18534705686654e-04f,
                            1.19825839466702e-06f};
inline constexpr float kErfA[] = {-1.60960333262415e-02f, -2.95459980854025e-03f, -7.34990630326855e-04f,
                           -5.69250639462346e-05f, -2.10102402082508e-06f, 2.77068142495902e-08f,
                           -2.72614225801306e-10f};
inline constexpr float kErfB[] = {-1.42647390514189e-02f, -7.37332916720468e-03f, -1.68282697438203e-03f,
                           -2.13374055278905e-04f, -1.45660718464996e-05f};

inline float tanh_f(float x) { return rational(x, 7.90531110763549805f, kTanhA, 7, kTanhB, 4); }
inline float erf_f(float x) { return rational(x, 4.0f, kErfA, 7, kErfB, 5); }

template <typename T> struct Math;
template <> struct Math<float> {
  static float tanh(float x) { return tanh_f(x); }
  static float erf(float x) { return erf_f(x); }
  static float exp(float x) { return exp_f(x); }
};
template <> struct Math<double> {
  static double tanh(double x) { return std::tanh(x); }
  static double erf(double x) { return std::erf(x); }
  static double exp(double x) { return std::exp(x); }
};

// Rows per task: enough work to amortise a thread hand-off (torch's LayerNorm uses 1 row).
inline int64_t grain(int64_t n) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)); }

// Per-thread accumulators for sums over rows (column sums and scalars): no atomics, and the
// same summation order for a given thread count.
struct ThreadSums {
  Tensor buf;
  int64_t width;
  ThreadSums(int64_t width, const Tensor& like)
      // width 0: nothing to sum (e.g. no affine and no learned scale), nothing allocated
      : buf(width > 0 ? at::zeros({at::get_num_threads(), width}, like.options()) : Tensor()),
        width(width) {}
  template <typename T> T* row() { return buf.data_ptr<T>() + at::get_thread_num() * buf.size(1); }
  Tensor total() const { return buf.sum(0).narrow(0, 0, width); }
};

inline Tensor as_rows(const Tensor& t) { return t.contiguous().view({-1, t.size(-1)}); }

// An optional per-feature parameter, or a constant vector: one loop body with no branch in it
// is what the compiler vectorises.
inline Tensor param_or(const c10::optional<Tensor>& p, int64_t n, double fill, const Tensor& like) {
  return p.has_value() ? p->to(like.scalar_type()).contiguous() : at::full({n}, fill, like.options());
}

inline void check(const Tensor& x) {
  TORCH_CHECK(x.device().is_cpu(), "normlab native kernels run on CPU tensors");
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble,
              "normlab native kernels take float32 or float64, got ", x.scalar_type());
}

// The entry points, bound to Python in module.cpp.
std::vector<Tensor> row_norm_fwd(const Tensor& x, const c10::optional<Tensor>& w,
                                 const c10::optional<Tensor>& b, bool center, int64_t kind,
                                 double dn, double eps, double scale, double k);
std::vector<Tensor> row_norm_bwd(const Tensor& g, const Tensor& x, const Tensor& mean,
                                 const Tensor& rstd, const Tensor& coef,
                                 const c10::optional<Tensor>& w, bool detach_mean,
                                 bool detach_var, double scale, double k, bool need_dx,
                                 bool need_dw, bool need_db, bool need_dscale);
Tensor detached_grad(const Tensor& g, const Tensor& rstd, bool subtract_mean);
Tensor pointwise_fwd(const Tensor& x, int64_t fn, double alpha, double shift,
                     const c10::optional<Tensor>& w, const c10::optional<Tensor>& b);
std::vector<Tensor> pointwise_bwd(const Tensor& g, const Tensor& x, int64_t fn, double alpha,
                                  double shift, const c10::optional<Tensor>& w, bool need_dx);
Tensor float_math(const Tensor& x, int64_t fn);

}  // namespace normlab
