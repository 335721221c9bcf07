// CUDA kernel of CustomOpTwo (opdefs/custom_op_two.yaml): Y = int32(round(X)), C's round (halves
// away from zero), one thread per element. A value that does not round into int32 (NaN,
// infinities, out of range) is flagged on the device and fails the call with the CPU kernel's
// message, naming the first one. The generator never writes this file.
namespace opgen::custom_op_two {

namespace {

__global__ void round_to_int32(const float* __restrict__ x, int32_t* __restrict__ y, int64_t n,
                               long long* out_of_range) {
  for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) {
    const float value = x[i];
    if (value >= -2147483648.0f && value < 2147483648.0f) {
      y[i] = static_cast<int32_t>(roundf(value));
    } else {
      y[i] = 0;
      opgen::cuda::flag(out_of_range, i);
    }
  }
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<T>& X, const opgen::Output<int32_t>& Y,
                  const Attributes& attrs) {
  (void)attrs;
  const int64_t n = Y.numel();
  if (n == 0) return;
  const opgen::cuda::DeviceFlag out_of_range(ctx);
  constexpr unsigned kThreads = 256;
  round_to_int32<<<opgen::cuda::Context::blocks_for(n, kThreads), kThreads, 0, ctx.stream()>>>(
      X.data, Y.data, n, out_of_range.device());
  ctx.check_launch("round_to_int32");
  const long long first = out_of_range.first();
  if (first >= 0) {
    opgen::fail("CustomOpTwo: X[" + std::to_string(first) + "] = " +
                std::to_string(out_of_range.element(X.data, first)) + " does not round to an int32");
  }
}

}  // namespace opgen::custom_op_two
