// CUDA kernel of the Quantize op definition (opdefs/quantize.yaml): Y = X / scale, rounded half
// to even and clamped to an integer Q, or converted with saturation to a float8 Q, as on the CPU
// (quantize_kernel.h); one thread per element. Its checks run on the device and fail the call
// with the CPU kernel's messages: a scale that is not positive and finite (flagged as item 0),
// else the first X that divides to NaN for an integer Q (item i + 1). The generator never
// writes this file.
#include <limits>
#include <string>
#include <type_traits>

namespace opgen::quantize {

namespace {

// Y[i] = X[i] / step as Q, as the CPU kernel converts it: for an integer Q clamped to its range
// and rounded half to even (rint; the CPU's 1.5 * 2^23 trick), 0 for a NaN; for a float8 Q,
// saturating. Returns the item to flag where the call fails (i + 1: a NaN for an integer Q),
// else -1. Host code too: CI checks it against the CPU kernel.
template <typename Q, typename T, typename C>
__host__ __device__ long long quantize_item(const T* x, Q* y, int64_t i, C step) {
  const C quotient = opgen::cuda::widen(x[i]) / step;
  if constexpr (std::is_integral_v<Q>) {
    if (quotient != quotient) {
      y[i] = Q(0);
      return i + 1;
    }
    constexpr C lowest = static_cast<C>(std::numeric_limits<Q>::min());
    constexpr C highest = static_cast<C>(std::numeric_limits<Q>::max());
    const C clamped = quotient < lowest ? lowest : (quotient > highest ? highest : quotient);
    y[i] = static_cast<Q>(rint(clamped));
  } else {
    y[i] = opgen::cuda::narrow<Q>(static_cast<float>(quotient));
  }
  return -1;
}

// The CPU kernel's error for the first item flagged (0: the scale), if any.
inline void fail_flagged(long long first) {
  if (first == 0) opgen::fail("Quantize: scale must be positive and finite");
  if (first > 0) {
    opgen::fail("Quantize: X[" + std::to_string(first - 1) + "] is NaN, which no integer represents");
  }
}

template <typename Q, typename T>
__global__ void quantize(const T* __restrict__ x, const T* __restrict__ scale, Q* __restrict__ y,
                         int64_t n, long long* failed) {
  using C = opgen::cuda::compute_t<T>;
  const C step = opgen::cuda::widen(scale[0]);
  if (!(step > C(0) && step <= std::numeric_limits<C>::max())) {  // NaN fails both
    if (opgen::cuda::first_item() == 0) opgen::cuda::flag(failed, 0);
    // Defined values where the call cannot fail (inside a captured CUDA graph): 0.
    for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) y[i] = Q{};
    return;
  }
  for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) {
    const long long item = quantize_item(x, y, i, step);
    if (item >= 0) opgen::cuda::flag(failed, item);
  }
}

}  // namespace

template <typename Q, typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& scale,
                  const opgen::Output<Q>& Y, const Attributes& attrs) {
  (void)attrs;  // output_dtype chose Q
  const int64_t n = Y.numel();
  const opgen::cuda::DeviceFlag failed(ctx);
  constexpr unsigned kThreads = 256;
  quantize<Q, T><<<opgen::cuda::Context::blocks_for(n, kThreads), kThreads, 0, ctx.stream()>>>(
      X.data, scale.data, Y.data, n, failed.device());
  ctx.check_launch("quantize");
  fail_flagged(failed.first());
}

}  // namespace opgen::quantize
