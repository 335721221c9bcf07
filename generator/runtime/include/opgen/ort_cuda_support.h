// What the ONNX Runtime CUDA kernels (<op>_ort_cuda.cc) share: ONNX Runtime's compute stream
// and device for a call, and its device buffers as the kernel's views. ONNX Runtime's CUDA
// provider hands an op placed on it (GetExecutionProviderType) its inputs and outputs in
// device memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "opgen/cuda.h"
#include "opgen/ort_support.h"

namespace opgen::ort_cuda {

// The kernel's context: ONNX Runtime's compute stream, and the device current on the thread
// ONNX Runtime runs the node on (the provider's).
inline opgen::cuda::Context context(const Ort::KernelContext& kernel_context, const char* op) {
  void* stream = kernel_context.GetGPUComputeStream();
  int device = 0;
  opgen::cuda::check(::cudaGetDevice(&device), op, "reading the current CUDA device");
  return opgen::cuda::Context(op, static_cast<::cudaStream_t>(stream), device);
}

// Device pointers go to the kernel as they are: no host copy can realign them (ONNX Runtime's
// CUDA allocator aligns every buffer; anything else is refused by name).
template <typename T>
const T* data(const Ort::ConstValue& value, const char* op, const char* what) {
  const void* pointer = value.GetTensorRawData();
  if (reinterpret_cast<std::uintptr_t>(pointer) % alignof(T) != 0) {
    opgen::fail(std::string(op) + ": " + what + " starts at a device address not aligned for its dtype");
  }
  return static_cast<const T*>(pointer);
}

template <typename T>
T* output_data(Ort::UnownedValue& value, const char* op, const char* what) {
  if (static_cast<const OrtValue*>(value) == nullptr) {
    opgen::fail(std::string(op) + ": ONNX Runtime gave no buffer for " + what);
  }
  return opgen::ort::mutable_data<T>(value);
}

// Where the kernel writes a value of a variadic output: in the tensor, or where the node leaves
// the value out (names it ""), into device scratch that nothing reads, freed on the stream after
// the kernel's work when `keep` goes.
template <typename T>
T* variadic_output_data(Ort::UnownedValue& value, const Ort::KernelContext& kernel_context,
                        opgen::AlignedCopies& keep, const opgen::Shape& shape, const char* op) {
  if (static_cast<const OrtValue*>(value) != nullptr) return opgen::ort::mutable_data<T>(value);
  const auto scratch = std::make_shared<opgen::cuda::DeviceScratch<T>>(
      context(kernel_context, op), static_cast<size_t>(opgen::element_count(shape)), "a value the node leaves out");
  keep.keep(scratch);
  return scratch->data();
}

}  // namespace opgen::ort_cuda
