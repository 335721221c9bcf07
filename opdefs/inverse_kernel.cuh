// CUDA kernel of the Inverse op definition (opdefs/inverse.yaml): one thread per matrix of N <= 8
// (in its registers) and one block per larger one (in shared memory where it fits), the same
// Gauss-Jordan elimination with partial pivoting as the CPU kernel (inverse_kernel.h), in float
// for float16 and float32 and in double for float64; for N <= 8 the same operations in the same
// order, rounded alike (no fused multiply-adds: the kernels build with --fmad=false), so the
// same results and the same singular matrices. A zero pivot is flagged on the
// device and fails the call with the CPU kernel's message (the first singular matrix's column).
// The generator never writes this file.
#include <algorithm>
#include <optional>
#include <string>

namespace opgen::inverse {

namespace {

// Gauss-Jordan on one matrix `a` (row-major, n x n, in place), step for step and rounding for
// rounding the CPU kernel's small-matrix path (invert_lanes): afterwards `a` holds the inverse
// with its columns permuted by the row swaps in `pivot`, which the caller undoes. Returns the
// column of the first zero pivot, or -1.
template <typename Acc, typename Matrix, typename Pivots>
__host__ __device__ int64_t eliminate(Matrix& a, Pivots& pivot, int64_t n) {
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
      const Acc factor = a(r, k) * inv_pivot;
      for (int64_t c = 0; c < n; ++c) a(r, c) = a(r, c) - factor * a(k, c);
      a(r, k) = -factor;
    }
    for (int64_t c = 0; c < n; ++c) a(k, c) = a(k, c) * inv_pivot;
    a(k, k) = inv_pivot;
  }
  return -1;
}

// Writes the inverse to `out`, undoing the row swaps as column swaps in reverse order.
template <typename T, typename Acc, typename Matrix, typename Pivots>
__host__ __device__ void store(Matrix& a, const Pivots& pivot, int64_t n, T* out) {
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
  __host__ __device__ Acc& operator()(int64_t r, int64_t c) { return values[r][c]; }
};

// A singular matrix's output: NaN, as torch.linalg.inv_ex gives (the call fails unless a CUDA
// graph is being captured, where nothing can be read back).
template <typename T>
__device__ void fill_nan(T* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(NAN));
}

// One N x N matrix in registers: its inverse to `out`, or the column of its first zero pivot
// (`out` untouched). Host code too: CI checks it against the CPU kernel, bit for bit.
template <typename T, typename Acc, int N>
__host__ __device__ int64_t invert_in_registers(const T* in, T* out) {
  Registers<Acc, N> a;
  int64_t pivot[N];
  for (int r = 0; r < N; ++r) {
    for (int c = 0; c < N; ++c) a.values[r][c] = static_cast<Acc>(opgen::cuda::widen(in[r * N + c]));
  }
  const int64_t zero = eliminate<Acc>(a, pivot, N);
  if (zero < 0) store<T, Acc>(a, pivot, N, out);
  return zero;
}

template <typename T, typename Acc, int N>
__global__ void invert_small(const T* __restrict__ in, T* __restrict__ out, int64_t count,
                             long long* singular) {
  for (int64_t m = opgen::cuda::first_item(); m < count; m += opgen::cuda::item_stride()) {
    const int64_t zero = invert_in_registers<T, Acc, N>(in + m * N * N, out + m * N * N);
    if (zero >= 0) {
      opgen::cuda::flag(singular, m * N + zero);
      fill_nan(out + m * N * N, N * N);
    }
  }
}

// One block per matrix (N > 8): the matrix, each step's row factors and the pivots in the
// block's workspace (shared memory where they fit, else device scratch), each elimination step
// spread over the block's threads with invert_small's arithmetic; the pivot search emulates the
// CPU's scan (the first largest magnitude; a NaN candidate never wins, a NaN diagonal stays).
template <typename Acc>
struct Workspace {
  Acc* a;  // n x n, row-major
  Acc* factor;  // n
  int* pivot;  // n
  int* source;  // n: column c of the inverse is column source[c] of a

  static constexpr size_t bytes(int64_t n) {
    return static_cast<size_t>(n * n + n) * sizeof(Acc) + 2 * static_cast<size_t>(n) * sizeof(int);
  }
  __device__ static Workspace at(unsigned char* base, int64_t n) {
    Acc* values = reinterpret_cast<Acc*>(base);
    int* indices = reinterpret_cast<int*>(values + n * n + n);
    return {values, values + n * n, indices, indices + n};
  }
};

// The row of the pivot of column k, and its magnitude, to every thread of the block.
template <typename Acc>
__device__ void find_pivot(const Acc* a, int64_t n, int64_t k, int* best_row, Acc* best_abs) {
  if (threadIdx.x < 32) {
    Acc abs_value = Acc(-1);  // below every magnitude: no candidate yet
    int row = static_cast<int>(n);
    for (int64_t r = k + threadIdx.x; r < n; r += 32) {
      const Acc candidate = fabs(a[r * n + k]);
      if (candidate > abs_value) {  // false for NaN; rows ascend, so the first largest stays
        abs_value = candidate;
        row = static_cast<int>(r);
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      const Acc other_abs = __shfl_down_sync(0xffffffffu, abs_value, offset);
      const int other_row = __shfl_down_sync(0xffffffffu, row, offset);
      if (other_abs > abs_value || (other_abs == abs_value && other_row < row)) {
        abs_value = other_abs;
        row = other_row;
      }
    }
    if (threadIdx.x == 0) {
      const Acc diagonal = fabs(a[k * n + k]);
      *best_row = isnan(diagonal) ? static_cast<int>(k) : row;
      *best_abs = isnan(diagonal) ? diagonal : abs_value;
    }
  }
  __syncthreads();
}

template <typename T, typename Acc>
__global__ void invert_blocks(const T* __restrict__ in, T* __restrict__ out, int64_t count, int64_t n,
                              unsigned char* global_workspace, long long* singular) {
  extern __shared__ __align__(16) unsigned char shared_workspace[];
  __shared__ int best_row;
  __shared__ Acc best_abs;
  unsigned char* base = global_workspace == nullptr
                            ? shared_workspace
                            : global_workspace + blockIdx.x * Workspace<Acc>::bytes(n);
  const Workspace<Acc> w = Workspace<Acc>::at(base, n);
  // Rows by warps and columns by lanes: consecutive lanes touch consecutive elements.
  const int64_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int64_t m = blockIdx.x; m < count; m += gridDim.x) {
    const T* matrix = in + m * n * n;
    T* result = out + m * n * n;
    for (int64_t r = warp; r < n; r += warps) {
      for (int64_t c = lane; c < n; c += 32) w.a[r * n + c] = static_cast<Acc>(opgen::cuda::widen(matrix[r * n + c]));
    }
    __syncthreads();
    bool failed = false;
    for (int64_t k = 0; k < n; ++k) {
      find_pivot(w.a, n, k, &best_row, &best_abs);
      if (best_abs == Acc(0)) {
        if (threadIdx.x == 0) opgen::cuda::flag(singular, m * n + k);
        failed = true;
        break;
      }
      const int64_t best = best_row;
      if (best != k) {
        for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
          const Acc t = w.a[k * n + c];
          w.a[k * n + c] = w.a[best * n + c];
          w.a[best * n + c] = t;
        }
      }
      if (threadIdx.x == 0) w.pivot[k] = static_cast<int>(best);
      __syncthreads();
      const Acc inv_pivot = Acc(1) / w.a[k * n + k];
      for (int64_t r = threadIdx.x; r < n; r += blockDim.x) w.factor[r] = w.a[r * n + k] * inv_pivot;
      __syncthreads();
      for (int64_t r = warp; r < n; r += warps) {
        if (r == k) continue;
        const Acc factor = w.factor[r];
        for (int64_t c = lane; c < n; c += 32) {
          w.a[r * n + c] = c == k ? -factor : w.a[r * n + c] - factor * w.a[k * n + c];
        }
      }
      __syncthreads();
      for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
        w.a[k * n + c] = c == k ? inv_pivot : w.a[k * n + c] * inv_pivot;
      }
      __syncthreads();
    }
    if (failed) {
      for (int64_t i = threadIdx.x; i < n * n; i += blockDim.x) {
        result[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(NAN));
      }
    } else {
      if (threadIdx.x == 0) {  // the row swaps undone as column swaps, in reverse order
        for (int64_t c = 0; c < n; ++c) w.source[c] = static_cast<int>(c);
        for (int64_t k = n - 1; k >= 0; --k) {
          const int t = w.source[k];
          w.source[k] = w.source[w.pivot[k]];
          w.source[w.pivot[k]] = t;
        }
      }
      __syncthreads();
      for (int64_t r = warp; r < n; r += warps) {
        for (int64_t c = lane; c < n; c += 32) {
          result[r * n + c] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(w.a[r * n + w.source[c]]));
        }
      }
    }
    __syncthreads();  // the workspace is the next matrix's
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
      // Shared memory where the workspace fits in what every GPU gives a block without asking;
      // else device scratch, for as many blocks as 256 MB of workspaces allow.
      constexpr unsigned kBlockThreads = 256;
      const size_t workspace = Workspace<Acc>::bytes(n);
      const bool in_shared = workspace <= 48 * 1024 - 64;
      const int64_t most_blocks = in_shared ? 65535 : std::max<int64_t>(1, (int64_t{256} << 20) / static_cast<int64_t>(workspace));
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(count, most_blocks));
      std::optional<opgen::cuda::DeviceScratch<unsigned char>> scratch;
      if (!in_shared) scratch.emplace(ctx, workspace * blocks, "the matrices' workspaces");
      invert_blocks<T, Acc><<<blocks, kBlockThreads, in_shared ? workspace : 0, ctx.stream()>>>(
          X.data, Y.data, count, n, in_shared ? nullptr : scratch->data(), singular.device());
      ctx.check_launch("invert_blocks");
    }
  }
  const long long first = singular.first();
  if (first >= 0) {
    opgen::fail("Inverse: matrix is singular (zero pivot in column " + std::to_string(first % n) + ")");
  }
}

}  // namespace opgen::inverse
