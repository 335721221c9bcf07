// Hand-written kernel of the Quantize op definition (opdefs/quantize.yaml).
// The generator never writes this file. It is compiled for each binding of Q (the type
// `output_dtype` names) and T into the ONNX Runtime library, the pybind11 module and the native
// PyTorch library. The signature is declared in generated/quantize/quantize_op.h; the shapes
// are already checked there (scale is a scalar, Y has X's shape).
//
// The quotient is computed in float32 (T's compute type) and rounded half to even by
// std::nearbyint (the default rounding mode); clamping happens before the conversion, which
// C++ leaves undefined for a value out of Q's range, and a NaN is reported, never converted.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace opgen::quantize {

template <typename Q, typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& scale,
             const opgen::Output<Q>& Y, const Attributes& attrs) {
  (void)attrs;  // output_dtype chose Q
  using C = opgen::compute_type<T>;
  const C step = static_cast<C>(scale.data[0]);
  if (!(step > C(0)) || !std::isfinite(step)) {
    opgen::fail("Quantize: scale must be positive and finite");
  }
  // Q's bounds are exact in float32 (16 bits at most).
  constexpr C lowest = static_cast<C>(std::numeric_limits<Q>::min());
  constexpr C highest = static_cast<C>(std::numeric_limits<Q>::max());
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const C quotient = static_cast<C>(X.data[i]) / step;
      if (std::isnan(quotient)) {
        opgen::fail("Quantize: X[" + std::to_string(i) + "] is NaN, which no integer represents");
      }
      const C rounded = std::nearbyint(quotient);
      Y.data[i] = rounded <= lowest    ? std::numeric_limits<Q>::min()
                  : rounded >= highest ? std::numeric_limits<Q>::max()
                                       : static_cast<Q>(rounded);
    }
  });
}

}  // namespace opgen::quantize
