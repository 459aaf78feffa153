// Row norms (LayerNorm family, AdaNorm, RMSNorm, ScaleNorm): one forward and one backward kernel
// for all of them; the math is in module.cpp's header comment.
#include "common.h"

namespace normlab {
namespace {

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

}  // namespace

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

}  // namespace normlab
