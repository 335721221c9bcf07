// CUDA kernel of the Sum op definition (opdefs/sum_op.yaml): one thread per element of Y, each
// value read through its broadcast strides (along Y's axes merged where the values allow).
// Floating sums accumulate in double and round once, integer sums wrap around, as on the CPU
// (sum_op_kernel.h). The values' pointers and strides go to the device as kernel arguments
// (which a captured CUDA graph keeps): up to kValues per launch, more through an accumulator in
// device memory. The generator never writes this file.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace opgen::sum_op {

namespace {

constexpr int kValues = 16;
constexpr int kRank = 8;

template <typename T>
struct Values {
  const T* data[kValues];
  int64_t strides[kValues][kRank];  // 0 along an axis the value broadcasts
  int count;
};

struct OutputShape {
  int64_t dims[kRank];
  int rank;
};

template <typename C>
__host__ __device__ C accumulate(C total, C value) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(total) + static_cast<U>(value));
  } else {
    return total + value;
  }
}

// Element i of Y's sum over `values` (one launch's), added to `total`; with `first` (the
// launch holding value 0), the sum starts at that value, as on the CPU (0 + -0.0 would be +0.0).
template <typename T, typename C>
__host__ __device__ C add_values_at(int64_t i, const Values<T>& values, const OutputShape& shape, bool first,
                                    C total) {
  int64_t offsets[kValues] = {};
  int64_t rest = i;
  for (int d = shape.rank - 1; d >= 0; --d) {
    const int64_t index = rest % shape.dims[d];
    rest /= shape.dims[d];
    for (int v = 0; v < values.count; ++v) offsets[v] += index * values.strides[v][d];
  }
  for (int v = 0; v < values.count; ++v) {
    const C value = static_cast<C>(opgen::cuda::widen(values.data[v][offsets[v]]));
    total = first && v == 0 ? value : accumulate<C>(total, value);
  }
  return total;
}

// Values [first, first + values.count) added into Y (or into `partial`, where more follow).
template <typename T, typename C>
__global__ void add_values(Values<T> values, OutputShape shape, int64_t n, C* partial, bool first,
                           bool last, T* __restrict__ y) {
  for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) {
    const C total = add_values_at<T, C>(i, values, shape, first, first ? C(0) : partial[i]);
    if (last) {
      y[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(total));
    } else {
      partial[i] = total;
    }
  }
}

// Y's axes and each value's strides along them, axes of size 1 dropped and neighbours merged
// where every value steps through both alike (contiguous, or broadcast along both): any rank
// fits in kRank axes unless the values broadcast along more alternating axes than that.
struct Layout {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // per value, per axis of dims
};

template <typename T>
Layout merged_axes(const opgen::Inputs<T>& X, const opgen::Output<T>& Y) {
  Layout layout{{}, std::vector<std::vector<int64_t>>(X.size())};
  std::vector<int64_t>& dims = layout.dims;
  std::vector<std::vector<int64_t>>& strides = layout.strides;
  for (int64_t d = 0; d < Y.rank(); ++d) {
    const int64_t size = Y.shape[static_cast<size_t>(d)];
    if (size == 1) continue;
    bool merges = !dims.empty();
    std::vector<int64_t> along(X.size());
    for (size_t v = 0; v < X.size(); ++v) {
      const opgen::Input<T>& value = X[v];
      const int64_t axis = d - (Y.rank() - value.rank());  // aligned to Y's trailing axes
      along[v] = axis < 0 || value.shape[static_cast<size_t>(axis)] == 1 ? 0 : value.size_from(axis + 1);
      merges = merges && strides[v].back() == along[v] * size;
    }
    if (merges) {
      dims.back() *= size;
      for (size_t v = 0; v < X.size(); ++v) strides[v].back() = along[v];
    } else {
      dims.push_back(size);
      for (size_t v = 0; v < X.size(); ++v) strides[v].push_back(along[v]);
    }
  }
  if (dims.size() > static_cast<size_t>(kRank)) {
    opgen::fail("Sum: the CUDA kernel takes values broadcast along at most " + std::to_string(kRank) +
                " alternating axes, got " + std::to_string(dims.size()));
  }
  return layout;
}

OutputShape output_shape(const Layout& layout) {
  OutputShape shape{};
  shape.rank = static_cast<int>(layout.dims.size());
  for (int d = 0; d < shape.rank; ++d) shape.dims[d] = layout.dims[static_cast<size_t>(d)];
  return shape;
}

// The values of the launch starting at value `first`: up to kValues of them.
template <typename T>
Values<T> launch_values(const opgen::Inputs<T>& X, const Layout& layout, size_t first) {
  Values<T> values{};
  values.count = static_cast<int>(std::min<size_t>(kValues, X.size() - first));
  for (int v = 0; v < values.count; ++v) {
    const size_t index = first + static_cast<size_t>(v);
    values.data[v] = X[index].data;
    for (size_t d = 0; d < layout.dims.size(); ++d) values.strides[v][d] = layout.strides[index][d];
  }
  return values;
}

// Calls launch(values, first, last) for each launch's values in turn: `first` for the one
// holding value 0, `last` for the one whose sums go to Y.
template <typename T, typename Launch>
void for_each_launch(const opgen::Inputs<T>& X, const Layout& layout, Launch launch) {
  for (size_t first = 0; first < X.size(); first += kValues) {
    launch(launch_values(X, layout, first), first == 0, first + kValues >= X.size());
  }
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Inputs<T>& X, const opgen::Output<T>& Y,
                  const Attributes& attrs) {
  (void)attrs;
  using C = std::conditional_t<std::is_integral_v<T>, T, double>;
  const int64_t n = Y.numel();
  if (n == 0) return;
  const Layout layout = merged_axes(X, Y);
  const OutputShape shape = output_shape(layout);
  const bool chunked = X.size() > static_cast<size_t>(kValues);
  // Where more values follow a launch: the sums so far, in device memory of the call's own.
  std::optional<opgen::cuda::DeviceScratch<C>> partial_sums;
  if (chunked) partial_sums.emplace(ctx, static_cast<size_t>(n), "the partial sums");
  C* partial = chunked ? partial_sums->data() : nullptr;
  constexpr unsigned kThreads = 256;
  for_each_launch(X, layout, [&](const Values<T>& values, bool first, bool last) {
    add_values<T, C><<<opgen::cuda::Context::blocks_for(n, kThreads), kThreads, 0, ctx.stream()>>>(
        values, shape, n, partial, first, last, Y.data);
    ctx.check_launch("add_values");
  });
}

}  // namespace opgen::sum_op
