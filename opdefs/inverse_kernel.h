// Hand-written kernel of the Inverse op definition (opdefs/inverse.yaml).
// The generator never writes this file. It is compiled once per dtype of T into both the
// ONNX Runtime library and the pybind11 module. The signature is declared in
// generated/inverse/inverse_op.h; shapes are already checked against [..., N, N] there.
#include <cmath>
#include <vector>

namespace opgen::inverse {

namespace {

// Inverts one n x n row-major matrix: LU with partial pivoting, then one forward and one
// backward substitution per column of the identity. Acc is the precision we compute in.
template <typename T, typename Acc>
void invert_one(const T* in, T* out, int64_t n, Acc* lu, int64_t* pivot, Acc* column) {
  for (int64_t i = 0; i < n * n; ++i) lu[i] = static_cast<Acc>(in[i]);
  for (int64_t k = 0; k < n; ++k) {
    int64_t best = k;
    Acc best_abs = std::abs(lu[k * n + k]);
    for (int64_t r = k + 1; r < n; ++r) {
      Acc candidate = std::abs(lu[r * n + k]);
      if (candidate > best_abs) {
        best = r;
        best_abs = candidate;
      }
    }
    if (best_abs == Acc(0)) {
      opgen::fail("Inverse: matrix is singular (zero pivot in column " + std::to_string(k) + ")");
    }
    pivot[k] = best;
    if (best != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(lu[k * n + c], lu[best * n + c]);
    }
    const Acc inv_pivot = Acc(1) / lu[k * n + k];
    for (int64_t r = k + 1; r < n; ++r) {
      const Acc factor = lu[r * n + k] * inv_pivot;
      lu[r * n + k] = factor;
      for (int64_t c = k + 1; c < n; ++c) lu[r * n + c] -= factor * lu[k * n + c];
    }
  }
  // Row swaps applied to the identity: track where each original row went.
  std::vector<int64_t> permutation(n);
  for (int64_t i = 0; i < n; ++i) permutation[i] = i;
  for (int64_t k = 0; k < n; ++k) std::swap(permutation[k], permutation[pivot[k]]);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) column[i] = permutation[i] == j ? Acc(1) : Acc(0);
    for (int64_t i = 0; i < n; ++i) {  // L y = P e_j, L unit lower triangular
      Acc sum = column[i];
      for (int64_t c = 0; c < i; ++c) sum -= lu[i * n + c] * column[c];
      column[i] = sum;
    }
    for (int64_t i = n - 1; i >= 0; --i) {  // U x = y
      Acc sum = column[i];
      for (int64_t c = i + 1; c < n; ++c) sum -= lu[i * n + c] * column[c];
      column[i] = sum / lu[i * n + i];
    }
    for (int64_t i = 0; i < n; ++i) out[i * n + j] = static_cast<T>(column[i]);
  }
}

}  // namespace

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Output<T>& Y,
             const Attributes& /*attrs*/) {
  using Acc = opgen::compute_type<T>;
  const int64_t n = X.dim(-1);
  const int64_t matrices = n == 0 ? 0 : X.numel() / (n * n);
  ctx.parallel_for(matrices, [&](int64_t begin, int64_t end) {
    std::vector<Acc> lu(n * n), column(n);
    std::vector<int64_t> pivot(n);
    for (int64_t m = begin; m < end; ++m) {
      invert_one<T, Acc>(X.data + m * n * n, Y.data + m * n * n, n, lu.data(), pivot.data(),
                         column.data());
    }
  });
}

}  // namespace opgen::inverse
