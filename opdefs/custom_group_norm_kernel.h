// Hand-written kernel of the CustomGroupNorm op definition (opdefs/custom_group_norm.yaml).
// The generator never writes this file. Shapes are already checked against X [N, C, ...],
// scale [C], bias [C] and num_groups [] in generated/custom_group_norm/custom_group_norm_op.h;
// num_groups is data, so it is checked here.
#include <cmath>
#include <string>

namespace opgen::custom_group_norm {

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
  const int64_t spatial = batch * channels == 0 ? 0 : X.numel() / (batch * channels);
  const int64_t channels_per_group = channels / groups;
  const int64_t group_size = channels_per_group * spatial;
  const double epsilon = attrs.epsilon;
  // One work item per (sample, group): its elements are contiguous.
  ctx.parallel_for(group_size == 0 ? 0 : batch * groups, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const T* in = X.data + item * group_size;
      T* out = Y.data + item * group_size;
      double sum = 0;
      for (int64_t i = 0; i < group_size; ++i) sum += static_cast<double>(in[i]);
      const double mean = sum / static_cast<double>(group_size);
      double squares = 0;
      for (int64_t i = 0; i < group_size; ++i) {
        const double centered = static_cast<double>(in[i]) - mean;
        squares += centered * centered;
      }
      const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(group_size) + epsilon);
      const int64_t first_channel = (item % groups) * channels_per_group;
      for (int64_t c = 0; c < channels_per_group; ++c) {
        const double channel_scale = inv_std * static_cast<double>(scale.data[first_channel + c]);
        const double channel_shift = static_cast<double>(bias.data[first_channel + c]);
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t i = c * spatial + s;
          out[i] = static_cast<T>((static_cast<double>(in[i]) - mean) * channel_scale + channel_shift);
        }
      }
    }
  });
}

}  // namespace opgen::custom_group_norm
