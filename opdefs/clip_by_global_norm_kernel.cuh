// CUDA kernel of the ClipByGlobalNorm op definition (opdefs/clip_by_global_norm.yaml): the joint
// L2 norm of every value of X, in double, then each value scaled by min(1, max_norm / (norm +
// 1e-6)), a NaN ratio kept (as torch.clamp keeps it), as on the CPU
// (clip_by_global_norm_kernel.h). Two passes over the values, up to kValues of them per launch
// (their pointers go as kernel arguments, which a captured CUDA graph keeps): block sums of
// squares in device memory, added by one block in a fixed order, then the scaling. The sum's
// order differs from the CPU's, so the norm may differ from it in its last bits, but not from
// run to run. The generator never writes this file.
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

__device__ double plus(double a, double b) { return a + b; }

// Each block's sum of squares over the values, into partials[blockIdx.x].
template <typename T>
__global__ void add_squares(Values<T> values, double* partials) {
  __shared__ double shared[kThreads];
  double partial = 0;
  for (int v = 0; v < values.count; ++v) {
    for (int64_t i = opgen::cuda::first_item(); i < values.sizes[v]; i += opgen::cuda::item_stride()) {
      const double element = static_cast<double>(opgen::cuda::widen(values.in[v][i]));
      partial += element * element;
    }
  }
  const double sum = opgen::cuda::block_reduce(partial, shared, plus);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// Every launch's block sums added by one block in one order, so that the norm is the same on
// every run (atomics would add them in whichever order the blocks finish).
__global__ void add_partials(const double* partials, int64_t count, double* total) {
  __shared__ double shared[kThreads];
  double partial = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) partial += partials[i];
  const double sum = opgen::cuda::block_reduce(partial, shared, plus);
  if (threadIdx.x == 0) *total = sum;
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
  const size_t launches = (X.size() + kValues - 1) / kValues;
  // Each launch's block sums, then their total (the last element).
  const opgen::cuda::DeviceScratch<double> sums(ctx, launches * blocks + 1, "the sums of squares");
  double* total = sums.data() + launches * blocks;
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
  cudaError_t status = cudaSuccess;
  for (size_t first = 0; status == cudaSuccess && first < X.size(); first += kValues) {
    add_squares<T><<<blocks, kThreads, 0, ctx.stream()>>>(chunk(first), sums.data() + first / kValues * blocks);
    status = cudaGetLastError();
  }
  if (status == cudaSuccess) {
    add_partials<<<1, kThreads, 0, ctx.stream()>>>(sums.data(), static_cast<int64_t>(launches * blocks), total);
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
