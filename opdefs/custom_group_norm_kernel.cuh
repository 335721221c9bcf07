// CUDA kernel of the CustomGroupNorm op definition (opdefs/custom_group_norm.yaml): one block of
// threads per (sample, group), whose elements are contiguous, with the CPU kernel's arithmetic
// (custom_group_norm_kernel.h): the group scaled by a power of two so that its largest value is
// about 1 (no overflow in the squares), mean and variance in double, then each channel's scale
// and bias. num_groups is data on the device: each block reads it; a value that is not a
// positive divisor of C is flagged (item 0: not positive; 1: no divisor) and fails the call with
// the CPU kernel's message. The generator never writes this file.
#include <string>

namespace opgen::custom_group_norm {

namespace {

constexpr unsigned kThreads = 256;

template <typename T>
__global__ void group_norm(const T* __restrict__ x, const int64_t* __restrict__ num_groups,
                           const T* __restrict__ scale, const T* __restrict__ bias, T* __restrict__ y,
                           int64_t batch, int64_t channels, int64_t spatial, double epsilon,
                           long long* bad_groups) {
  __shared__ double shared[kThreads];
  const int64_t groups = *num_groups;
  if (groups <= 0 || channels % groups != 0) {
    if (blockIdx.x == 0 && threadIdx.x == 0) opgen::cuda::flag(bad_groups, groups <= 0 ? 0 : 1);
    // Defined values where the call cannot fail (inside a captured CUDA graph): NaN.
    const int64_t total = batch * channels * spatial;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      y[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(NAN));
    }
    return;
  }
  const int64_t channels_per_group = channels / groups;
  const int64_t size = channels_per_group * spatial;
  for (int64_t item = blockIdx.x; item < batch * groups; item += gridDim.x) {
    const T* in = x + item * size;
    T* out = y + item * size;
    double largest = 0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      largest = fmax(largest, fabs(static_cast<double>(opgen::cuda::widen(in[i]))));
    }
    largest = opgen::cuda::block_reduce(largest, shared, [](double a, double b) { return fmax(a, b); });
    int shift = 0;
    if (isfinite(largest) && largest > 0) {
      frexp(largest, &shift);
      shift = max(shift, -1020);  // subnormal inputs: 2^-shift must stay finite
    }
    const double factor = ldexp(1.0, -shift);
    const double count = static_cast<double>(size);
    const auto sum = [](double a, double b) { return a + b; };
    double partial = 0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      partial += static_cast<double>(opgen::cuda::widen(in[i])) * factor;
    }
    const double mean = opgen::cuda::block_reduce(partial, shared, sum) / count;
    partial = 0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const double centered = static_cast<double>(opgen::cuda::widen(in[i])) * factor - mean;
      partial += centered * centered;
    }
    const double squares = opgen::cuda::block_reduce(partial, shared, sum);
    const double inv_std = 1.0 / sqrt(squares / count + ldexp(epsilon, -2 * shift));
    const int64_t first_channel = (item % groups) * channels_per_group;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const int64_t channel = first_channel + i / spatial;
      const double centered = static_cast<double>(opgen::cuda::widen(in[i])) * factor - mean;
      const double value = centered * (inv_std * static_cast<double>(opgen::cuda::widen(scale[channel]))) +
                           static_cast<double>(opgen::cuda::widen(bias[channel]));
      out[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(value));
    }
  }
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<T>& X,
                  const opgen::Input<int64_t>& num_groups, const opgen::Input<T>& scale,
                  const opgen::Input<T>& bias, const opgen::Output<T>& Y, const Attributes& attrs) {
  const int64_t batch = X.dim(0);
  const int64_t channels = X.dim(1);
  const int64_t spatial = X.size_from(2);
  const opgen::cuda::DeviceFlag bad_groups(ctx);
  // Blocks for every (sample, group) there can be (groups <= channels); the extra ones find no
  // item. At least one, which checks num_groups when there is nothing to normalize.
  const int64_t items = spatial == 0 ? 1 : std::max<int64_t>(1, batch * channels);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(items, 65535));
  group_norm<T><<<blocks, kThreads, 0, ctx.stream()>>>(X.data, num_groups.data, scale.data, bias.data,
                                                      Y.data, batch, channels, spatial,
                                                      static_cast<double>(attrs.epsilon), bad_groups.device());
  ctx.check_launch("group_norm");
  const long long problem = bad_groups.first();
  if (problem < 0) return;
  const int64_t groups = bad_groups.element(num_groups.data, 0);
  if (problem == 0) {
    opgen::fail("CustomGroupNorm: num_groups must be positive, got " + std::to_string(groups));
  }
  opgen::fail("CustomGroupNorm: num_groups = " + std::to_string(groups) + " does not divide the " +
              std::to_string(channels) + " channels");
}

}  // namespace opgen::custom_group_norm
