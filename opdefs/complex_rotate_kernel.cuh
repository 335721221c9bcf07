// CUDA kernel of the ComplexRotate op definition (opdefs/complex_rotate.yaml): each value times
// cos(angle) + i sin(angle), one thread per value. The products and sums are rounded one by one
// (no fused multiply-add: the kernels build with --fmad=false), as the CPU kernel's
// (complex_rotate_kernel.h), so both give the same bits. std::complex<P> is two P, real first:
// the kernel reads it as such.
namespace opgen::complex_rotate {

namespace {

template <typename Part>
__global__ void rotate(const Part* __restrict__ x, Part* __restrict__ y, int64_t n, Part c, Part s) {
  for (int64_t i = opgen::cuda::first_item(); i < n; i += opgen::cuda::item_stride()) {
    const Part a = x[2 * i];
    const Part b = x[2 * i + 1];
    y[2 * i] = a * c - b * s;
    y[2 * i + 1] = a * s + b * c;
  }
}

}  // namespace

template <typename T>
void compute_cuda(const opgen::cuda::Context& ctx, const opgen::Input<T>& X, const opgen::Output<T>& Y,
                  const Attributes& attrs) {
  using Part = typename T::value_type;
  static_assert(sizeof(T) == 2 * sizeof(Part), "std::complex is two parts");
  const Part c = static_cast<Part>(std::cos(static_cast<double>(attrs.angle)));
  const Part s = static_cast<Part>(std::sin(static_cast<double>(attrs.angle)));
  const int64_t n = Y.numel();
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  rotate<Part><<<opgen::cuda::Context::blocks_for(n, kThreads), kThreads, 0, ctx.stream()>>>(
      reinterpret_cast<const Part*>(X.data), reinterpret_cast<Part*>(Y.data), n, c, s);
  ctx.check_launch("rotate");
}

}  // namespace opgen::complex_rotate
