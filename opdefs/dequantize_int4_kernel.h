// Hand-written kernel of the DequantizeInt4 op definition (opdefs/dequantize_int4.yaml).
// The generator never writes this file. It is compiled for each binding of Q and T into the
// ONNX Runtime library. The signature is declared in generated/dequantize_int4/
// dequantize_int4_op.h; the shapes are already checked there (scale is a scalar, Y has X's
// shape). X comes one value per byte (opgen::int4, opgen::uint4), unpacked by the library.
#include <cstdint>

namespace opgen::dequantize_int4 {

template <typename Q, typename T>
void compute(const opgen::Context& ctx, const opgen::Input<Q>& X, const opgen::Input<T>& scale,
             const opgen::Output<T>& Y, const Attributes& attrs) {
  (void)attrs;  // none
  const float step = static_cast<float>(scale.data[0]);
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Y.data[i] = static_cast<T>(static_cast<float>(static_cast<int>(X.data[i])) * step);
    }
  });
}

}  // namespace opgen::dequantize_int4
