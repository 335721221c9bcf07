// CUDA kernel of the ClipByGlobalNorm op definition (opdefs/clip_by_global_norm.yaml): the joint
// L2 norm of every value of X, in double, then each value scaled by min(1, max_norm / (norm +
// 1e-6)), a NaN ratio kept (as torch.clamp keeps it), as on the CPU
// (clip_by_global_norm_kernel.h). Two passes over the values, up to kValues of them per launch
// (their pointers go as kernel arguments, which a captured CUDA graph keeps): block sums of
// squares added into one double in device memory, then the scaling. The sum's order differs
// from the CPU's, so the norm may differ in its last bits. The generator never writes this file.
#include <algorithm>

namespace opgen::clip_by_global_norm {

namespace {

constexpr int kValues = 16;
constexpr unsigned kThreads = 256;

template <typename T>
struct Values {
  const T* in[kValues];
  T* out[kValues];
  int64_t sizes[kValues];
  int count;
};

template <typename T>
__global__ void add_squares(Values<T> values, double* total) {
  __shared__ double shared[kThreads];
  double partial = 0;
  for (int v = 0; v < values.count; ++v) {
    for (int64_t i = opgen::cuda::first_item(); i < values.sizes[v]; i += opgen::cuda::item_stride()) {
      const double element = static_cast<double>(opgen::cuda::widen(values.in[v][i]));
      partial += element * element;
    }
  }
  shared[threadIdx.x] = partial;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, shared[0]);
}

__device__ double clip_factor(double squares, double max_norm) {
  const double ratio = max_norm / (sqrt(squares) + 1e-6);
  return isnan(ratio) ? ratio : fmin(1.0, ratio);
}

template <typename T>
__global__ void scale_values(Values<T> values, const double* total, double max_norm, T* norm) {
  const double factor = clip_factor(*total, max_norm);
  if (norm != nullptr && opgen::cuda::first_item() == 0) {
    *norm = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(sqrt(*total)));
  }
  for (int v = 0; v < values.count; ++v) {
    for (int64_t i = opgen::cuda::first_item(); i < values.sizes[v]; i += opgen::cuda::item_stride()) {
      const double element = static_cast<double>(opgen::cuda::widen(values.in[v][i]));
      values.out[v][i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(element * factor));
    }
  }
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Inputs<T>& X, const opgen::Output<T>& norm,
                  const opgen::Outputs<T>& Y, const Attributes& attrs) {
  int64_t largest = 1;
  for (const opgen::Input<T>& value : X) largest = std::max(largest, value.numel());
  const unsigned blocks = opgen::cuda::Context::blocks_for(std::min<int64_t>(largest, int64_t{1} << 20), kThreads);
  const opgen::cuda::DeviceScratch<double> sum_of_squares(ctx, 1, "the sum of squares");
  double* total = sum_of_squares.data();
  cudaError_t status = cudaMemsetAsync(total, 0, sizeof(double), ctx.stream());
  const auto chunk = [&](size_t first) {
    Values<T> values{};
    values.count = static_cast<int>(std::min<size_t>(kValues, X.size() - first));
    for (int v = 0; v < values.count; ++v) {
      values.in[v] = X[first + static_cast<size_t>(v)].data;
      values.out[v] = Y[first + static_cast<size_t>(v)].data;
      values.sizes[v] = X[first + static_cast<size_t>(v)].numel();
    }
    return values;
  };
  for (size_t first = 0; status == cudaSuccess && first < X.size(); first += kValues) {
    add_squares<T><<<blocks, kThreads, 0, ctx.stream()>>>(chunk(first), total);
    status = cudaGetLastError();
  }
  // The norm is written once, by the first scaling launch (one with no values, where X has none).
  for (size_t first = 0; status == cudaSuccess && (first == 0 || first < X.size()); first += kValues) {
    scale_values<T><<<blocks, kThreads, 0, ctx.stream()>>>(
        X.empty() ? Values<T>{} : chunk(first), total, static_cast<double>(attrs.max_norm),
        first == 0 ? norm.data : nullptr);
    status = cudaGetLastError();
  }
  ctx.check(status, "launching the norm's kernels");
}

}  // namespace opgen::clip_by_global_norm
