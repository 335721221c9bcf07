// Hand-written kernel of the Inverse op definition (opdefs/inverse.yaml).
// The generator never writes this file. It is compiled once per dtype of T into both the
// ONNX Runtime library and the pybind11 module. The signature is declared in
// generated/inverse/inverse_op.h; shapes are already checked against [..., N, N] there.
//
// Both paths are in-place Gauss-Jordan elimination with partial pivoting (row swaps, undone
// as column swaps at the end): n^3 flops like LU plus substitution, but every update is a
// contiguous row operation, so the inner loops vectorise and the output is written row-wise.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace opgen::inverse {

namespace {

[[noreturn]] inline void fail_singular(int64_t column) {
  opgen::fail("Inverse: matrix is singular (zero pivot in column " + std::to_string(column) + ")");
}

// Any n: the same elimination on a scratch copy `a` (n * n values of Acc), blocked by panels
// of kPanel pivot columns so each element of the matrix is loaded and stored once per panel
// rather than once per pivot. For a panel of columns [k0, k0 + w):
//  1. the panel columns are copied into `panel` (n rows of kPanel values, zero-padded) and
//     the w Gauss-Jordan steps, pivot search and row swaps included, run on that copy only;
//     afterwards it holds the panel columns of the result, which are also the coefficients
//     of the combined elimination;
//  2. every other column gets that elimination as one rank-w update,
//     row_r += sum_j panel[r][j] * pivot_row_j (the pivot rows as they were before it; a
//     pivot row itself is replaced by the sum), then the panel is copied back.
constexpr int64_t kPanel = 4;

template <typename Acc>
void update_columns(Acc* __restrict row, const Acc* __restrict coefficient, bool pivot_row,
                    const Acc* __restrict rows, int64_t n, int64_t begin, int64_t end) {
  Acc c[kPanel];
  const Acc* b[kPanel];
  for (int64_t j = 0; j < kPanel; ++j) {
    c[j] = coefficient[j];
    b[j] = rows + j * n;
  }
  const Acc keep = pivot_row ? Acc(0) : Acc(1);
  for (int64_t i = begin; i < end; ++i) {
    Acc sum = row[i] * keep;
    for (int64_t j = 0; j < kPanel; ++j) sum += c[j] * b[j][i];
    row[i] = sum;
  }
}

template <typename T, typename Acc>
void invert_one(const T* __restrict in, T* __restrict out, int64_t n, Acc* __restrict a,
                Acc* __restrict panel, Acc* __restrict rows, int64_t* __restrict pivot) {
  for (int64_t i = 0; i < n * n; ++i) a[i] = static_cast<Acc>(in[i]);
  for (int64_t k0 = 0; k0 < n; k0 += kPanel) {
    const int64_t w = std::min(kPanel, n - k0);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j < kPanel; ++j) {
        panel[r * kPanel + j] = j < w ? a[r * n + k0 + j] : Acc(0);
      }
    }
    for (int64_t j = 0; j < w; ++j) {
      const int64_t k = k0 + j;
      int64_t best = k;
      Acc best_abs = std::abs(panel[k * kPanel + j]);
      for (int64_t r = k + 1; r < n; ++r) {
        const Acc candidate = std::abs(panel[r * kPanel + j]);
        if (candidate > best_abs) {
          best = r;
          best_abs = candidate;
        }
      }
      if (best_abs == Acc(0)) fail_singular(k);
      pivot[k] = best;
      if (best != k) {
        for (int64_t c = 0; c < n; ++c) std::swap(a[k * n + c], a[best * n + c]);
        for (int64_t c = 0; c < kPanel; ++c) {
          std::swap(panel[k * kPanel + c], panel[best * kPanel + c]);
        }
      }
      // As in LU, row r loses factor = a[r][k] / pivot times the pivot row, and column k of the
      // result gets -factor. pivot_row has 1 in column j and keep 0, so that happens in the same
      // vector pass (a scalar store into a row just before loading it as a vector would stall).
      Acc keep[kPanel], pivot_row[kPanel];
      for (int64_t c = 0; c < kPanel; ++c) {
        keep[c] = c == j ? Acc(0) : Acc(1);
        pivot_row[c] = c == j ? Acc(1) : panel[k * kPanel + c];
      }
      const Acc inv_pivot = Acc(1) / panel[k * kPanel + j];
      for (int64_t r = 0; r < n; ++r) {
        Acc* __restrict p = panel + r * kPanel;
        const Acc factor = p[j] * inv_pivot;
        for (int64_t c = 0; c < kPanel; ++c) p[c] = p[c] * keep[c] - factor * pivot_row[c];
      }
      for (int64_t c = 0; c < kPanel; ++c) panel[k * kPanel + c] = pivot_row[c] * inv_pivot;
    }
    // The pivot rows before the update, zero-padded to kPanel rows.
    for (int64_t j = 0; j < kPanel; ++j) {
      for (int64_t c = 0; c < n; ++c) rows[j * n + c] = j < w ? a[(k0 + j) * n + c] : Acc(0);
    }
    for (int64_t r = 0; r < n; ++r) {
      Acc* row = a + r * n;
      const Acc* coefficient = panel + r * kPanel;
      const bool pivot_row = r >= k0 && r < k0 + w;
      update_columns(row, coefficient, pivot_row, rows, n, 0, k0);
      update_columns(row, coefficient, pivot_row, rows, n, k0 + w, n);
      for (int64_t j = 0; j < w; ++j) row[k0 + j] = coefficient[j];
    }
  }
  // The row swaps of A become column swaps of A^-1, undone in reverse order.
  for (int64_t k = n - 1; k >= 0; --k) {
    const int64_t p = pivot[k];
    if (p != k) {
      for (int64_t r = 0; r < n; ++r) std::swap(a[r * n + k], a[r * n + p]);
    }
  }
  for (int64_t i = 0; i < n * n; ++i) out[i] = static_cast<T>(a[i]);
}

// Small matrices, N known at compile time: kLanes matrices at a time, transposed so that lane
// l of every scratch array belongs to matrix l. Every operation is then a loop over lanes
// that the compiler vectorises; pivot choices differ between lanes, so row and column swaps
// are selects, and a singular lane is only reported at the end (the others carry on with
// infinities meanwhile). Each lane does the unblocked elimination of invert_one (kPanel = 1,
// in effect), so its pivots are those of an LU factorisation with partial pivoting.
template <typename Acc>
constexpr int kLanes = 16 / static_cast<int>(sizeof(Acc));

template <typename T, typename Acc, int N>
void invert_lanes(const T* __restrict in, T* __restrict out, int64_t count) {
  constexpr int L = kLanes<Acc>;
  Acc a[N][N][L];
  Acc pivot[N][L];  // the pivot row of each column, as Acc so that selects stay one width
  for (int l = 0; l < L; ++l) {
    for (int r = 0; r < N; ++r) {
      for (int c = 0; c < N; ++c) {
        // Padding lanes (past the batch) hold the identity; no pointer is formed for them.
        a[r][c][l] = l < count ? static_cast<Acc>(in[(l * N + r) * N + c]) : Acc(r == c ? 1 : 0);
      }
    }
  }
  Acc zero_pivot[L];  // the first column with a zero pivot, N if none
  for (int l = 0; l < L; ++l) zero_pivot[l] = Acc(N);
  for (int k = 0; k < N; ++k) {
    Acc best[L], best_abs[L], inv_pivot[L];
    for (int l = 0; l < L; ++l) {
      best[l] = Acc(k);
      best_abs[l] = std::abs(a[k][k][l]);
    }
    for (int r = k + 1; r < N; ++r) {
      for (int l = 0; l < L; ++l) {
        const Acc candidate = std::abs(a[r][k][l]);
        const bool larger = candidate > best_abs[l];
        best[l] = larger ? Acc(r) : best[l];
        best_abs[l] = larger ? candidate : best_abs[l];
      }
    }
    for (int l = 0; l < L; ++l) {
      zero_pivot[l] = best_abs[l] == Acc(0) ? std::min(zero_pivot[l], Acc(k)) : zero_pivot[l];
    }
    for (int r = k + 1; r < N; ++r) {
      for (int c = 0; c < N; ++c) {
        for (int l = 0; l < L; ++l) {
          const bool swap = best[l] == Acc(r);
          const Acc x = a[k][c][l], y = a[r][c][l];
          a[k][c][l] = swap ? y : x;
          a[r][c][l] = swap ? x : y;
        }
      }
    }
    for (int l = 0; l < L; ++l) {
      pivot[k][l] = best[l];
      inv_pivot[l] = Acc(1) / a[k][k][l];
    }
    for (int r = 0; r < N; ++r) {
      if (r == k) continue;
      Acc factor[L];
      for (int l = 0; l < L; ++l) factor[l] = a[r][k][l] * inv_pivot[l];
      for (int c = 0; c < N; ++c) {
        for (int l = 0; l < L; ++l) a[r][c][l] -= factor[l] * a[k][c][l];
      }
      for (int l = 0; l < L; ++l) a[r][k][l] = -factor[l];
    }
    for (int c = 0; c < N; ++c) {
      for (int l = 0; l < L; ++l) a[k][c][l] *= inv_pivot[l];
    }
    for (int l = 0; l < L; ++l) a[k][k][l] = inv_pivot[l];
  }
  for (int l = 0; l < count; ++l) {  // padding lanes hold the identity
    if (zero_pivot[l] != Acc(N)) fail_singular(static_cast<int64_t>(zero_pivot[l]));
  }
  // The row swaps of A become column swaps of A^-1, undone in reverse order: column c of the
  // result is column source[c] of a.
  for (int l = 0; l < count; ++l) {
    int source[N];
    for (int c = 0; c < N; ++c) source[c] = c;
    for (int k = N - 1; k >= 0; --k) std::swap(source[k], source[static_cast<int>(pivot[k][l])]);
    T* matrix = out + l * N * N;
    for (int r = 0; r < N; ++r) {
      for (int c = 0; c < N; ++c) matrix[r * N + c] = static_cast<T>(a[r][source[c]][l]);
    }
  }
}

template <typename T, typename Acc, int N>
void invert_range_small(const T* in, T* out, int64_t begin, int64_t end) {
  constexpr int L = kLanes<Acc>;
  for (int64_t m = begin; m < end; m += L) {
    invert_lanes<T, Acc, N>(in + m * N * N, out + m * N * N, std::min<int64_t>(L, end - m));
  }
}

}  // namespace

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Output<T>& Y,
             const Attributes& /*attrs*/) {
  using Acc = opgen::compute_type<T>;
  const int64_t n = X.dim(-1);
  // The batch count from the kernel API: dividing numel() by n * n would divide by zero when
  // n * n wraps.
  const int64_t matrices = n == 0 ? 0 : X.size_before(-2);
  const T* in = X.data;
  T* out = Y.data;
  ctx.parallel_for(matrices, [&](int64_t begin, int64_t end) {
    switch (n) {
      case 1: return invert_range_small<T, Acc, 1>(in, out, begin, end);
      case 2: return invert_range_small<T, Acc, 2>(in, out, begin, end);
      case 3: return invert_range_small<T, Acc, 3>(in, out, begin, end);
      case 4: return invert_range_small<T, Acc, 4>(in, out, begin, end);
      case 5: return invert_range_small<T, Acc, 5>(in, out, begin, end);
      case 6: return invert_range_small<T, Acc, 6>(in, out, begin, end);
      case 7: return invert_range_small<T, Acc, 7>(in, out, begin, end);
      case 8: return invert_range_small<T, Acc, 8>(in, out, begin, end);
      default: break;
    }
    std::vector<Acc> a(n * n), panel(n * kPanel), rows(kPanel * n);
    std::vector<int64_t> pivot(n);
    for (int64_t m = begin; m < end; ++m) {
      invert_one<T, Acc>(in + m * n * n, out + m * n * n, n, a.data(), panel.data(), rows.data(),
                         pivot.data());
    }
  });
}

}  // namespace opgen::inverse
