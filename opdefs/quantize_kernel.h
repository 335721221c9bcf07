// Hand-written kernel of the Quantize op definition (opdefs/quantize.yaml).
// The generator never writes this file. It is compiled for each binding of Q (the type
// `output_dtype` names) and T into the ONNX Runtime library, the pybind11 module and the native
// PyTorch library. The signature is declared in generated/quantize/quantize_op.h; the shapes
// are already checked there (scale is a scalar, Y has X's shape).
//
// The quotient is computed in float32 (T's compute type), clamped to Q's range (infinities
// too), then rounded half to even by adding and subtracting 1.5 * 2^23: exact for the clamped
// values (|q| < 2^22), under the default rounding mode, and without a branch or a libm call,
// so the loop vectorises. Clamping before rounding gives the same integers as rounding first
// (Q's bounds are integers). A NaN is zeroed before the conversion (which C++ leaves
// undefined for it) and reported, naming the first one.
//
// A float8 Q takes the float32 quotient as ONNX's Cast with saturate=1 converts it (rounded to
// nearest even; out of range, infinities included, the largest value of the sign; NaN stays
// NaN), which is QuantizeLinear's default.
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace opgen::quantize {

template <typename Q, typename T, typename C>
void quantize_to_integers(const opgen::Context& ctx, const opgen::Input<T>& X, C step,
                          const opgen::Output<Q>& Y) {
  static_assert(sizeof(Q) <= 2, "the rounding below is exact for |q| < 2^22 only");
  constexpr C lowest = static_cast<C>(std::numeric_limits<Q>::min());
  constexpr C highest = static_cast<C>(std::numeric_limits<Q>::max());
  constexpr C round_even = C(12582912);  // 1.5 * 2^23
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    // Locals, not the views' members: Q may be a char type, whose stores could alias them.
    const T* __restrict x = X.data;
    Q* __restrict y = Y.data;
    const C divisor = step;
    int nan_found = 0;
    for (int64_t i = begin; i < end; ++i) {
      const C quotient = static_cast<C>(x[i]) / divisor;
      const int is_nan = quotient != quotient;
      nan_found |= is_nan;
      C clamped = is_nan ? C(0) : quotient;
      clamped = clamped < lowest ? lowest : clamped;
      clamped = clamped > highest ? highest : clamped;
      y[i] = static_cast<Q>((clamped + round_even) - round_even);
    }
    if (!nan_found) return;
    for (int64_t i = begin; i < end; ++i) {  // rare: find the first NaN for the message
      const C quotient = static_cast<C>(x[i]) / divisor;
      if (quotient != quotient) {
        opgen::fail("Quantize: X[" + std::to_string(i) + "] is NaN, which no integer represents");
      }
    }
  });
}

template <typename Q, typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& scale,
             const opgen::Output<Q>& Y, const Attributes& attrs) {
  (void)attrs;  // output_dtype chose Q
  using C = opgen::compute_type<T>;
  const C step = static_cast<C>(scale.data[0]);
  if (!(step > C(0) && step <= std::numeric_limits<C>::max())) {  // NaN fails both
    opgen::fail("Quantize: scale must be positive and finite");
  }
  if constexpr (std::is_integral_v<Q>) {
    quantize_to_integers(ctx, X, step, Y);
  } else {  // a float8 type
    ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Y.data[i].bits = Q::from_float(static_cast<float>(static_cast<C>(X.data[i]) / step), true);
      }
    });
  }
}

}  // namespace opgen::quantize
