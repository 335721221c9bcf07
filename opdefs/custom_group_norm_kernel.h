// Hand-written kernel of the CustomGroupNorm op definition (opdefs/custom_group_norm.yaml).
// The generator never writes this file. Shapes are already checked against X [N, C, ...],
// scale [C], bias [C] and num_groups [] in generated/custom_group_norm/custom_group_norm_op.h;
// num_groups is data, so it is checked here.
#include <algorithm>
#include <cmath>
#include <string>

namespace opgen::custom_group_norm {

namespace {

// How one (sample, group) is normalized: y = (x * factor - mean) * inv_std, where factor is the
// power of two that brings the group's largest magnitude into [0.5, 1). Scaling by a power of
// two is exact, and it keeps the sums finite at |X| near 1e300 (where the plain variance is inf
// and every output was 0) and away from underflow at |X| near 1e-300.
struct Statistics {
  double factor;
  double mean;
  double inv_std;
};

template <typename T>
Statistics statistics(const T* in, int64_t size, double epsilon) {
  double largest = 0;
  for (int64_t i = 0; i < size; ++i) largest = std::max(largest, std::abs(static_cast<double>(in[i])));
  int shift = 0;
  if (std::isfinite(largest) && largest > 0) {
    std::frexp(largest, &shift);
    shift = std::max(shift, -1020);  // subnormal inputs: 2^-shift must stay finite
  }
  const double factor = std::ldexp(1.0, -shift);
  const double count = static_cast<double>(size);
  double sum = 0;
  for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(in[i]) * factor;
  const double mean = sum / count;
  double squares = 0;
  for (int64_t i = 0; i < size; ++i) {
    const double centered = static_cast<double>(in[i]) * factor - mean;
    squares += centered * centered;
  }
  // epsilon is added to the variance of X, which is the scaled variance times 2^(2 * shift).
  return {factor, mean, 1.0 / std::sqrt(squares / count + std::ldexp(epsilon, -2 * shift))};
}

}  // namespace

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X,
             const opgen::Input<int64_t>& num_groups, const opgen::Input<T>& scale,
             const opgen::Input<T>& bias, const opgen::Output<T>& Y, const Attributes& attrs) {
  const int64_t groups = num_groups.data[0];
  const int64_t channels = X.dim(1);
  if (groups <= 0) {
    opgen::fail("CustomGroupNorm: num_groups must be positive, got " + std::to_string(groups));
  }
  if (channels % groups != 0) {
    opgen::fail("CustomGroupNorm: num_groups = " + std::to_string(groups) +
                " does not divide the " + std::to_string(channels) + " channels");
  }
  const int64_t batch = X.dim(0);
  const int64_t spatial = X.size_from(2);
  const int64_t channels_per_group = channels / groups;
  const int64_t group_size = channels_per_group * spatial;
  const double epsilon = attrs.epsilon;
  // One work item per (sample, group): its elements are contiguous.
  ctx.parallel_for(group_size == 0 ? 0 : batch * groups, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const T* in = X.data + item * group_size;
      T* out = Y.data + item * group_size;
      const Statistics stats = statistics(in, group_size, epsilon);
      const int64_t first_channel = (item % groups) * channels_per_group;
      for (int64_t c = 0; c < channels_per_group; ++c) {
        const double channel_scale = stats.inv_std * static_cast<double>(scale.data[first_channel + c]);
        const double channel_shift = static_cast<double>(bias.data[first_channel + c]);
        const T* channel_in = in + c * spatial;
        T* channel_out = out + c * spatial;
        for (int64_t i = 0; i < spatial; ++i) {
          const double centered = static_cast<double>(channel_in[i]) * stats.factor - stats.mean;
          channel_out[i] = static_cast<T>(centered * channel_scale + channel_shift);
        }
      }
    }
  });
}

}  // namespace opgen::custom_group_norm
