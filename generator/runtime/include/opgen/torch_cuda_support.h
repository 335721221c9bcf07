// What the native PyTorch CUDA registrations (<op>_torch_cuda.cc) share: the call's device
// (every tensor on one CUDA device, current under a device guard), PyTorch's current stream on
// it, and outputs allocated there. Stable ABI only, as torch_support.h: built with USE_CUDA,
// which declares aoti_torch_get_current_cuda_stream. A library of these does not load into a
// CPU-only torch, so it is a library of its own.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "opgen/cuda.h"
#include "opgen/torch_support.h"

namespace opgen::torch_cuda {

using opgen::torch_support::Tensor;

// The device of one call: its inputs' device, which must be one CUDA device. (The dispatcher
// calls the CUDA kernel when any input is on a GPU: a CPU tensor among them arrives here too.)
class CallDevice {
 public:
  explicit CallDevice(const char* op) : op_(op) {}

  void add(const Tensor& tensor, const char* name) {
    int32_t type = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(::aoti_torch_get_device_type(tensor.get(), &type));
    const bool cuda = type == ::aoti_torch_device_type_cuda();
    const int32_t index = cuda ? tensor.get_device_index() : -1;
    inputs_.push_back({name, cuda, index,
                       cuda ? "cuda:" + std::to_string(index) : opgen::torch_support::device_name(tensor)});
  }
  void add(const std::optional<Tensor>& tensor, const char* name) {
    if (tensor.has_value()) add(*tensor, name);
  }
  void add(const std::vector<Tensor>& tensors, const char* name) {
    for (const Tensor& tensor : tensors) add(tensor, name);
  }

  // Checks that every input is on the first CUDA input's device, makes that device current
  // (until the call returns) and reads its current stream.
  opgen::cuda::Context enter() {
    const Input* first = nullptr;
    for (const Input& input : inputs_) {
      if (input.cuda) {
        first = &input;
        break;
      }
    }
    if (first == nullptr) opgen::fail(std::string(op_) + ": no input on a CUDA device");
    for (const Input& input : inputs_) {
      if (!input.cuda || input.index != first->index) {
        opgen::fail(std::string(op_) + ": input '" + input.name + "' is on " + input.where +
                    " and input '" + first->name + "' on " + first->where +
                    ": the inputs must be on one device");
      }
    }
    index_ = first->index;
    guard_.emplace(index_);
    void* stream = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(::aoti_torch_get_current_cuda_stream(index_, &stream));
    return opgen::cuda::Context(op_, static_cast<::cudaStream_t>(stream), index_);
  }

  // A new dense tensor on the call's device (after enter()).
  template <typename T>
  Tensor empty(const opgen::Shape& shape, const char* op, const char* what) const {
    return opgen::torch_support::empty(shape, opgen::torch_support::scalar_type_of<T>(), op, what,
                                       ::aoti_torch_device_type_cuda(), index_);
  }

 private:
  struct Input {
    const char* name;
    bool cuda;
    int32_t index;
    std::string where;
  };
  const char* op_;
  std::vector<Input> inputs_;
  int32_t index_ = -1;
  std::optional<torch::stable::accelerator::DeviceGuard> guard_;
};

// Device pointers go to the kernel as they are: no host copy can realign them. PyTorch's
// allocator aligns every tensor it makes; a view at an odd offset is refused by name.
template <typename T>
const T* data(const Tensor& tensor, const char* op, const char* what) {
  const void* pointer = tensor.const_data_ptr();
  if (reinterpret_cast<std::uintptr_t>(pointer) % alignof(T) != 0) {
    opgen::fail(std::string(op) + ": " + what + " starts at a device address not aligned for its dtype");
  }
  return static_cast<const T*>(pointer);
}
template <typename T>
const T* data(const std::optional<Tensor>& tensor, const char* op, const char* what) {
  return tensor.has_value() ? data<T>(*tensor, op, what) : nullptr;
}

// One op's CUDA kernels, held for the life of the library (a static object per op): the op's,
// and the op below its Autograd key's where it has one. PyTorch's debug info names this
// library's file and the op's source, as the CPU library's registrations do.
class Registration {
 public:
  Registration(const char* ns, const char* op_type, const char* name,
               opgen::torch_support::BoxedKernel kernel, const char* below_name,
               opgen::torch_support::BoxedKernel below_kernel, const char* source, uint32_t line,
               const void* anchor)
      : file_(opgen::torch_support::library_file(anchor) + ", " + source) {
    using Library = opgen::torch_support::Library;
    cuda_ = std::make_unique<Library>(Library::Kind::IMPL, ns, "CUDA", file_.c_str(), line);
    opgen::torch_support::implement(*cuda_, name, kernel, op_type, "CUDA");
    if (below_name != nullptr) {
      opgen::torch_support::implement(*cuda_, below_name, below_kernel, op_type, "CUDA");
    }
  }

 private:
  std::string file_;  // PyTorch keeps a pointer to it: declared before the library
  std::unique_ptr<opgen::torch_support::Library> cuda_;
};

}  // namespace opgen::torch_cuda
