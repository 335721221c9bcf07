// CUDA kernel of the Dequantize op definition (opdefs/dequantize.yaml): Y = float(X) * scale,
// rounded to T once, as on the CPU (dequantize_kernel.h); one thread per element, the scale
// read on the device. The generator never writes this file.
namespace opgen::dequantize {

namespace {

// One value times the scale, rounded to T once, as on the CPU. Host code too: CI checks it
// against the CPU kernel.
template <typename T, typename Q>
__host__ __device__ T dequantized(Q value, float step) {
  return opgen::cuda::narrow<T>(static_cast<float>(opgen::cuda::widen(value)) * step);
}

template <typename Q, typename T>
__global__ void dequantize(const Q* __restrict__ x, const T* __restrict__ scale, T* __restrict__ y,
                           int64_t n) {
  const float step = opgen::cuda::widen(scale[0]);
  for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) {
    y[i] = dequantized<T>(x[i], step);
  }
}

}  // namespace

template <typename Q, typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<Q>& X, const opgen::Input<T>& scale,
                  const opgen::Output<T>& Y, const Attributes& attrs) {
  (void)attrs;
  const int64_t n = Y.numel();
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  dequantize<Q, T><<<opgen::cuda::Context::blocks_for(n, kThreads), kThreads, 0, ctx.stream()>>>(
      X.data, scale.data, Y.data, n);
  ctx.check_launch("dequantize");
}

}  // namespace opgen::dequantize
