// CUDA kernel of the Sum op definition (opdefs/sum_op.yaml): one thread per element of Y, each
// value read through its broadcast strides. Floating sums accumulate in double and round once,
// integer sums wrap around, as on the CPU (sum_op_kernel.h). The values' pointers and strides
// go to the device as kernel arguments (which a captured CUDA graph keeps): up to kValues per
// launch, more through an accumulator in device memory. The generator never writes this file.
#include <cstdint>
#include <string>
#include <type_traits>

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
__device__ C add(C total, C value) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(total) + static_cast<U>(value));
  } else {
    return total + value;
  }
}

// Values [first, first + values.count) added into Y (or into `partial`, where more follow).
template <typename T, typename C>
__global__ void add_values(Values<T> values, OutputShape shape, int64_t n, C* partial, bool first,
                           bool last, T* __restrict__ y) {
  for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) {
    int64_t offsets[kValues] = {};
    int64_t rest = i;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const int64_t index = rest % shape.dims[d];
      rest /= shape.dims[d];
      for (int v = 0; v < values.count; ++v) offsets[v] += index * values.strides[v][d];
    }
    C total = first ? C(0) : partial[i];
    for (int v = 0; v < values.count; ++v) {
      total = add<C>(total, static_cast<C>(opgen::cuda::widen(values.data[v][offsets[v]])));
    }
    if (last) {
      y[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(total));
    } else {
      partial[i] = total;
    }
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
  if (Y.rank() > kRank) {
    opgen::fail("Sum: the CUDA kernel takes values of rank " + std::to_string(kRank) +
                " at most, got rank " + std::to_string(Y.rank()));
  }
  OutputShape shape{};
  shape.rank = static_cast<int>(Y.rank());
  for (int d = 0; d < shape.rank; ++d) shape.dims[d] = Y.shape[static_cast<size_t>(d)];
  C* partial = nullptr;
  const bool chunked = X.size() > static_cast<size_t>(kValues);
  if (chunked) {
    ctx.check(cudaMallocAsync(reinterpret_cast<void**>(&partial), static_cast<size_t>(n) * sizeof(C), ctx.stream()),
              "allocating the partial sums");
  }
  constexpr unsigned kThreads = 256;
  for (size_t first = 0; first < X.size(); first += kValues) {
    Values<T> values{};
    values.count = static_cast<int>(std::min<size_t>(kValues, X.size() - first));
    for (int v = 0; v < values.count; ++v) {
      const opgen::Input<T>& value = X[first + static_cast<size_t>(v)];
      values.data[v] = value.data;
      // Aligned to Y's trailing axes: a missing or size-1 axis broadcasts (stride 0).
      int64_t stride = 1;
      for (int d = shape.rank - 1, axis = static_cast<int>(value.rank()) - 1; d >= 0; --d, --axis) {
        const int64_t size = axis >= 0 ? value.shape[static_cast<size_t>(axis)] : 1;
        values.strides[v][d] = size == 1 ? 0 : stride;
        stride *= size;
      }
    }
    const bool last = first + kValues >= X.size();
    add_values<T, C><<<opgen::cuda::Context::blocks_for(n, kThreads), kThreads, 0, ctx.stream()>>>(
        values, shape, n, partial, first == 0, last, Y.data);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess && partial != nullptr) static_cast<void>(cudaFreeAsync(partial, ctx.stream()));
    ctx.check(launched, "launching add_values");
  }
  if (partial != nullptr) ctx.check(cudaFreeAsync(partial, ctx.stream()), "freeing the partial sums");
}

}  // namespace opgen::sum_op
