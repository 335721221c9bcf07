// Hand-written kernel of the ComplexRotate op definition (opdefs/complex_rotate.yaml).
// The generator never writes this file. It is compiled for each dtype of T into the native
// PyTorch library and the pybind11 module (not into ONNX Runtime's, which has no complex
// tensors). T is std::complex<float> or std::complex<double>.
//
// The product is written out, (a c - b d) + (a d + b c) i, rather than std::complex's
// operator*, which follows C's Annex G (it turns some NaN results back into infinities):
// PyTorch multiplies complex numbers the textbook way, and the two must agree on every value.
#include <cmath>
#include <complex>
#include <cstdint>

namespace opgen::complex_rotate {

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Output<T>& Y,
             const Attributes& attrs) {
  using Part = typename T::value_type;
  const Part c = static_cast<Part>(std::cos(static_cast<double>(attrs.angle)));
  const Part s = static_cast<Part>(std::sin(static_cast<double>(attrs.angle)));
  ctx.parallel_for(Y.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const Part a = X.data[i].real();
      const Part b = X.data[i].imag();
      Y.data[i] = T(a * c - b * s, a * s + b * c);
    }
  });
}

}  // namespace opgen::complex_rotate
