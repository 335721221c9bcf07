// Hand-written kernel of the Dequantize op definition (opdefs/dequantize.yaml).
// The generator never writes this file. It is compiled for each binding of Q and T into the
// ONNX Runtime library, the pybind11 module and the native PyTorch library. The signature is
// declared in generated/dequantize/dequantize_op.h; the shapes are already checked there
// (scale is a scalar, Y has X's shape).
//
// Each value goes to float32 exactly (the integer types here have at most 16 bits; a float8
// value through its decoding table), is multiplied by the scale in float32 and rounded to T.
#include <cstdint>

namespace opgen::dequantize {

template <typename Q, typename T>
void compute(const opgen::Context& ctx, const opgen::Input<Q>& X, const opgen::Input<T>& scale,
             const opgen::Output<T>& Y, const Attributes& attrs) {
  (void)attrs;  // none
  const float step = static_cast<float>(scale.data[0]);
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    const Q* __restrict x = X.data;
    T* __restrict y = Y.data;
    for (int64_t i = begin; i < end; ++i) {
      y[i] = static_cast<T>(static_cast<float>(x[i]) * step);
    }
  });
}

}  // namespace opgen::dequantize
