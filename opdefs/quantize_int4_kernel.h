// Hand-written kernel of the QuantizeInt4 op definition (opdefs/quantize_int4.yaml).
// The generator never writes this file. It is compiled for each binding of Q (the type
// `output_dtype` names) and T into the ONNX Runtime library. The signature is declared in
// generated/quantize_int4/quantize_int4_op.h; the shapes are already checked there.
//
// Y is written one value per byte (opgen::int4, opgen::uint4); the library packs it after.
// std::nearbyint rounds half to even under the default rounding mode; the quotient is clamped
// first, so the conversion to an integer is always defined.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace opgen::quantize_int4 {

template <typename Q, typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& scale,
             const opgen::Output<Q>& Y, const Attributes& attrs) {
  (void)attrs;  // output_dtype chose Q
  const float step = static_cast<float>(scale.data[0]);
  if (!(step > 0.0f && step <= std::numeric_limits<float>::max())) {  // NaN fails both
    opgen::fail("QuantizeInt4: scale must be positive and finite");
  }
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float quotient = static_cast<float>(X.data[i]) / step;
      if (std::isnan(quotient)) {
        opgen::fail("QuantizeInt4: X[" + std::to_string(i) + "] is NaN, which no integer represents");
      }
      const float clamped = std::clamp(quotient, float(Q::kMin), float(Q::kMax));
      Y.data[i] = Q(static_cast<int64_t>(std::nearbyint(clamped)));
    }
  });
}

}  // namespace opgen::quantize_int4
