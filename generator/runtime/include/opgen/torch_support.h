// What the native PyTorch registrations (<op>_torch.cc) share: PyTorch's stable ABI
// (torch/csrc/stable, a C ABI that keeps working across torch releases from 2.10 on) adapted
// to the kernel API of opgen/runtime.h.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <sys/mman.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <tuple>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "opgen/runtime.h"
#include "opgen/shape_rule.h"

namespace opgen::torch_support {

using Tensor = torch::stable::Tensor;
using ScalarType = torch::headeronly::ScalarType;

template <typename T>
constexpr ScalarType scalar_type_of();
template <>
constexpr ScalarType scalar_type_of<float>() { return ScalarType::Float; }
template <>
constexpr ScalarType scalar_type_of<double>() { return ScalarType::Double; }
template <>
constexpr ScalarType scalar_type_of<opgen::float16>() { return ScalarType::Half; }
template <>
constexpr ScalarType scalar_type_of<opgen::bfloat16>() { return ScalarType::BFloat16; }
template <>
constexpr ScalarType scalar_type_of<int8_t>() { return ScalarType::Char; }
template <>
constexpr ScalarType scalar_type_of<int16_t>() { return ScalarType::Short; }
template <>
constexpr ScalarType scalar_type_of<int32_t>() { return ScalarType::Int; }
template <>
constexpr ScalarType scalar_type_of<int64_t>() { return ScalarType::Long; }
template <>
constexpr ScalarType scalar_type_of<uint8_t>() { return ScalarType::Byte; }
template <>
constexpr ScalarType scalar_type_of<bool>() { return ScalarType::Bool; }

template <typename T>
bool has_dtype(const Tensor& tensor) {
  return tensor.scalar_type() == scalar_type_of<T>();
}
template <typename T>
bool has_dtype(const std::optional<Tensor>& tensor) {
  return !tensor.has_value() || has_dtype<T>(*tensor);
}

// A dtype as the other runtimes' messages spell it (numpy's names), for error messages only.
inline std::string dtype_name(const Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Half: return "float16";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Char: return "int8";
    case ScalarType::Short: return "int16";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    case ScalarType::Byte: return "uint8";
    case ScalarType::Bool: return "bool";
    case ScalarType::ComplexFloat: return "complex64";
    case ScalarType::ComplexDouble: return "complex128";
    case ScalarType::ComplexHalf: return "complex32";
    default: {  // as torch names them: UInt16 is torch.uint16, Float8_e4m3fn torch.float8_e4m3fn
      std::string name = torch::headeronly::toString(tensor.scalar_type());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return name;
    }
  }
}
inline std::string dtype_name(const std::optional<Tensor>& tensor) {
  return tensor.has_value() ? dtype_name(*tensor) : std::string();
}

// Only CPU tensors reach the kernels (the op registers a CPU kernel only), but a strided or
// non-dense view may: the kernels read dense row-major data, so such an input is copied.
// A failed call into PyTorch reaches us without PyTorch's message (the stable ABI of 2.10 has
// no way to read it): what failed is said here, naming the op and the tensor.
[[noreturn]] inline void fail_allocation(const char* op, const char* what, const opgen::Shape& shape,
                                         int64_t element_size, const char* doing) {
  int64_t elements = 1;
  bool fits = true;
  for (int64_t d : shape) fits = fits && !__builtin_mul_overflow(elements, d, &elements);
  int64_t bytes = 0;
  fits = fits && !__builtin_mul_overflow(elements, element_size, &bytes);
  throw std::runtime_error(std::string(op) + ": cannot " + doing + " " + what + " of shape " +
                           opgen::shape_to_string(shape) + " (" +
                           (fits ? std::to_string(bytes) + " bytes" : "more bytes than int64 holds") +
                           ")");
}

inline opgen::Shape shape_of(const Tensor& tensor);

inline Tensor dense(const Tensor& tensor, const char* op, const char* what) {
  if (tensor.is_contiguous()) return tensor;
  try {
    return torch::stable::contiguous(tensor);
  } catch (const std::runtime_error&) {
    fail_allocation(op, what, shape_of(tensor), static_cast<int64_t>(tensor.element_size()),
                    "make a dense copy of");
  }
}
inline std::optional<Tensor> dense(const std::optional<Tensor>& tensor, const char* op, const char* what) {
  if (!tensor.has_value()) return std::nullopt;
  return dense(*tensor, op, what);
}

inline opgen::Shape shape_of(const Tensor& tensor) {
  const auto sizes = tensor.sizes();
  return opgen::Shape(sizes.begin(), sizes.end());
}
inline opgen::Shape shape_of(const std::optional<Tensor>& tensor) {
  return tensor.has_value() ? shape_of(*tensor) : opgen::Shape{};
}

// Untyped pointers cast here: the typed accessors exist only for PyTorch's own C++ types.
template <typename T>
const T* data(const Tensor& tensor, opgen::AlignedCopies& aligned) {
  return aligned(static_cast<const T*>(tensor.const_data_ptr()), [&] { return tensor.numel(); });
}
template <typename T>
const T* data(const std::optional<Tensor>& tensor, opgen::AlignedCopies& aligned) {
  return tensor.has_value() ? data<T>(*tensor, aligned) : nullptr;
}

// A large buffer fresh from the allocator is new pages, faulted in one 4 KiB page at a time as
// the kernel writes it (about 40% of a simple op's time at 40 MB). Asking for transparent huge
// pages, as numpy does for its large arrays (PyTorch does with THP_MEM_ALLOC_ENABLE=1), faults
// it in 2 MiB at a time. Advice only: it changes no data, and a kernel without THP ignores it.
inline void advise_huge_pages(const Tensor& tensor) {
  constexpr uintptr_t kHugePage = uintptr_t{1} << 21;
  const size_t bytes = static_cast<size_t>(tensor.numel()) * tensor.element_size();
  if (bytes < 2 * kHugePage) return;
  const auto begin = reinterpret_cast<uintptr_t>(tensor.mutable_data_ptr());
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (begin + bytes) & ~(kHugePage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

// A new dense CPU tensor (aoti_torch_empty_strided: no trip through the dispatcher, which
// torch::stable::empty takes; a microsecond per output on small tensors).
inline Tensor empty(const opgen::Shape& shape, ScalarType dtype, const char* op, const char* what) {
  // The shape rule checked that the sizes fit int64 (opgen::check_extent), so these strides do.
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    if (shape[i] > 1 && __builtin_mul_overflow(stride, shape[i], &stride)) {
      opgen::fail(std::string(op) + ": " + what + " has shape " + opgen::shape_to_string(shape) +
                  ", whose size overflows int64");
    }
  }
  int32_t dtype_code = 0;
  int64_t element_size = 0;
  switch (dtype) {
    case ScalarType::Float: dtype_code = aoti_torch_dtype_float32(); element_size = 4; break;
    case ScalarType::Double: dtype_code = aoti_torch_dtype_float64(); element_size = 8; break;
    case ScalarType::Half: dtype_code = aoti_torch_dtype_float16(); element_size = 2; break;
    case ScalarType::BFloat16: dtype_code = aoti_torch_dtype_bfloat16(); element_size = 2; break;
    case ScalarType::Char: dtype_code = aoti_torch_dtype_int8(); element_size = 1; break;
    case ScalarType::Short: dtype_code = aoti_torch_dtype_int16(); element_size = 2; break;
    case ScalarType::Int: dtype_code = aoti_torch_dtype_int32(); element_size = 4; break;
    case ScalarType::Long: dtype_code = aoti_torch_dtype_int64(); element_size = 8; break;
    case ScalarType::Byte: dtype_code = aoti_torch_dtype_uint8(); element_size = 1; break;
    case ScalarType::Bool: dtype_code = aoti_torch_dtype_bool(); element_size = 1; break;
    default: opgen::fail("opgen: no output dtype " + std::string(torch::headeronly::toString(dtype)));
  }
  AtenTensorHandle handle = nullptr;
  if (aoti_torch_empty_strided(static_cast<int64_t>(shape.size()), shape.data(), strides.data(),
                               dtype_code, aoti_torch_device_type_cpu(), 0, &handle) != AOTI_TORCH_SUCCESS) {
    fail_allocation(op, what, shape, element_size, "allocate");
  }
  Tensor tensor(handle);
  advise_huge_pages(tensor);
  return tensor;
}
template <typename T>
Tensor empty(const opgen::Shape& shape, const char* op, const char* what) {
  return empty(shape, scalar_type_of<T>(), op, what);
}
template <typename T>
T* mutable_data(const Tensor& tensor) {
  return static_cast<T*>(tensor.mutable_data_ptr());
}

// An output data-dependent in size: created when the kernel allocates it.
template <typename T>
class LateOutput {
 public:
  LateOutput(const char* op, const char* what) : op_(op), what_(what) {}
  T* allocate(const opgen::Shape& shape) {
    opgen::check_extent(op_, what_, shape);  // the kernel's shape: unchecked by the rule
    tensor_ = empty<T>(shape, op_, what_);
    return mutable_data<T>(*tensor_);
  }
  Tensor take() { return std::move(*tensor_); }

 private:
  const char* op_;
  const char* what_;
  std::optional<Tensor> tensor_;
};

// PyTorch's intra-op thread pool (at::parallel_for). The work of one item is taken to be
// proportional to the elements the op touches over the number of items, so that a call on a
// few elements stays on the calling thread (handing work to the pool costs microseconds).
class ParallelContext final : public opgen::Context {
 public:
  explicit ParallelContext(int64_t elements) : elements_(elements) {}

  void parallel_for(int64_t total, const RangeFn& fn) const override {
    if (total <= 0) return;
    const int64_t per_item = std::max<int64_t>(1, elements_ / total);
    const int64_t grain = std::max<int64_t>(1, kElementsPerTask / per_item);
    if (total <= grain) {
      fn(0, total);
      return;
    }
    // The callback crosses PyTorch's C ABI: an exception must not, so it is kept and rethrown.
    std::exception_ptr error;
    std::mutex mutex;
    torch::stable::parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
      try {
        fn(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
      }
    });
    if (error) std::rethrow_exception(error);
  }

 private:
  static constexpr int64_t kElementsPerTask = 32768;  // at::internal::GRAIN_SIZE
  int64_t elements_;
};

// ---- The boxed calling convention: the dispatcher hands a kernel a stack of StableIValues
// holding the schema's arguments, and takes the outputs back from its start.

// An argument taken from its stack slot (the slot's ownership passes to the result).
template <typename T>
struct Take {
  static T from(StableIValue value) { return torch::stable::detail::to<T>(value); }
};
// Strings are read here: torch 2.13's own conversion (ToImpl<std::string>, which TORCH_BOX
// uses) copies a string argument into a std::string it never frees, a leak on every call.
template <>
struct Take<std::string> {
  static std::string from(StableIValue value) {
    const auto handle = torch::stable::detail::to<StringHandle>(value);
    size_t length = 0;
    const char* data = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(torch_string_length(handle, &length));
    STABLE_TORCH_ERROR_CODE_CHECK(torch_string_c_str(handle, &data));
    std::string text(data, length);
    STABLE_TORCH_ERROR_CODE_CHECK(torch_delete_string(handle));
    return text;
  }
};
template <>
struct Take<std::vector<std::string>> {
  static std::vector<std::string> from(StableIValue value) {
    const auto list = torch::stable::detail::to<StableListHandle>(value);
    size_t size = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(torch_list_size(list, &size));
    std::vector<std::string> texts;
    texts.reserve(size);
    for (size_t i = 0; i < size; ++i) {
      StableIValue element;
      STABLE_TORCH_ERROR_CODE_CHECK(torch_list_get_item(list, i, &element));
      texts.push_back(Take<std::string>::from(element));
    }
    STABLE_TORCH_ERROR_CODE_CHECK(torch_delete_list(list));
    return texts;
  }
};
template <>
struct Take<std::optional<std::vector<std::string>>> {
  static std::optional<std::vector<std::string>> from(StableIValue value) {
    // None is a null pointer, anything else a pointer to the value's slot, which we free (as
    // ToImpl<std::optional<T>> does for the targeted ABI version).
    auto* slot = torch::stable::detail::to<StableIValue*>(value);
    if (slot == nullptr) return std::nullopt;
    std::vector<std::string> texts = Take<std::vector<std::string>>::from(*slot);
    delete slot;
    return texts;
  }
};
template <typename T>
T take(StableIValue value) {
  return Take<T>::from(value);
}

inline void check_arity(const char* op, uint64_t args, uint64_t want_args, uint64_t outputs,
                        uint64_t want_outputs) {
  if (args != want_args || outputs != want_outputs) {
    opgen::fail(std::string(op) + ": called with " + std::to_string(args) + " arguments and " +
                std::to_string(outputs) + " outputs; its schema has " +
                std::to_string(want_args) + " and " + std::to_string(want_outputs));
  }
}

inline void put(StableIValue* stack, const Tensor& output) {
  stack[0] = torch::stable::detail::from(output);
}
template <typename... Outputs>
void put(StableIValue* stack, const std::tuple<Outputs...>& outputs) {
  size_t index = 0;
  std::apply([&](const auto&... output) { ((stack[index++] = torch::stable::detail::from(output)), ...); },
             outputs);
}

// Registration runs while the library loads (static initializers): an exception there would
// end the process (std::terminate), so a failure is reported on stderr and the op left out.
// It happens when a second copy of a library defines the same ops in one process.
using Library = torch::stable::detail::StableLibrary;

inline bool define(Library& library, const char* schema, const char* op) noexcept {
  try {
    library.def(schema);
    return true;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "opgen: %s was not registered by this library: %s\n", op, error.what());
    return false;
  }
}

inline void implement(Library& library, const char* name, void (*kernel)(StableIValue*, uint64_t, uint64_t),
                      const char* op) noexcept {
  try {
    library.impl(name, kernel);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "opgen: %s's CPU kernel was not registered by this library: %s\n", op,
                 error.what());
  }
}

inline int64_t numel(const opgen::Shape& shape) {
  const int64_t count = opgen::checked_numel(shape);
  return count < 0 ? 0 : count;
}

}  // namespace opgen::torch_support
