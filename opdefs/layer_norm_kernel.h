// Hand-written kernel of the LayerNorm op definition (opdefs/layer_norm.yaml).
// The generator never writes this file. It is compiled once per dtype of T into the ONNX
// Runtime library, the pybind11 module and the native PyTorch library. The signature is
// declared in generated/layer_norm/layer_norm_op.h; shapes are already checked there.
//
// One row at a time: its mean and biased variance accumulated in float64, then Y. Mean and
// InvStdDev are null where ONNX Runtime's node leaves them out.
#include <cmath>
#include <cstdint>

namespace opgen::layer_norm {

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& Scale,
             const opgen::Input<T>* B, const opgen::Output<T>& Y, const opgen::Output<float>* Mean,
             const opgen::Output<float>* InvStdDev, const Attributes& attrs) {
  using C = opgen::compute_type<T>;
  const int64_t n = X.dim(-1);
  ctx.parallel_for(X.size_before(-1), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const T* x = X.data + row * n;
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
      const double mean = sum / static_cast<double>(n);
      double squares = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const double centered = static_cast<double>(x[i]) - mean;
        squares += centered * centered;
      }
      const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(n) + attrs.epsilon);
      T* y = Y.data + row * n;
      for (int64_t i = 0; i < n; ++i) {
        double value = (static_cast<double>(x[i]) - mean) * inv_std *
                       static_cast<double>(Scale.data[i]);
        if (B) value += static_cast<double>(B->data[i]);
        y[i] = static_cast<T>(static_cast<C>(value));
      }
      if (Mean) Mean->data[row] = static_cast<float>(mean);
      if (InvStdDev) InvStdDev->data[row] = static_cast<float>(inv_std);
    }
  });
}

}  // namespace opgen::layer_norm
