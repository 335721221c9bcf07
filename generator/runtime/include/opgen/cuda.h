// What a CUDA kernel (the `cuda` file of an op definition) gets from the runtime calling it,
// PyTorch's CUDA dispatch key or ONNX Runtime's CUDA provider: the stream to launch on, the
// device, and the op's name for its errors. Its Input and Output views (opgen/runtime.h) hold
// device pointers and host shapes. Compiled by nvcc (the kernels) and the C++ compiler (the
// wrappers); the device helpers at the end exist for nvcc only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include "opgen/runtime.h"

namespace opgen::cuda {

// A failed CUDA call as opgen::Error naming the op and what failed: the runtimes turn it into
// a PyTorch exception or an ONNX Runtime error status.
inline void check(::cudaError_t status, const char* op, const std::string& what) {
  if (status == ::cudaSuccess) return;
  opgen::fail(std::string(op) + ": " + what + " failed: " + ::cudaGetErrorName(status) + " (" +
              ::cudaGetErrorString(status) + ")");
}

class Context {
 public:
  Context(const char* op, ::cudaStream_t stream, int device) : op_(op), stream_(stream), device_(device) {}

  // Every launch goes on this stream (PyTorch's current stream, or ONNX Runtime's compute
  // stream): never the default stream, never a synchronization.
  ::cudaStream_t stream() const { return stream_; }
  // The device the tensors are on, current while the kernel runs.
  int device() const { return device_; }
  const char* op() const { return op_; }

  // A CUDA call's error, naming the op and `what`.
  void check(::cudaError_t status, const std::string& what) const { opgen::cuda::check(status, op_, what); }
  // After a launch: its error (no kernel image for this GPU, a bad configuration) naming the op.
  // The wrappers check once more after the kernel returns; a kernel launching several times
  // calls it after each to name the launch.
  void check_launch(const char* kernel) const {
    check(::cudaGetLastError(), std::string("launching ") + kernel);
  }

  // Blocks of `threads` covering `items`, at most CUDA's grid limit (a grid-stride loop covers
  // the rest); at least one, so a launch for no items is valid (its threads do nothing).
  static unsigned blocks_for(int64_t items, unsigned threads) {
    const int64_t blocks = (items + threads - 1) / threads;
    return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 2147483647));
  }

 private:
  const char* op_;
  ::cudaStream_t stream_;
  int device_;
};

// opgen's own stream-ordered memory pool of the context's device, made on first use and kept
// for the process. It keeps up to kKeptScratchBytes of what is freed into it for the next call
// (the device's default pool hands everything back to the driver at each synchronization, and
// a data check synchronizes on every call); more goes back at the next synchronization. It
// never makes one stream wait for another to reuse memory.
constexpr std::uint64_t kKeptScratchBytes = std::uint64_t{256} << 20;

inline ::cudaMemPool_t scratch_pool(const Context& ctx) {
  static std::mutex mutex;
  static std::map<int, ::cudaMemPool_t> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = pools.find(ctx.device());
  if (found != pools.end()) return found->second;
  ::cudaMemPoolProps properties{};
  properties.allocType = ::cudaMemAllocationTypePinned;
  properties.handleTypes = ::cudaMemHandleTypeNone;
  properties.location.type = ::cudaMemLocationTypeDevice;
  properties.location.id = ctx.device();
  ::cudaMemPool_t pool = nullptr;
  ctx.check(::cudaMemPoolCreate(&pool, &properties), "creating a memory pool");
  std::uint64_t kept_bytes = kKeptScratchBytes;
  int no_hidden_waits = 0;
  ::cudaError_t configured = ::cudaMemPoolSetAttribute(pool, ::cudaMemPoolAttrReleaseThreshold, &kept_bytes);
  if (configured == ::cudaSuccess) {
    configured = ::cudaMemPoolSetAttribute(pool, ::cudaMemPoolReuseAllowInternalDependencies, &no_hidden_waits);
  }
  if (configured != ::cudaSuccess) static_cast<void>(::cudaMemPoolDestroy(pool));
  ctx.check(configured, "configuring a memory pool");
  pools.emplace(ctx.device(), pool);
  return pool;
}

// Whether work on the context's stream is being captured into a CUDA graph (torch.compile's
// "reduce-overhead", torch.cuda.graph, ONNX Runtime's CUDA graphs): nothing may wait there.
inline bool capturing(const Context& ctx) {
  ::cudaStreamCaptureStatus status = ::cudaStreamCaptureStatusNone;
  ctx.check(::cudaStreamIsCapturing(ctx.stream(), &status), "querying the stream");
  return status != ::cudaStreamCaptureStatusNone;
}

// Device memory for `count` elements of T during one call, stream-ordered: the work launched on
// the context's stream after it may use it, and it is freed on that stream when this goes
// (nothing waits). Inside a CUDA graph being captured it is the graph's own, placed by the
// device's current pool (on that device, as opgen's): a capture in CUDA's global mode, which
// may refuse calls that are not stream work, never creates opgen's pool.
template <typename T>
class DeviceScratch {
 public:
  DeviceScratch(const Context& ctx, size_t count, const std::string& what) : stream_(ctx.stream()) {
    if (count > std::numeric_limits<size_t>::max() / sizeof(T)) {
      opgen::fail(std::string(ctx.op()) + ": " + what + " would take more than " +
                  std::to_string(std::numeric_limits<size_t>::max()) + " bytes");
    }
    const size_t bytes = std::max<size_t>(1, count * sizeof(T));
    void* memory = nullptr;
    ctx.check(capturing(ctx) ? ::cudaMallocAsync(&memory, bytes, stream_)
                             : ::cudaMallocFromPoolAsync(&memory, bytes, scratch_pool(ctx), stream_),
              "allocating " + std::to_string(bytes) + " bytes for " + what);
    data_ = static_cast<T*>(memory);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() { static_cast<void>(::cudaFreeAsync(data_, stream_)); }

  T* data() const { return data_; }

 private:
  ::cudaStream_t stream_;
  T* data_ = nullptr;
};

// A data check on the device, as the CPU kernel makes it: the kernel's threads flag the items
// that fail it (flag(), the smallest wins) and the host code reads the first one back after its
// launches, to fail with the CPU kernel's message. Reading it waits for the stream; inside a
// CUDA graph being captured (torch.compile's "reduce-overhead") no wait is allowed, so the
// check is not made there: a kernel writes defined values (NaN, 0) where a check fails. The
// flag is DeviceScratch of its own.
class DeviceFlag {
 public:
  static constexpr long long kNone = 0x7f7f7f7f7f7f7f7fLL;  // every byte 0x7f: no item flagged

  explicit DeviceFlag(const Context& ctx) : ctx_(ctx), flag_(ctx, 1, "a device flag") {
    ctx.check(::cudaMemsetAsync(flag_.data(), 0x7f, sizeof(long long), ctx.stream()), "clearing a device flag");
  }
  DeviceFlag(const DeviceFlag&) = delete;
  DeviceFlag& operator=(const DeviceFlag&) = delete;

  // What the kernel's threads write (with opgen::cuda::flag).
  long long* device() const { return flag_.data(); }

  // The smallest item flagged by the work on the stream so far: -1 where none was, or where
  // the stream is being captured into a CUDA graph (nothing can be read back there).
  long long first() const {
    if (capturing(ctx_)) return -1;
    ctx_.check_launch("the kernel");
    long long value = kNone;
    ctx_.check(::cudaMemcpyAsync(&value, flag_.data(), sizeof value, ::cudaMemcpyDeviceToHost, ctx_.stream()),
               "reading a device flag");
    ctx_.check(::cudaStreamSynchronize(ctx_.stream()), "running the kernel");
    return value == kNone ? -1 : value;
  }

  // One element of device memory, read back (for a message naming the offending value).
  template <typename T>
  T element(const T* data, long long index) const {
    T value{};
    ctx_.check(::cudaMemcpyAsync(&value, data + index, sizeof(T), ::cudaMemcpyDeviceToHost, ctx_.stream()),
               "reading an element");
    ctx_.check(::cudaStreamSynchronize(ctx_.stream()), "reading an element");
    return value;
  }

 private:
  const Context& ctx_;
  DeviceScratch<long long> flag_;
};

// After the kernel returned: a launch error it left unchecked, naming the op. (An error while
// the kernel runs on the device surfaces at the stream's next synchronization.)
inline void check_kernel_returned(const char* op) {
  check(::cudaGetLastError(), op, "a CUDA launch of the kernel");
}

}  // namespace opgen::cuda

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace opgen::cuda {

// The kernel's element types on the device: float16 and bfloat16 computed in float, as on the
// CPU (opgen::compute_type_of); the others are their own.
template <typename T>
struct device_compute_type {
  using type = T;
};
template <>
struct device_compute_type<opgen::float16> {
  using type = float;
};
template <>
struct device_compute_type<opgen::bfloat16> {
  using type = float;
};
template <>
struct device_compute_type<opgen::float8e4m3fn> {
  using type = float;
};
template <>
struct device_compute_type<opgen::float8e5m2> {
  using type = float;
};
template <typename T>
using compute_t = typename device_compute_type<T>::type;

// A float's bits and back, in device and host code.
__host__ __device__ __forceinline__ std::uint32_t float_bits(float value) {
#ifdef __CUDA_ARCH__
  return ::__float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}
__host__ __device__ __forceinline__ float float_from_bits(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return ::__uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// To the compute type, to the CPU types' bits, a NaN's too: CUDA's conversions make every NaN
// one NaN without its sign, where the CPU keeps a float16 NaN's sign and payload and makes every
// float8 NaN the quiet NaN.
template <typename T>
__host__ __device__ __forceinline__ compute_t<T> widen(T value) {
  return value;
}
template <>
__host__ __device__ __forceinline__ float widen<opgen::float16>(opgen::float16 value) {
  const std::uint32_t bits = value.bits;
  if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0) {
    return float_from_bits(((bits & 0x8000u) << 16) | 0x7f800000u | ((bits & 0x3ffu) << 13));
  }
  return ::__half2float(::__ushort_as_half(value.bits));
}
template <>
__host__ __device__ __forceinline__ float widen<opgen::bfloat16>(opgen::bfloat16 value) {
  return float_from_bits(static_cast<std::uint32_t>(value.bits) << 16);  // exact, NaNs too
}

// float8 (the two formats CUDA has: e4m3fn and e5m2; not the fnuz ones) through half, exactly.
constexpr std::uint32_t kQuietNanBits = 0x7fc00000u;
template <>
__host__ __device__ __forceinline__ float widen<opgen::float8e4m3fn>(opgen::float8e4m3fn value) {
  if ((value.bits & 0x7fu) == 0x7fu) return float_from_bits(kQuietNanBits);
  return ::__half2float(::__half(::__nv_cvt_fp8_to_halfraw(value.bits, ::__NV_E4M3)));
}
template <>
__host__ __device__ __forceinline__ float widen<opgen::float8e5m2>(opgen::float8e5m2 value) {
  if ((value.bits & 0x7fu) > 0x7cu) return float_from_bits(kQuietNanBits);
  return ::__half2float(::__half(::__nv_cvt_fp8_to_halfraw(value.bits, ::__NV_E5M2)));
}

// Back to T, rounded to nearest even as on the CPU, to the same bits: a NaN too, which CUDA's
// conversions would make one NaN without its sign (the CPU keeps the sign, and bfloat16 the
// payload's upper bits).
template <typename T>
__host__ __device__ __forceinline__ T narrow(compute_t<T> value) {
  return static_cast<T>(value);
}
template <>
__host__ __device__ __forceinline__ opgen::float16 narrow<opgen::float16>(float value) {
  opgen::float16 result;
  result.bits = ::isnan(value) ? static_cast<std::uint16_t>(((float_bits(value) >> 16) & 0x8000u) | 0x7e00u)
                               : ::__half_as_ushort(::__float2half_rn(value));
  return result;
}
template <>
__host__ __device__ __forceinline__ opgen::bfloat16 narrow<opgen::bfloat16>(float value) {
  opgen::bfloat16 result;
  result.bits = ::isnan(value) ? static_cast<std::uint16_t>((float_bits(value) >> 16) | 0x40u)
                               : ::__bfloat16_as_ushort(::__float2bfloat16_rn(value));
  return result;
}
// float8: saturating to the largest finite value, as ONNX's Cast with saturate=1. NaN keeps
// its sign, 0x7f or 0xff as on the CPU.
__host__ __device__ __forceinline__ unsigned char float8_nan(float value) {
  return static_cast<unsigned char>(::signbit(value) ? 0xff : 0x7f);
}
template <>
__host__ __device__ __forceinline__ opgen::float8e4m3fn narrow<opgen::float8e4m3fn>(float value) {
  opgen::float8e4m3fn result;
  result.bits = ::isnan(value) ? float8_nan(value) : ::__nv_cvt_float_to_fp8(value, ::__NV_SATFINITE, ::__NV_E4M3);
  return result;
}
template <>
__host__ __device__ __forceinline__ opgen::float8e5m2 narrow<opgen::float8e5m2>(float value) {
  opgen::float8e5m2 result;
  result.bits = ::isnan(value) ? float8_nan(value) : ::__nv_cvt_float_to_fp8(value, ::__NV_SATFINITE, ::__NV_E5M2);
  return result;
}

// Flags item `index` of a DeviceFlag (the smallest flagged is read back).
__device__ __forceinline__ void flag(long long* flag, long long index) { ::atomicMin(flag, index); }

// `value` of every thread of the block combined (a power-of-two blockDim.x of shared slots);
// every thread gets the result, and `shared` may be reused after.
template <typename T, typename Combine>
__device__ T block_reduce(T value, T* shared, Combine combine) {
  shared[::threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = ::blockDim.x / 2; half > 0; half /= 2) {
    if (::threadIdx.x < half) shared[::threadIdx.x] = combine(shared[::threadIdx.x], shared[::threadIdx.x + half]);
    __syncthreads();
  }
  const T result = shared[0];
  __syncthreads();
  return result;
}

// A grid-stride loop over items: `for (int64_t i = first_item(); i < n; i += item_stride())`.
__device__ __forceinline__ int64_t first_item() {
  return static_cast<int64_t>(::blockIdx.x) * ::blockDim.x + ::threadIdx.x;
}
__device__ __forceinline__ int64_t item_stride() { return static_cast<int64_t>(::gridDim.x) * ::blockDim.x; }

}  // namespace opgen::cuda
#endif
