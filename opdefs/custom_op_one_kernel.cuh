// CUDA kernel of CustomOpOne (opdefs/custom_op_one.yaml): Z = X + Y, one thread per element in
// a grid-stride loop. The generator never writes this file; nvcc compiles it once per dtype of
// T into the domain's CUDA libraries. The signature is declared in
// generated/custom_op_one/custom_op_one_cuda.h; shapes are already checked there.
namespace opgen::custom_op_one {

namespace {

template <typename T>
__global__ void add(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, int64_t n) {
  for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) {
    z[i] = x[i] + y[i];
  }
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& Y,
                  const opgen::Output<T>& Z, const Attributes& attrs) {
  (void)attrs;
  const int64_t n = Z.numel();
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  add<<<opgen::cuda::Context::blocks_for(n, kThreads), kThreads, 0, ctx.stream()>>>(X.data, Y.data, Z.data, n);
  ctx.check_launch("add");
}

}  // namespace opgen::custom_op_one
