// Hand-written kernel of the Sum op definition (opdefs/sum_op.yaml).
// The generator never writes this file. It is compiled once per dtype of T into the ONNX
// Runtime library, the pybind11 module and the native PyTorch library. The signature is
// declared in generated/sum_op/sum_op_op.h; the values' shapes are already checked there
// (they broadcast to Y's), and X holds at least one value.
//
// Values of Y's own shape are read in place; the others through broadcast offsets. Floating
// sums accumulate in double and round once (thousands of float32 values stay exact to the
// last bit of the result); integer sums wrap around as PyTorch's and ONNX Runtime's do (never
// signed overflow).
#include <cstdint>
#include <type_traits>
#include <vector>

namespace opgen::sum_op {

template <typename T>
T add(T total, T value) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(total) + static_cast<U>(value));
  } else {
    return total + value;
  }
}

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Inputs<T>& X, const opgen::Output<T>& Y,
             const Attributes& attrs) {
  (void)attrs;
  using C = std::conditional_t<std::is_integral_v<T>, T, double>;
  // Per value: empty where it has Y's shape (read at i), else its offset for each i of Y.
  std::vector<std::vector<int64_t>> offsets(X.size());
  for (size_t v = 0; v < X.size(); ++v) {
    if (X[v].shape != Y.shape) offsets[v] = opgen::broadcast_offsets(X[v].shape, Y.shape);
  }
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      C total = static_cast<C>(X[0].data[offsets[0].empty() ? i : offsets[0][i]]);
      for (size_t v = 1; v < X.size(); ++v) {
        total = add<C>(total, static_cast<C>(X[v].data[offsets[v].empty() ? i : offsets[v][i]]));
      }
      Y.data[i] = static_cast<T>(total);
    }
  });
}

}  // namespace opgen::sum_op
