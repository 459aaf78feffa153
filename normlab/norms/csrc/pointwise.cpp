// Element-wise norms (DyT, Derf): out = w f(alpha x + s) + b with f = tanh or erf.
#include "common.h"

namespace normlab {
namespace {

template <typename T, int64_t FN>
void pw_fwd_rows(const T* __restrict X, const T* __restrict W, const T* __restrict B,
                 T* __restrict Y, int64_t n, int64_t lo, int64_t hi, T a, T sh) {
  for (int64_t i = lo; i < hi; ++i) {
    const T* __restrict xr = X + i * n;
    T* __restrict yr = Y + i * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      const T u = a * xr[j] + sh;
      yr[j] = (FN == 0 ? Math<T>::tanh(u) : Math<T>::erf(u)) * W[j] + B[j];
    }
  }
}

// acc: [0, n) dw, [n, 2n) db, 2n dalpha, 2n + 1 dshift, then a scratch row for dx if DX is null
template <typename T, int64_t FN>
void pw_bwd_rows(const T* __restrict G, const T* __restrict X, const T* __restrict W,
                 T* __restrict DX, T* __restrict acc, int64_t n, int64_t lo, int64_t hi, T a,
                 T sh) {
  const T two_over_sqrt_pi = static_cast<T>(1.1283791670955126);
  T* __restrict dw = acc;
  T* __restrict db = acc + n;
  T sa = 0, ssh = 0;
  for (int64_t i = lo; i < hi; ++i) {
    const T* __restrict xr = X + i * n;
    const T* __restrict gr = G + i * n;
    T* __restrict dr = DX ? DX + i * n : acc + 2 * n + 2;
#pragma omp simd reduction(+ : sa, ssh)
    for (int64_t j = 0; j < n; ++j) {
      const T u = a * xr[j] + sh;
      T f, df;
      if (FN == 0) {
        f = Math<T>::tanh(u);
        df = 1 - f * f;
      } else {
        f = Math<T>::erf(u);
        df = two_over_sqrt_pi * Math<T>::exp(-u * u);
      }
      const T h = gr[j] * W[j] * df;
      dw[j] += gr[j] * f;
      db[j] += gr[j];
      sa += h * xr[j];
      ssh += h;
      dr[j] = h * a;
    }
  }
  acc[2 * n] += sa;
  acc[2 * n + 1] += ssh;
}

}  // namespace

// ------------------------------------------------------------------------ element-wise norms

Tensor pointwise_fwd(const Tensor& x_, int64_t fn, double alpha, double shift,
                     const c10::optional<Tensor>& w_, const c10::optional<Tensor>& b_) {
  check(x_);
  const Tensor x = as_rows(x_);
  const int64_t N = x.size(0), n = x.size(1);
  Tensor y = at::empty_like(x);
  const Tensor w = param_or(w_, n, 1.0, x), b = param_or(b_, n, 0.0, x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pointwise_fwd", [&] {
    using T = scalar_t;
    const T *X = x.data_ptr<T>(), *W = w.data_ptr<T>(), *B = b.data_ptr<T>();
    T* Y = y.data_ptr<T>();
    const T a = static_cast<T>(alpha), sh = static_cast<T>(shift);
    at::parallel_for(0, N, grain(n), [&](int64_t lo, int64_t hi) {
      if (fn == 0) pw_fwd_rows<T, 0>(X, W, B, Y, n, lo, hi, a, sh);
      else pw_fwd_rows<T, 1>(X, W, B, Y, n, lo, hi, a, sh);
    });
  });
  return y.view(x_.sizes());
}

// Returns dx (if asked), dw, db (column sums), dalpha = sum(gy f'(u) x), dshift = sum(gy f'(u));
// one pass computes all of them.
std::vector<Tensor> pointwise_bwd(const Tensor& g_, const Tensor& x_, int64_t fn, double alpha,
                                  double shift, const c10::optional<Tensor>& w_, bool need_dx) {
  check(x_);
  const Tensor x = as_rows(x_), g = as_rows(g_).to(x.scalar_type());
  const int64_t N = x.size(0), n = x.size(1);
  const Tensor w = param_or(w_, n, 1.0, x);
  Tensor dx = need_dx ? at::empty_like(x) : Tensor();
  ThreadSums sums(3 * n + 2, x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "pointwise_bwd", [&] {
    using T = scalar_t;
    const T *X = x.data_ptr<T>(), *G = g.data_ptr<T>(), *W = w.data_ptr<T>();
    T* DX = need_dx ? dx.data_ptr<T>() : nullptr;
    const T a = static_cast<T>(alpha), sh = static_cast<T>(shift);
    at::parallel_for(0, N, grain(n), [&](int64_t lo, int64_t hi) {
      if (fn == 0) pw_bwd_rows<T, 0>(G, X, W, DX, sums.row<T>(), n, lo, hi, a, sh);
      else pw_bwd_rows<T, 1>(G, X, W, DX, sums.row<T>(), n, lo, hi, a, sh);
    });
  });
  const Tensor tot = sums.total();
  return {need_dx ? dx.view(x_.sizes()) : dx, tot.narrow(0, 0, n), tot.narrow(0, n, n),
          tot.narrow(0, 2 * n, 1), tot.narrow(0, 2 * n + 1, 1)};
}

// For tests: the float32 approximations element by element.
Tensor float_math(const Tensor& x_, int64_t fn) {
  TORCH_CHECK(x_.scalar_type() == at::kFloat, "float_math takes float32");
  Tensor x = x_.contiguous(), y = at::empty_like(x);
  const float* X = x.data_ptr<float>();
  float* Y = y.data_ptr<float>();
  const int64_t n = x.numel();
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) Y[j] = fn == 0 ? tanh_f(X[j]) : fn == 1 ? erf_f(X[j]) : exp_f(X[j]);
  return y;
}

}  // namespace normlab
