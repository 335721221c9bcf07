// What the native PyTorch registrations (<op>_torch.cc) share: PyTorch's stable ABI
// (torch/csrc/stable, a C ABI that keeps working across torch releases from 2.10 on) adapted
// to the kernel API of opgen/runtime.h.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "opgen/runtime.h"
#include "opgen/shape_rule.h"

// Built against the headers of any torch from 2.10 on (the GPU machine's is 2.11): what 2.13's
// headers name and older ones lack, spelled as 2.13 spells it for the 2.10 ABI targeted.
#ifndef TORCH_VERSION_2_13_0
#define TORCH_VERSION_2_13_0 (((0ULL + 2) << 56) | ((0ULL + 13) << 48))
#endif
#ifndef STABLE_TORCH_ERROR_CODE_CHECK
#define STABLE_TORCH_ERROR_CODE_CHECK(call) TORCH_ERROR_CODE_CHECK(call)
#endif

#if TORCH_FEATURE_VERSION < TORCH_VERSION_2_13_0
// torch 2.13 and later keep the message of the last error a stable-ABI call returned; the
// releases before (down to the 2.10 targeted) lack the function: a weak reference, null there.
extern "C" __attribute__((weak, visibility("default"))) const char*
torch_exception_get_what_without_backtrace();
#endif

namespace opgen::torch_support {

// The message of the last error a stable-ABI call returned, when the running torch keeps it.
inline const char* last_torch_error() {
#if TORCH_FEATURE_VERSION < TORCH_VERSION_2_13_0
  if (torch_exception_get_what_without_backtrace == nullptr) return nullptr;
#endif
  return torch_exception_get_what_without_backtrace();
}

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
template <>
constexpr ScalarType scalar_type_of<uint16_t>() { return ScalarType::UInt16; }
template <>
constexpr ScalarType scalar_type_of<uint32_t>() { return ScalarType::UInt32; }
template <>
constexpr ScalarType scalar_type_of<uint64_t>() { return ScalarType::UInt64; }
template <>
constexpr ScalarType scalar_type_of<std::complex<float>>() { return ScalarType::ComplexFloat; }
template <>
constexpr ScalarType scalar_type_of<std::complex<double>>() { return ScalarType::ComplexDouble; }
template <>
constexpr ScalarType scalar_type_of<opgen::float8e4m3fn>() { return ScalarType::Float8_e4m3fn; }
template <>
constexpr ScalarType scalar_type_of<opgen::float8e4m3fnuz>() { return ScalarType::Float8_e4m3fnuz; }
template <>
constexpr ScalarType scalar_type_of<opgen::float8e5m2>() { return ScalarType::Float8_e5m2; }
template <>
constexpr ScalarType scalar_type_of<opgen::float8e5m2fnuz>() { return ScalarType::Float8_e5m2fnuz; }

template <typename T>
bool has_dtype(const Tensor& tensor) {
  return tensor.scalar_type() == scalar_type_of<T>();
}
template <typename T>
bool has_dtype(const std::optional<Tensor>& tensor) {
  return !tensor.has_value() || has_dtype<T>(*tensor);
}

// A variadic input's values (Tensor[]): all of the kernel's dtype.
template <typename T>
bool has_dtype(const std::vector<Tensor>& tensors) {
  for (const Tensor& tensor : tensors) {
    if (!has_dtype<T>(tensor)) return false;
  }
  return true;
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
    case ScalarType::UInt16: return "uint16";
    case ScalarType::UInt32: return "uint32";
    case ScalarType::UInt64: return "uint64";
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
// A variadic input's dtypes, as the other runtimes' messages spell them: "[float32, int64]".
inline std::string dtype_name(const std::vector<Tensor>& tensors) {
  std::string names;
  for (const Tensor& tensor : tensors) names += (names.empty() ? "" : ", ") + dtype_name(tensor);
  return "[" + names + "]";
}

// A dtype argument (ScalarType) as ONNX's number of it (TensorProto.DataType), which an
// attribute choosing a dtype holds in every runtime; 0 (UNDEFINED, which no op allows: the
// op's check of the attribute names it) for one ONNX lacks.
inline int64_t onnx_dtype(ScalarType type) {
  switch (type) {
    case ScalarType::Float: return 1;
    case ScalarType::Byte: return 2;
    case ScalarType::Char: return 3;
    case ScalarType::UInt16: return 4;
    case ScalarType::Short: return 5;
    case ScalarType::Int: return 6;
    case ScalarType::Long: return 7;
    case ScalarType::Bool: return 9;
    case ScalarType::Half: return 10;
    case ScalarType::Double: return 11;
    case ScalarType::UInt32: return 12;
    case ScalarType::UInt64: return 13;
    case ScalarType::ComplexFloat: return 14;
    case ScalarType::ComplexDouble: return 15;
    case ScalarType::BFloat16: return 16;
    case ScalarType::Float8_e4m3fn: return 17;
    case ScalarType::Float8_e4m3fnuz: return 18;
    case ScalarType::Float8_e5m2: return 19;
    case ScalarType::Float8_e5m2fnuz: return 20;
    case ScalarType::Float8_e8m0fnu: return 24;
    default: return 0;
  }
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

inline std::vector<Tensor> dense(const std::vector<Tensor>& tensors, const char* op, const char* what) {
  std::vector<Tensor> result;
  result.reserve(tensors.size());
  for (const Tensor& tensor : tensors) result.push_back(dense(tensor, op, what));
  return result;
}

inline opgen::Shape shape_of(const Tensor& tensor) {
  const auto sizes = tensor.sizes();
  return opgen::Shape(sizes.begin(), sizes.end());
}
inline opgen::Shape shape_of(const std::optional<Tensor>& tensor) {
  return tensor.has_value() ? shape_of(*tensor) : opgen::Shape{};
}
inline std::vector<opgen::Shape> shape_of(const std::vector<Tensor>& tensors) {
  std::vector<opgen::Shape> shapes;
  shapes.reserve(tensors.size());
  for (const Tensor& tensor : tensors) shapes.push_back(shape_of(tensor));
  return shapes;
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

// A new dense tensor, on the CPU unless told (aoti_torch_empty_strided: no trip through the
// dispatcher, which torch::stable::empty takes; a microsecond per output on small tensors).
inline Tensor empty(const opgen::Shape& shape, ScalarType dtype, const char* op, const char* what,
                    int32_t device_type = aoti_torch_device_type_cpu(), int32_t device_index = 0) {
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
    case ScalarType::UInt16: dtype_code = aoti_torch_dtype_uint16(); element_size = 2; break;
    case ScalarType::UInt32: dtype_code = aoti_torch_dtype_uint32(); element_size = 4; break;
    case ScalarType::UInt64: dtype_code = aoti_torch_dtype_uint64(); element_size = 8; break;
    case ScalarType::ComplexFloat: dtype_code = aoti_torch_dtype_complex64(); element_size = 8; break;
    case ScalarType::ComplexDouble: dtype_code = aoti_torch_dtype_complex128(); element_size = 16; break;
    case ScalarType::Float8_e4m3fn: dtype_code = aoti_torch_dtype_float8_e4m3fn(); element_size = 1; break;
    case ScalarType::Float8_e4m3fnuz: dtype_code = aoti_torch_dtype_float8_e4m3fnuz(); element_size = 1; break;
    case ScalarType::Float8_e5m2: dtype_code = aoti_torch_dtype_float8_e5m2(); element_size = 1; break;
    case ScalarType::Float8_e5m2fnuz: dtype_code = aoti_torch_dtype_float8_e5m2fnuz(); element_size = 1; break;
    default: opgen::fail("opgen: no output dtype " + std::string(torch::headeronly::toString(dtype)));
  }
  AtenTensorHandle handle = nullptr;
  if (aoti_torch_empty_strided(static_cast<int64_t>(shape.size()), shape.data(), strides.data(),
                               dtype_code, device_type, device_index, &handle) != AOTI_TORCH_SUCCESS) {
    fail_allocation(op, what, shape, element_size, "allocate");
  }
  Tensor tensor(handle);
  if (device_type == aoti_torch_device_type_cpu()) advise_huge_pages(tensor);
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
    const int64_t grain = opgen::items_per_task(total, elements_);
    if (total <= grain) {
      fn(0, total);
      return;
    }
    // The callback crosses PyTorch's C ABI: an exception must not, so it is kept and rethrown:
    // the one of the earliest range, so that a call fails with the same message every time.
    std::exception_ptr error;
    int64_t error_begin = INT64_MAX;
    std::mutex mutex;
    torch::stable::parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
      try {
        fn(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (begin < error_begin) {
          error = std::current_exception();
          error_begin = begin;
        }
      }
    });
    if (error) std::rethrow_exception(error);
  }

 private:
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
// A variadic output's values (Tensor[]): one stack slot, a list.
inline void put(StableIValue* stack, const std::vector<Tensor>& output) {
  stack[0] = torch::stable::detail::from(output);
}
template <typename... Outputs>
void put(StableIValue* stack, const std::tuple<Outputs...>& outputs) {
  size_t index = 0;
  std::apply([&](const auto&... output) { ((stack[index++] = torch::stable::detail::from(output)), ...); },
             outputs);
}

// ---- Registration. It runs while the library loads (static initializers): an exception there
// would end the process (std::terminate), so a failure is reported on stderr and the op left
// out. It happens when something else defined the op's name first (another copy of this
// library, another library or package using the same name, a torch.library definition): the
// generated package then refuses to import (_support.bind_op), naming both.
using Library = torch::stable::detail::StableLibrary;
using BoxedKernel = void (*)(StableIValue*, uint64_t, uint64_t);

// What a failed registration says: PyTorch's message where the running torch keeps it (for a
// name defined twice, it names both registrations), else the stable ABI's.
inline const char* registration_error(const std::exception& error) noexcept {
  const char* what = last_torch_error();
  return what != nullptr && *what != '\0' ? what : error.what();
}

inline bool define(Library& library, const char* schema, const char* op) noexcept {
  try {
    library.def(schema);
    return true;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "opgen: %s was not registered by this library: %s\n", op,
                 registration_error(error));
    return false;
  }
}

inline void implement(Library& library, const char* name, BoxedKernel kernel, const char* op,
                      const char* key) noexcept {
  try {
    library.impl(name, kernel);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "opgen: %s's %s kernel was not registered by this library: %s\n", op, key,
                 registration_error(error));
  }
}

// The file of the shared library holding `address` (this library), resolved: the dynamic
// loader's name for it while the library loads.
inline std::string library_file(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "(an unknown library)";
  char resolved[PATH_MAX];
  return realpath(info.dli_fname, resolved) != nullptr ? std::string(resolved)
                                                       : std::string(info.dli_fname);
}

// One op's registrations, held for the life of the library (a static object per op): its
// schema and CPU kernel; for an op through which a gradient can flow, also the op below the
// Autograd key (same schema, same CPU kernel) and the Autograd kernel (see NoGradientHere).
// PyTorch's debug info for them ("registered at <file>:<line>", also in its
// duplicate-definition errors) names this library's file and the op's source, "<library>,
// <op>_torch.cc": the generated package reads it to check that this library, not something
// else, defined the op (_support.bind_op).
class Registration {
 public:
  struct Op {
    const char* op_type;  // for messages
    const char* name;
    const char* schema;  // name(arguments) -> results
    BoxedKernel cpu;
    const char* below_name;  // null: no gradient can flow, no Autograd kernel
    const char* below_schema;
    BoxedKernel below_cpu;
    BoxedKernel autograd;
  };

  Registration(const char* ns, const Op& op, const char* source, uint32_t line, const void* anchor)
      : file_(library_file(anchor) + ", " + source) {
    const char* file = file_.c_str();
    using Kind = Library::Kind;
    definitions_ = std::make_unique<Library>(Kind::FRAGMENT, ns, nullptr, file, line);
    const bool defined = define(*definitions_, op.schema, op.op_type);
    const bool below_defined =
        defined && op.below_name != nullptr && define(*definitions_, op.below_schema, op.op_type);
    cpu_ = std::make_unique<Library>(Kind::IMPL, ns, "CPU", file, line);
    if (defined) implement(*cpu_, op.name, op.cpu, op.op_type, "CPU");
    if (below_defined) {
      implement(*cpu_, op.below_name, op.below_cpu, op.op_type, "CPU");
      autograd_ = std::make_unique<Library>(Kind::IMPL, ns, "Autograd", file, line);
      implement(*autograd_, op.name, op.autograd, op.op_type, "Autograd");
    }
  }

 private:
  std::string file_;  // PyTorch keeps a pointer to it: declared before the libraries
  std::unique_ptr<Library> definitions_;
  std::unique_ptr<Library> cpu_;
  std::unique_ptr<Library> autograd_;
};

// ---- Without the generated package: the op's own Autograd kernel.
//
// The generated Python package registers the op's Autograd kernel (its gradient formulas, or an
// error naming the definition) for every backend, which wins over this one; this one, which the
// library registers for the Autograd alias key, serves where the package is not imported: the
// library loaded alone (torch.ops.load_library, a C++ program). PyTorch's fallback there would
// let a gradient through the op come out as zeros (torch.func.grad, forward-mode AD) or as None
// (backward), with a warning at most. So a call through which a gradient could flow is an
// error naming the op; any other call goes on below the Autograd key, as PyTorch's fallback
// would go: to the op below the Autograd key, through the dispatcher (a direct call to the CPU
// kernel would skip what lies between: tensor subclasses and modes, functionalization, the
// lazy negation bit, torch.func's levels).
//
// PyTorch's stable ABI has no requires_grad query, so autograd is asked through the
// dispatcher: aten::_unpack_dual(t, 0) gives a tensor's tangent at the dual level (PyTorch has
// one: it refuses nested forward-AD levels) and its primal, a differentiable view of t, which
// has a grad_fn exactly when grad mode is on and t requires grad. Under
// torch.inference_mode() (or a C++ c10::InferenceMode) no Autograd kernel runs at all.

// The last exception the op below the Autograd key threw (see NoGradientHere::call_below).
inline std::exception_ptr& below_autograd_error() {
  thread_local std::exception_ptr error;
  return error;
}

// The CPU kernel of the op below the Autograd key: the op's own, its exception kept for the
// Autograd kernel (the dispatcher hands that kernel an error code only).
template <BoxedKernel Kernel>
void below_autograd_kernel(StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {
  try {
    Kernel(stack, num_args, num_outputs);
  } catch (...) {
    below_autograd_error() = std::current_exception();
    throw;
  }
}

// The op below the Autograd key of an op returning (Tensor, ..., Tensor[]): one flat Tensor[]
// of every output. torch 2.13's torch_call_dispatcher, through which the Autograd kernel calls
// it, converts an op's results from last to first against its schema's return types from first
// to last, which refuses (Tensor, Tensor[]) ("Expected Tensor but got GenericList"); one
// return converts right. The kernel runs on a stack of its own: it may have more outputs than
// the op below has slots.
template <BoxedKernel Kernel, size_t Singles>
void flat_below_autograd_kernel(StableIValue* stack, uint64_t num_args, uint64_t /*num_outputs*/) {
  std::vector<StableIValue> own(std::max<size_t>(num_args, Singles + 1));
  std::copy(stack, stack + num_args, own.begin());
  below_autograd_kernel<Kernel>(own.data(), num_args, Singles + 1);
  std::vector<Tensor> flat;
  for (size_t index = 0; index < Singles; ++index) flat.push_back(Take<Tensor>::from(own[index]));
  for (Tensor& value : Take<std::vector<Tensor>>::from(own[Singles])) flat.push_back(std::move(value));
  stack[0] = torch::stable::detail::from(flat);
}

// The Autograd kernel's results back from flat_below_autograd_kernel's one list: the single
// outputs, then the variadic output's values as one list.
inline void unflatten_outputs(StableIValue* stack, size_t singles) {
  std::vector<Tensor> flat = Take<std::vector<Tensor>>::from(stack[0]);
  std::vector<Tensor> values(std::make_move_iterator(flat.begin() + singles),
                             std::make_move_iterator(flat.end()));
  for (size_t index = 0; index < singles; ++index) stack[index] = torch::stable::detail::from(flat[index]);
  stack[singles] = torch::stable::detail::from(values);
}

inline std::string device_name(const Tensor& tensor) {
  int32_t type = 0;
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(tensor.get(), &type));
  if (type == aoti_torch_device_type_cuda()) return "cuda";
  if (type == aoti_torch_device_type_meta()) return "meta";
  if (type == aoti_torch_device_type_xpu()) return "xpu";
  if (type == aoti_torch_device_type_mps()) return "mps";
  if (type == aoti_torch_device_type_privateuse1()) return "privateuse1";
  return "device type " + std::to_string(type);
}

// Only floating-point and complex tensors can require grad or carry a tangent.
inline bool may_carry_gradient(const Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case ScalarType::Bool:
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:
    case ScalarType::Long:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64:
      return false;
    default:
      return true;
  }
}

enum class Gradient { none, reverse, forward };

// Whether autograd would track the op on this input: forward (it carries a tangent) or reverse
// (grad mode is on and it requires grad).
inline Gradient gradient_through(const Tensor& tensor) {
  using torch::stable::detail::from;
  using torch::stable::detail::to;
  std::array<StableIValue, 2> dual{from(tensor), from(int64_t{0})};
  STABLE_TORCH_ERROR_CODE_CHECK(
      torch_call_dispatcher("aten::_unpack_dual", "", dual.data(), TORCH_ABI_VERSION));
  const Tensor primal(to<AtenTensorHandle>(dual[0]));
  const Tensor tangent(to<AtenTensorHandle>(dual[1]));
  if (tangent.defined()) return Gradient::forward;
  if (!aoti_torch_grad_mode_is_enabled()) return Gradient::none;
  std::array<StableIValue, 1> leaf{from(primal)};
  STABLE_TORCH_ERROR_CODE_CHECK(
      torch_call_dispatcher("aten::is_leaf", "", leaf.data(), TORCH_ABI_VERSION));
  return to<bool>(leaf[0]) ? Gradient::none : Gradient::reverse;
}

// The checks of the Autograd kernel, input by input (the stack's arguments stay in place).
struct NoGradientHere {
  const char* op_type;         // as the kernels' messages begin
  const char* qualified_name;  // the PyTorch op
  const char* package;         // the generated package holding its Autograd kernel
  const char* forward_mode_message;
  const void* anchor;  // an address in this library, for its file's name

  void input(StableIValue value, const char* name) const {
    AtenTensorHandle copy = nullptr;  // a reference of our own: the stack keeps its own
    STABLE_TORCH_ERROR_CODE_CHECK(
        aoti_torch_new_tensor_handle(torch::stable::detail::to<AtenTensorHandle>(value), &copy));
    check(Tensor(copy), name);
  }
  void optional_input(StableIValue value, const char* name) const {
    const auto* slot = torch::stable::detail::to<StableIValue*>(value);  // null: None
    if (slot != nullptr) input(*slot, name);
  }
  // A variadic input (Tensor[]): the list and its items stay on the stack (torch_list_get_item
  // lends an item; whoever takes the list owns them), so each is checked through a copy.
  void variadic_input(StableIValue value, const char* name) const {
    const auto list = torch::stable::detail::to<StableListHandle>(value);
    size_t size = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(torch_list_size(list, &size));
    for (size_t i = 0; i < size; ++i) {
      StableIValue element;
      STABLE_TORCH_ERROR_CODE_CHECK(torch_list_get_item(list, i, &element));
      input(element, name);
    }
  }

  // Then calls the op below the Autograd key with the arguments on the stack (which it takes),
  // its outputs put back on the stack; its kernel's exception is rethrown as it was.
  void call_below(const char* below, StableIValue* stack) const {
    below_autograd_error() = nullptr;
    if (torch_call_dispatcher(below, "", stack, TORCH_ABI_VERSION) == AOTI_TORCH_SUCCESS) return;
    if (std::exception_ptr error = std::exchange(below_autograd_error(), nullptr)) {
      std::rethrow_exception(error);
    }
    const char* what = last_torch_error();
    throw std::runtime_error(
        std::string(op_type) + ": PyTorch failed to run " + below + ", the op below the Autograd key" +
        (what != nullptr && *what != '\0'
             ? std::string(": ") + what
             : std::string(what == nullptr ? " (torch 2.13 and later give the reason)"
                                           : " and gave no reason") +
                   " (fake tensors, as torch.compile and torch.export use, need the generated "
                   "package " + package + ", which registers the fake kernel)"));
  }

 private:
  void check(const Tensor& tensor, const char* name) const {
    int32_t device_type = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(tensor.get(), &device_type));
    // CUDA tensors go on below: to the op's CUDA kernel where its CUDA library is loaded, else
    // to the dispatcher's error naming the op and the CUDA backend.
    if (device_type != aoti_torch_device_type_cpu() && device_type != aoti_torch_device_type_cuda()) {
      opgen::fail(std::string(op_type) + ": input '" + name + "' is on " + device_name(tensor) +
                  ": " + library_file(anchor) +
                  " runs the op on the CPU and CUDA devices only (the fake kernel, for meta and "
                  "fake tensors, comes with the generated package " + package + ")");
    }
    if (!may_carry_gradient(tensor)) return;
    switch (gradient_through(tensor)) {
      case Gradient::none:
        return;
      case Gradient::forward:
        throw std::runtime_error(forward_mode_message);
      case Gradient::reverse:
        throw std::runtime_error(
            std::string(qualified_name) + ": no gradient flows through this op here: " +
            library_file(anchor) + " was loaded without its Python package " + package +
            ", which holds the op's Autograd kernel, and input '" + name +
            "' requires grad (import " + package +
            " for gradients; without them, call the op under torch.no_grad() or "
            "torch.inference_mode())");
    }
  }
};

}  // namespace opgen::torch_support
