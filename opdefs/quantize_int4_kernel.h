// Hand-written kernel of the QuantizeInt4 op definition (opdefs/quantize_int4.yaml).
// The generator never writes this file. It is compiled for each binding of Q (the type
// `output_dtype` names) and T into the ONNX Runtime library. The signature is declared in
// generated/quantize_int4/quantize_int4_op.h; the shapes are already checked there.
//
// Y is written one value per byte (opgen::int4, opgen::uint4); the library packs it after.
// As in Quantize (opdefs/quantize_kernel.h): the float32 quotient is clamped to Q's range, then
// rounded half to even by adding and subtracting 1.5 * 2^23 (exact here, under the default
// rounding mode), without a branch or a libm call, so the loop vectorises; a NaN is zeroed
// before the conversion and reported after the loop, naming the first one of the range.
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
  constexpr float lowest = static_cast<float>(Q::kMin);
  constexpr float highest = static_cast<float>(Q::kMax);
  constexpr float round_even = 12582912.0f;  // 1.5 * 2^23
  using Storage = typename Q::Storage;
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    // Locals, not the views' members: Q is a char-sized type, whose stores could alias them.
    const T* __restrict x = X.data;
    Q* __restrict y = Y.data;
    const float divisor = step;
    int nan_found = 0;
    for (int64_t i = begin; i < end; ++i) {
      const float quotient = static_cast<float>(x[i]) / divisor;
      const int is_nan = quotient != quotient;
      nan_found |= is_nan;
      float clamped = is_nan ? 0.0f : quotient;
      clamped = clamped < lowest ? lowest : clamped;
      clamped = clamped > highest ? highest : clamped;
      y[i].value = static_cast<Storage>(static_cast<int>((clamped + round_even) - round_even));
    }
    if (!nan_found) return;
    for (int64_t i = begin; i < end; ++i) {  // rare: find the first NaN for the message
      const float quotient = static_cast<float>(x[i]) / divisor;
      if (quotient != quotient) {
        opgen::fail("QuantizeInt4: X[" + std::to_string(i) + "] is NaN, which no integer represents");
      }
    }
  });
}

}  // namespace opgen::quantize_int4
