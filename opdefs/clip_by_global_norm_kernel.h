// Hand-written kernel of the ClipByGlobalNorm op definition (opdefs/clip_by_global_norm.yaml).
// The generator never writes this file. It is compiled once per dtype of T into the ONNX
// Runtime library. The signature is declared in generated/clip_by_global_norm/
// clip_by_global_norm_op.h; X holds at least one value and Y exactly as many, Y[i] of X[i]'s
// shape.
//
// One pass on the calling thread sums the squares in double, in order (so the norm does not
// depend on the thread count); a second scales every element of every value, split across the
// pool by one index over all of them (a list of many small tensors makes one pool call).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace opgen::clip_by_global_norm {

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Inputs<T>& X, const opgen::Output<T>& norm,
             const opgen::Outputs<T>& Y, const Attributes& attrs) {
  double squares = 0.0;
  // starts[v]: the index of value v's first element among all values' (the last: the total).
  std::vector<int64_t> starts{0};
  for (const opgen::Input<T>& value : X) {
    for (int64_t i = 0; i < value.numel(); ++i) {
      const double element = static_cast<double>(value.data[i]);
      squares += element * element;
    }
    starts.push_back(starts.back() + value.numel());
  }
  const double total = std::sqrt(squares);
  norm.data[0] = static_cast<T>(total);
  // min(1, ratio) as torch.clamp(ratio, max=1) computes it: a NaN ratio (a NaN in X) stays NaN
  // (std::min would give 1 and leave the finite values unscaled).
  const double ratio = static_cast<double>(attrs.max_norm) / (total + 1e-6);
  const double factor = std::isnan(ratio) ? ratio : std::min(1.0, ratio);
  ctx.parallel_for(starts.back(), [&](int64_t begin, int64_t end) {
    // The value holding element `begin`: the last whose start is at or before it.
    size_t v = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin()) - 1;
    for (int64_t at = begin; at < end; ++v) {
      const int64_t stop = std::min(end, starts[v + 1]);
      for (; at < stop; ++at) {
        const int64_t i = at - starts[v];
        Y[v].data[i] = static_cast<T>(static_cast<double>(X[v].data[i]) * factor);
      }
    }
  });
}

}  // namespace opgen::clip_by_global_norm
