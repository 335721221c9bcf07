// CUDA kernel of the LayerNorm op definition (opdefs/layer_norm.yaml): one block of threads per
// row, its mean and biased variance accumulated in double as on the CPU (layer_norm_kernel.h),
// reduced across the block in shared memory. Mean and InvStdDev are null where ONNX Runtime's
// node leaves them out. The generator never writes this file.
namespace opgen::layer_norm {

namespace {

constexpr unsigned kThreads = 256;

// The sum of every thread's `value` in the block, in every thread.
__device__ double block_sum(double value, double* shared) {
  return opgen::cuda::block_reduce(value, shared, [](double a, double b) { return a + b; });
}

template <typename T>
__global__ void normalize_rows(const T* __restrict__ x, const T* __restrict__ scale,
                               const T* __restrict__ bias, T* __restrict__ y, float* __restrict__ mean_out,
                               float* __restrict__ inv_std_out, int64_t rows, int64_t n, double epsilon) {
  __shared__ double shared[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * n;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(opgen::cuda::widen(in[i]));
    const double mean = block_sum(sum, shared) / static_cast<double>(n);
    double squares = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double centered = static_cast<double>(opgen::cuda::widen(in[i])) - mean;
      squares += centered * centered;
    }
    const double inv_std = 1.0 / sqrt(block_sum(squares, shared) / static_cast<double>(n) + epsilon);
    T* out = y + row * n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      double value = (static_cast<double>(opgen::cuda::widen(in[i])) - mean) * inv_std *
                     static_cast<double>(opgen::cuda::widen(scale[i]));
      if (bias != nullptr) value += static_cast<double>(opgen::cuda::widen(bias[i]));
      out[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(value));
    }
    if (threadIdx.x == 0) {
      if (mean_out != nullptr) mean_out[row] = static_cast<float>(mean);
      if (inv_std_out != nullptr) inv_std_out[row] = static_cast<float>(inv_std);
    }
  }
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& Scale,
                  const opgen::Input<T>* B, const opgen::Output<T>& Y, const opgen::Output<float>* Mean,
                  const opgen::Output<float>* InvStdDev, const Attributes& attrs) {
  const int64_t rows = X.size_before(-1);
  const int64_t n = X.dim(-1);
  if (rows == 0) return;  // (rows of no values get the CPU's NaN statistics: 0 / 0)
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  normalize_rows<T><<<blocks, kThreads, 0, ctx.stream()>>>(
      X.data, Scale.data, B != nullptr ? B->data : nullptr, Y.data,
      Mean != nullptr ? Mean->data : nullptr, InvStdDev != nullptr ? InvStdDev->data : nullptr, rows,
      n, static_cast<double>(attrs.epsilon));
  ctx.check_launch("normalize_rows");
}

}  // namespace opgen::layer_norm
