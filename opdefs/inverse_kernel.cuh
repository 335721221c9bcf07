// CUDA kernel of the Inverse op definition (opdefs/inverse.yaml): one thread per matrix, the
// same Gauss-Jordan elimination with partial pivoting as the CPU kernel (inverse_kernel.h), in
// float for float16 and float32 and in double for float64; for N <= 8 the same operations in
// the same order, so the same results and the same singular matrices. A matrix of N <= 8 lives
// in the thread's registers; a larger one in device scratch memory. A zero pivot is flagged on the
// device and fails the call with the CPU kernel's message (the first singular matrix's column).
// The generator never writes this file.
#include <string>

namespace opgen::inverse {

namespace {

// Products and differences rounded as the CPU rounds them: nvcc would fuse them into FMAs,
// which round once, so near-singular matrices could pass on one device and fail on the other.
__device__ __forceinline__ float mul_rn(float x, float y) { return __fmul_rn(x, y); }
__device__ __forceinline__ double mul_rn(double x, double y) { return __dmul_rn(x, y); }
__device__ __forceinline__ float sub_rn(float x, float y) { return __fsub_rn(x, y); }
__device__ __forceinline__ double sub_rn(double x, double y) { return __dsub_rn(x, y); }

// Gauss-Jordan on one matrix `a` (row-major, n x n, in place), step for step and rounding for
// rounding the CPU kernel's small-matrix path (invert_lanes): afterwards `a` holds the inverse
// with its columns permuted by the row swaps in `pivot`, which the caller undoes. Returns the
// column of the first zero pivot, or -1.
template <typename Acc, typename Matrix, typename Pivots>
__device__ int64_t eliminate(Matrix& a, Pivots& pivot, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    int64_t best = k;
    Acc best_abs = fabs(a(k, k));
    for (int64_t r = k + 1; r < n; ++r) {
      const Acc candidate = fabs(a(r, k));
      if (candidate > best_abs) {
        best = r;
        best_abs = candidate;
      }
    }
    if (best_abs == Acc(0)) return k;
    pivot[k] = best;
    if (best != k) {
      for (int64_t c = 0; c < n; ++c) {
        const Acc t = a(k, c);
        a(k, c) = a(best, c);
        a(best, c) = t;
      }
    }
    const Acc inv_pivot = Acc(1) / a(k, k);
    for (int64_t r = 0; r < n; ++r) {
      if (r == k) continue;
      const Acc factor = mul_rn(a(r, k), inv_pivot);
      for (int64_t c = 0; c < n; ++c) a(r, c) = sub_rn(a(r, c), mul_rn(factor, a(k, c)));
      a(r, k) = -factor;
    }
    for (int64_t c = 0; c < n; ++c) a(k, c) = mul_rn(a(k, c), inv_pivot);
    a(k, k) = inv_pivot;
  }
  return -1;
}

// Writes the inverse to `out`, undoing the row swaps as column swaps in reverse order.
template <typename T, typename Acc, typename Matrix, typename Pivots>
__device__ void store(Matrix& a, const Pivots& pivot, int64_t n, T* out) {
  for (int64_t k = n - 1; k >= 0; --k) {
    const int64_t p = pivot[k];
    if (p == k) continue;
    for (int64_t r = 0; r < n; ++r) {
      const Acc t = a(r, k);
      a(r, k) = a(r, p);
      a(r, p) = t;
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < n; ++c) out[r * n + c] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(a(r, c)));
  }
}

template <typename Acc, int N>
struct Registers {
  Acc values[N][N];
  __device__ Acc& operator()(int64_t r, int64_t c) { return values[r][c]; }
};

template <typename Acc>
struct Scratch {
  Acc* values;
  int64_t n;
  __device__ Acc& operator()(int64_t r, int64_t c) { return values[r * n + c]; }
};

// A singular matrix's output: NaN, as torch.linalg.inv_ex gives (the call fails unless a CUDA
// graph is being captured, where nothing can be read back).
template <typename T>
__device__ void fill_nan(T* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(NAN));
}

template <typename T, typename Acc, int N>
__global__ void invert_small(const T* __restrict__ in, T* __restrict__ out, int64_t count,
                             long long* singular) {
  for (int64_t m = opgen::cuda::first_item(); m < count; m += opgen::cuda::item_stride()) {
    Registers<Acc, N> a;
    int64_t pivot[N];
    for (int r = 0; r < N; ++r) {
      for (int c = 0; c < N; ++c) a.values[r][c] = static_cast<Acc>(opgen::cuda::widen(in[(m * N + r) * N + c]));
    }
    const int64_t zero = eliminate<Acc>(a, pivot, N);
    if (zero >= 0) {
      opgen::cuda::flag(singular, m * N + zero);
      fill_nan(out + m * N * N, N * N);
      continue;
    }
    store<T, Acc>(a, pivot, N, out + m * N * N);
  }
}

template <typename T, typename Acc>
__global__ void invert_large(const T* __restrict__ in, T* __restrict__ out, int64_t count, int64_t n,
                             Acc* scratch, int64_t* pivots, long long* singular) {
  for (int64_t m = opgen::cuda::first_item(); m < count; m += opgen::cuda::item_stride()) {
    Scratch<Acc> a{scratch + m * n * n, n};
    int64_t* pivot = pivots + m * n;
    for (int64_t i = 0; i < n * n; ++i) a.values[i] = static_cast<Acc>(opgen::cuda::widen(in[m * n * n + i]));
    const int64_t zero = eliminate<Acc>(a, pivot, n);
    if (zero >= 0) {
      opgen::cuda::flag(singular, m * n + zero);
      fill_nan(out + m * n * n, n * n);
      continue;
    }
    store<T, Acc>(a, pivot, n, out + m * n * n);
  }
}

constexpr unsigned kThreads = 128;

template <typename T, typename Acc, int N>
void launch_small(const opgen::cuda::Context& ctx, const T* in, T* out, int64_t count, long long* singular) {
  invert_small<T, Acc, N><<<opgen::cuda::Context::blocks_for(count, kThreads), kThreads, 0, ctx.stream()>>>(
      in, out, count, singular);
  ctx.check_launch("invert_small");
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<T>& X, const opgen::Output<T>& Y,
                  const Attributes& attrs) {
  (void)attrs;
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = X.dim(-1);
  const int64_t count = X.size_before(-2);
  if (count == 0 || n == 0) return;
  const opgen::cuda::DeviceFlag singular(ctx);
  switch (n) {
    case 1: launch_small<T, Acc, 1>(ctx, X.data, Y.data, count, singular.device()); break;
    case 2: launch_small<T, Acc, 2>(ctx, X.data, Y.data, count, singular.device()); break;
    case 3: launch_small<T, Acc, 3>(ctx, X.data, Y.data, count, singular.device()); break;
    case 4: launch_small<T, Acc, 4>(ctx, X.data, Y.data, count, singular.device()); break;
    case 5: launch_small<T, Acc, 5>(ctx, X.data, Y.data, count, singular.device()); break;
    case 6: launch_small<T, Acc, 6>(ctx, X.data, Y.data, count, singular.device()); break;
    case 7: launch_small<T, Acc, 7>(ctx, X.data, Y.data, count, singular.device()); break;
    case 8: launch_small<T, Acc, 8>(ctx, X.data, Y.data, count, singular.device()); break;
    default: {
      const opgen::cuda::DeviceScratch<Acc> scratch(ctx, static_cast<size_t>(count * n * n), "the matrices");
      const opgen::cuda::DeviceScratch<int64_t> pivots(ctx, static_cast<size_t>(count * n), "the pivots");
      invert_large<T, Acc><<<opgen::cuda::Context::blocks_for(count, kThreads), kThreads, 0, ctx.stream()>>>(
          X.data, Y.data, count, n, scratch.data(), pivots.data(), singular.device());
      ctx.check_launch("invert_large");
    }
  }
  const long long first = singular.first();
  if (first >= 0) {
    opgen::fail("Inverse: matrix is singular (zero pivot in column " + std::to_string(first % n) + ")");
  }
}

}  // namespace opgen::inverse
