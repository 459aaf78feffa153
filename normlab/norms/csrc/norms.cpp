// CPU kernels of normlab's norm variants: one forward and one backward pass per variant, rows in
// parallel, as torch's own LayerNorm kernels do. Built on first use by normlab/norms/native.py;
// the autograd Functions around them are in that file, the math they must match in functional.py.
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
// against torch's in tests/test_native.py); float64 uses the C library's.
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

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

constexpr float kTanhA[] = {4.89352455891786e-03f, 6.37261928875436e-04f, 1.48572235717979e-05f,
                            5.12229709037114e-08f, -8.60467152213735e-11f, 2.00018790482477e-13f,
                            -2.76076847742355e-16f};
constexpr float kTanhB[] = {4.89352518554385e-03f, 2.26843463243900e-03f, 1.18534705686654e-04f,
                            1.19825839466702e-06f};
constexpr float kErfA[] = {-1.60960333262415e-02f, -2.95459980854025e-03f, -7.34990630326855e-04f,
                           -5.69250639462346e-05f, -2.10102402082508e-06f, 2.77068142495902e-08f,
                           -2.72614225801306e-10f};
constexpr float kErfB[] = {-1.42647390514189e-02f, -7.37332916720468e-03f, -1.68282697438203e-03f,
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
      : buf(at::zeros({at::get_num_threads(), std::max<int64_t>(width, 1)}, like.options())),
        width(width) {}
  template <typename T> T* row() { return buf.data_ptr<T>() + at::get_thread_num() * buf.size(1); }
  Tensor total() const { return buf.sum(0).narrow(0, 0, width); }
};

Tensor as_rows(const Tensor& t) { return t.contiguous().view({-1, t.size(-1)}); }

// An optional per-feature parameter, or a constant vector: one loop body with no branch in it
// is what the compiler vectorises.
Tensor param_or(const c10::optional<Tensor>& p, int64_t n, double fill, const Tensor& like) {
  return p.has_value() ? p->to(like.scalar_type()).contiguous() : at::full({n}, fill, like.options());
}

void check(const Tensor& x) {
  TORCH_CHECK(x.device().is_cpu(), "normlab native kernels run on CPU tensors");
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble,
              "normlab native kernels take float32 or float64, got ", x.scalar_type());
}

// ----------------------------------------------------------------------------- row kernels
// Plain loops over raw pointers (no torch calls inside) so that the compiler vectorises them.

struct RowArgs {
  bool center;
  int64_t kind;
  double dn, eps, scale, k;
};

template <typename T>
void row_fwd_rows(const T* __restrict X, const T* __restrict W, const T* __restrict B,
                  T* __restrict Y, T* __restrict M, T* __restrict R, T* __restrict C, int64_t n,
                  int64_t lo, int64_t hi, RowArgs a) {
  const T s = static_cast<T>(a.scale), kk = static_cast<T>(a.k), e = static_cast<T>(a.eps);
  const T dn = static_cast<T>(a.dn);
  for (int64_t i = lo; i < hi; ++i) {
    const T* __restrict xr = X + i * n;
    T* __restrict yr = Y + i * n;
    T m = 0;
    if (a.center) {
#pragma omp simd reduction(+ : m)
      for (int64_t j = 0; j < n; ++j) m += xr[j];
      m /= n;
    }
    T ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int64_t j = 0; j < n; ++j) ss += (xr[j] - m) * (xr[j] - m);
    const T sd = std::sqrt(ss / dn);
    T sigma, c;
    if (a.kind == 0) {
      sigma = std::sqrt(ss / dn + e);
      c = 1 / (sigma * sigma * dn);
    } else if (a.kind == 1) {
      sigma = sd + e;  // torch's std backward is 0 on a constant row
      c = sd > 0 ? 1 / (sigma * sd * dn) : T(0);
    } else {
      sigma = sd > e ? sd : e;  // a clamped norm is a constant
      c = sd > e ? 1 / (sd * sd * dn) : T(0);
    }
    const T r = 1 / sigma;
    M[i] = m, R[i] = r, C[i] = c;
    if (kk != 0) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) {
        const T v = (xr[j] - m) * r;
        yr[j] = s * v * (1 - kk * v) * W[j] + B[j];
      }
    } else {
      const T sr = s * r;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * sr * W[j] + B[j];
    }
  }
}

// acc: [0, n) sum(g out/w), [n, 2n) sum(g), [2n] sum(g y); DX null when dx isn't wanted
template <typename T>
void row_bwd_rows(const T* __restrict G, const T* __restrict X, const T* __restrict W,
                  const T* __restrict M, const T* __restrict R, const T* __restrict C,
                  T* __restrict DX, T* __restrict acc, int64_t n, int64_t lo, int64_t hi,
                  bool detach_mean, bool detach_var, T s, T kk) {
  const T inv_n = T(1) / n;
  for (int64_t i = lo; i < hi; ++i) {
    const T* __restrict xr = X + i * n;
    const T* __restrict gr = G + i * n;
    const T m = M[i], r = R[i];
    if (DX) {
      T* __restrict dr = DX + i * n;
      T s1 = 0, s2 = 0;
      if (kk != 0) {
#pragma omp simd reduction(+ : s1, s2)
        for (int64_t j = 0; j < n; ++j) {
          const T d = xr[j] - m;
          const T gy = gr[j] * W[j] * s * (1 - kk * d * r);
          s1 += gy;
          s2 += gy * d;
        }
      } else {
#pragma omp simd reduction(+ : s1, s2)
        for (int64_t j = 0; j < n; ++j) {
          const T gy = gr[j] * W[j];
          s1 += gy;
          s2 += gy * (xr[j] - m);
        }
        s1 *= s, s2 *= s;
      }
      const T am = detach_mean ? T(0) : s1 * inv_n;
      const T bv = detach_var ? T(0) : C[i] * s2;
      if (kk != 0) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          const T d = xr[j] - m;
          dr[j] = r * (gr[j] * W[j] * s * (1 - kk * d * r) - am - bv * d);
        }
      } else {
        const T rs = r * s, rb = r * bv, off = r * (am - bv * m);
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) dr[j] = rs * gr[j] * W[j] - rb * xr[j] - off;
      }
    }
    if (acc) {
      T* __restrict dw = acc;
      T* __restrict db = acc + n;
      T sy = 0;
#pragma omp simd reduction(+ : sy)
      for (int64_t j = 0; j < n; ++j) {
        const T v = (xr[j] - m) * r;
        dw[j] += gr[j] * s * v * (1 - kk * v);
        db[j] += gr[j];
        sy += gr[j] * v;
      }
      acc[2 * n] += sy;
    }
  }
}

// sigma detached and no gain: dx = r (g - mean(g)), or r g with mu detached too
template <typename T>
void detached_rows(const T* __restrict G, const T* __restrict R, T* __restrict DX, int64_t n,
                   int64_t lo, int64_t hi, bool subtract_mean) {
  for (int64_t i = lo; i < hi; ++i) {
    const T* __restrict gr = G + i * n;
    T* __restrict dr = DX + i * n;
    T s1 = 0;
    if (subtract_mean) {
#pragma omp simd reduction(+ : s1)
      for (int64_t j = 0; j < n; ++j) s1 += gr[j];
      s1 /= n;
    }
    const T r = R[i];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dr[j] = (gr[j] - s1) * r;
  }
}

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

// ------------------------------------------------------------------------------ row norms

std::vector<Tensor> row_norm_fwd(const Tensor& x_, const c10::optional<Tensor>& w_,
                                 const c10::optional<Tensor>& b_, bool center, int64_t kind,
                                 double dn, double eps, double scale, double k) {
  check(x_);
  const Tensor x = as_rows(x_);
  const int64_t N = x.size(0), n = x.size(1);
  Tensor y = at::empty_like(x);
  Tensor mean = at::empty({N}, x.options()), rstd = at::empty({N}, x.options());
  Tensor coef = at::empty({N}, x.options());
  const Tensor w = param_or(w_, n, 1.0, x), b = param_or(b_, n, 0.0, x);
  const RowArgs args{center, kind, dn, eps, scale, k};
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "row_norm_fwd", [&] {
    const auto *X = x.data_ptr<scalar_t>(), *W = w.data_ptr<scalar_t>(), *B = b.data_ptr<scalar_t>();
    auto *Y = y.data_ptr<scalar_t>(), *M = mean.data_ptr<scalar_t>();
    auto *R = rstd.data_ptr<scalar_t>(), *C = coef.data_ptr<scalar_t>();
    at::parallel_for(0, N, grain(n), [&](int64_t lo, int64_t hi) {
      row_fwd_rows<scalar_t>(X, W, B, Y, M, R, C, n, lo, hi, args);
    });
  });
  return {y.view(x_.sizes()), mean, rstd, coef};
}

// Returns dx (undefined unless need_dx), dw and db (column sums, undefined unless asked) and
// dscale = sum(g y) over everything (undefined unless asked).
std::vector<Tensor> row_norm_bwd(const Tensor& g_, const Tensor& x_, const Tensor& mean,
                                 const Tensor& rstd, const Tensor& coef,
                                 const c10::optional<Tensor>& w_, bool detach_mean,
                                 bool detach_var, double scale, double k, bool need_dx,
                                 bool need_dw, bool need_db, bool need_dscale) {
  check(x_);
  const Tensor x = as_rows(x_), g = as_rows(g_).to(x.scalar_type());
  const int64_t N = x.size(0), n = x.size(1);
  const Tensor w = param_or(w_, n, 1.0, x);
  Tensor dx = need_dx ? at::empty_like(x) : Tensor();
  const bool cols = need_dw || need_db || need_dscale;
  ThreadSums sums(cols ? 2 * n + 1 : 0, x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "row_norm_bwd", [&] {
    using T = scalar_t;
    const T *X = x.data_ptr<T>(), *G = g.data_ptr<T>(), *W = w.data_ptr<T>();
    const T *M = mean.data_ptr<T>(), *R = rstd.data_ptr<T>(), *C = coef.data_ptr<T>();
    T* DX = need_dx ? dx.data_ptr<T>() : nullptr;
    at::parallel_for(0, N, grain(n), [&](int64_t lo, int64_t hi) {
      row_bwd_rows<T>(G, X, W, M, R, C, DX, cols ? sums.row<T>() : nullptr, n, lo, hi,
                      detach_mean, detach_var, static_cast<T>(scale), static_cast<T>(k));
    });
  });
  Tensor dw, db, dscale;
  if (cols) {
    const Tensor tot = sums.total();
    if (need_dw) dw = tot.narrow(0, 0, n);
    if (need_db) db = tot.narrow(0, n, n);
    if (need_dscale) dscale = tot.narrow(0, 2 * n, 1);
  }
  return {need_dx ? dx.view(x_.sizes()) : dx, dw, db, dscale};
}

Tensor detached_grad(const Tensor& g_, const Tensor& rstd, bool subtract_mean) {
  check(g_);
  const Tensor g = as_rows(g_).to(rstd.scalar_type());
  const int64_t N = g.size(0), n = g.size(1);
  Tensor dx = at::empty_like(g);
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "detached_grad", [&] {
    const auto *G = g.data_ptr<scalar_t>(), *R = rstd.data_ptr<scalar_t>();
    auto* DX = dx.data_ptr<scalar_t>();
    at::parallel_for(0, N, grain(n), [&](int64_t lo, int64_t hi) {
      detached_rows<scalar_t>(G, R, DX, n, lo, hi, subtract_mean);
    });
  });
  return dx.view(g_.sizes());
}

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

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("row_norm_fwd", &row_norm_fwd);
  m.def("row_norm_bwd", &row_norm_bwd);
  m.def("detached_grad", &detached_grad);
  m.def("pointwise_fwd", &pointwise_fwd);
  m.def("pointwise_bwd", &pointwise_bwd);
  m.def("float_math", &float_math);
}
