// Adapters between ONNX Runtime's C++ API and the kernel API of opgen/runtime.h. Every entry
// point that ONNX Runtime calls goes through `guard`, so no C++ exception crosses the C ABI.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "onnxruntime_cxx_api.h"
#include "opgen/runtime.h"
#include "opgen/shape_rule.h"

namespace opgen::ort {

template <typename T>
struct OrtTypeOf {
  using type = T;
};
template <>
struct OrtTypeOf<opgen::float16> {
  using type = Ort::Float16_t;
};
template <>
struct OrtTypeOf<opgen::bfloat16> {
  using type = Ort::BFloat16_t;
};
template <>
struct OrtTypeOf<opgen::float8e4m3fn> {
  using type = Ort::Float8E4M3FN_t;
};
template <>
struct OrtTypeOf<opgen::float8e4m3fnuz> {
  using type = Ort::Float8E4M3FNUZ_t;
};
template <>
struct OrtTypeOf<opgen::float8e5m2> {
  using type = Ort::Float8E5M2_t;
};
template <>
struct OrtTypeOf<opgen::float8e5m2fnuz> {
  using type = Ort::Float8E5M2FNUZ_t;
};
static_assert(sizeof(Ort::Float8E4M3FN_t) == sizeof(opgen::float8e4m3fn), "float8 layout");
static_assert(sizeof(Ort::Float16_t) == sizeof(opgen::float16), "float16 layout");
static_assert(sizeof(Ort::BFloat16_t) == sizeof(opgen::bfloat16), "bfloat16 layout");

template <typename T>
constexpr ONNXTensorElementDataType element_type() {
  if constexpr (std::is_same_v<T, std::string>) {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING;
  } else if constexpr (std::is_same_v<T, opgen::int4>) {  // the C++ API has no type for them
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4;
  } else if constexpr (std::is_same_v<T, opgen::uint4>) {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4;
  } else {
    return Ort::TypeToTensorType<typename OrtTypeOf<T>::type>::type;
  }
}

// A string tensor's elements, copied out as bytes (embedded NULs kept, no encoding checked).
inline const std::string* strings_of(const Ort::ConstValue& value, opgen::AlignedCopies& copies) {
  const size_t count = value.GetTensorTypeAndShapeInfo().GetElementCount();
  std::string* strings = copies.strings(count);
  if (count == 0) return strings;
  const size_t bytes = value.GetStringTensorDataLength();
  std::vector<char> buffer(bytes + 1);  // + 1: a valid pointer when every string is empty
  std::vector<size_t> offsets(count);
  value.GetStringTensorContent(buffer.data(), bytes, offsets.data(), count);
  for (size_t i = 0; i < count; ++i) {
    const size_t end = i + 1 < count ? offsets[i + 1] : bytes;
    if (offsets[i] > end || end > bytes) opgen::fail("ONNX Runtime gave inconsistent string offsets");
    strings[i].assign(buffer.data() + offsets[i], end - offsets[i]);
  }
  return strings;
}

// A tensor's shape, read in place (API 24 and later): GetTensorTypeAndShapeInfo would allocate
// and free an info object and its dims on every call of every input.
inline opgen::Shape shape_of(const Ort::ConstValue& value) {
  ONNXTensorElementDataType element_type{};
  const int64_t* dims = nullptr;
  size_t rank = 0;
  Ort::ThrowOnError(Ort::GetApi().GetTensorElementTypeAndShapeDataReference(value, &element_type, &dims, &rank));
  return rank == 0 ? opgen::Shape{} : opgen::Shape(dims, dims + rank);
}

template <typename T>
const T* data(const Ort::ConstValue& value, opgen::AlignedCopies& aligned) {
  if constexpr (std::is_same_v<T, std::string>) {
    return strings_of(value, aligned);
  } else if constexpr (opgen::is_4bit<T>) {  // unpacked, one per byte
    const int64_t count = opgen::element_count(shape_of(value));
    T* values = aligned.scratch<T>(static_cast<size_t>(count));
    opgen::unpack_4bit(static_cast<const uint8_t*>(value.GetTensorRawData()), count, values);
    return values;
  } else {
    const T* data = reinterpret_cast<const T*>(value.GetTensorData<typename OrtTypeOf<T>::type>());
    return aligned(data, [&] { return value.GetTensorTypeAndShapeInfo().GetElementCount(); });
  }
}

template <typename T>
T* mutable_data(Ort::UnownedValue& value) {
  static_assert(!opgen::is_4bit<T> && !std::is_same_v<T, std::string>, "see output_data");
  return reinterpret_cast<T*>(value.GetTensorMutableData<typename OrtTypeOf<T>::type>());
}

// Where the kernel writes a value of a variadic output: in the tensor, or where the node leaves
// the value out (names it ""), into scratch that nothing reads.
template <typename T>
T* variadic_output_data(Ort::UnownedValue& value, opgen::AlignedCopies& copies, const opgen::Shape& shape) {
  if (static_cast<const OrtValue*>(value) == nullptr) {
    return copies.scratch<T>(static_cast<size_t>(opgen::element_count(shape)));
  }
  return mutable_data<T>(value);
}

// Where the kernel writes an output: in the tensor, or for strings and 4-bit integers in
// `copies` until store_output hands them to ONNX Runtime.
template <typename T>
T* output_data(Ort::UnownedValue& value, opgen::AlignedCopies& copies, const opgen::Shape& shape) {
  if constexpr (std::is_same_v<T, std::string>) {
    return copies.strings(static_cast<size_t>(opgen::element_count(shape)));
  } else if constexpr (opgen::is_4bit<T>) {
    return copies.scratch<T>(static_cast<size_t>(opgen::element_count(shape)));
  } else {
    return mutable_data<T>(value);
  }
}

// Writes a string output's elements into its tensor, byte for byte (FillStringTensor would cut
// each at its first NUL), and a 4-bit output's packed, two per byte. A no-op for other types.
template <typename T>
void store_output(Ort::UnownedValue& value, const opgen::TensorView<T>& view) {
  if constexpr (std::is_same_v<T, std::string>) {
    const int64_t count = opgen::element_count(view.shape);
    for (int64_t i = 0; i < count; ++i) {
      const std::string& text = view.data[i];
      char* buffer = nullptr;
      Ort::ThrowOnError(Ort::GetApi().GetResizedStringTensorElementBuffer(value, static_cast<size_t>(i), text.size(), &buffer));
      if (!text.empty()) std::memcpy(buffer, text.data(), text.size());
    }
  } else if constexpr (opgen::is_4bit<T>) {
    opgen::pack_4bit(view.data, opgen::element_count(view.shape), static_cast<uint8_t*>(value.GetTensorMutableRawData()));
  } else {
    (void)value;
    (void)view;
  }
}

// Runs fn and turns any exception into an ONNX Runtime status naming the op.
template <typename Fn>
OrtStatusPtr guard(const char* op, Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const opgen::Error& error) {
    return Ort::GetApi().CreateStatus(ORT_INVALID_ARGUMENT, error.what());
  } catch (const Ort::Exception& error) {
    return Ort::GetApi().CreateStatus(error.GetOrtErrorCode(),
                                      (std::string(op) + ": " + error.what()).c_str());
  } catch (const std::exception& error) {
    return Ort::GetApi().CreateStatus(ORT_RUNTIME_EXCEPTION,
                                      (std::string(op) + ": " + error.what()).c_str());
  } catch (...) {
    return Ort::GetApi().CreateStatus(ORT_RUNTIME_EXCEPTION,
                                      (std::string(op) + ": unknown exception").c_str());
  }
}

// A missing required attribute is an error naming the op; a missing optional one keeps the
// default already in the value.
inline void attribute_missing(const char* op, const char* name, bool required) {
  if (required) opgen::fail(std::string(op) + ": required attribute '" + name + "' is missing");
}

// The ONNX type names of attributes, as the ONNX checker spells them in its messages.
template <typename T>
constexpr const char* attribute_type_name() {
  if constexpr (std::is_same_v<T, float>) return "FLOAT";
  if constexpr (std::is_same_v<T, int64_t>) return "INT";
  if constexpr (std::is_same_v<T, std::string>) return "STRING";
  if constexpr (std::is_same_v<T, std::vector<float>>) return "FLOATS";
  if constexpr (std::is_same_v<T, std::vector<int64_t>>) return "INTS";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "STRINGS";
}

// What the node carries under `name`, as an ONNX type name, or nullptr when it carries nothing.
// ONNX Runtime's scalar getters fail alike for a missing attribute and for one of another type,
// and its list getters check no type at all (a FLOATS attribute read as INTS is an empty list),
// so each type is tried in turn, and a list counts only when it is not empty. Only called once
// the expected read failed or came back empty: never per run.
constexpr const char* kOtherAttribute =
    "an empty list, a GRAPH, a SPARSE_TENSOR, TENSORS or a TENSOR ONNX Runtime cannot read";

inline const char* attribute_type_found(const Ort::ConstKernelInfo& info, const char* name) {
  const auto readable = [](auto&& read) {
    try {
      read();
      return true;
    } catch (const Ort::Exception&) {
      return false;
    }
  };
  if (readable([&] { info.GetAttribute<int64_t>(name); })) return "INT";
  if (readable([&] { info.GetAttribute<float>(name); })) return "FLOAT";
  if (readable([&] { info.GetAttribute<std::string>(name); })) return "STRING";
  std::vector<int64_t> ints;
  if (!readable([&] { ints = info.GetAttributes<int64_t>(name); })) return nullptr;  // absent
  if (!ints.empty()) return "INTS";
  if (!info.GetAttributes<float>(name).empty()) return "FLOATS";
  if (!info.GetAttributes<std::string>(name).empty()) return "STRINGS";
  Ort::AllocatorWithDefaultOptions allocator;
  if (readable([&] { info.GetTensorAttribute(name, allocator); })) return "TENSOR";
  return kOtherAttribute;
}

[[noreturn]] inline void fail_attribute_type(const char* op, const char* name, const char* expected,
                                             const char* found) {
  opgen::fail(std::string(op) + ": attribute '" + name + "' must be of type " + expected + ", got " +
              found);
}

// An attribute that picks a type variable's dtype (TensorProto.DataType's number) must name
// the dtype of the kernel ONNX Runtime chose by the node's output types, or the kernel would
// compute another type in silence. They differ where the shape rule could not run at graph
// time (an input of unknown rank): ONNX Runtime's custom-op inference sets an output's type
// only with a shape, so ONNX Runtime fell back to the first kernel registered.
template <typename T>
void check_chosen_type(const char* op, const char* attribute, int64_t value) {
  const int64_t computed = static_cast<int64_t>(element_type<T>());
  if (value != computed) {
    opgen::fail(std::string(op) + ": attribute '" + attribute + "' names element type " +
                std::to_string(value) + ", but ONNX Runtime inferred element type " +
                std::to_string(computed) +
                " for the node's output (it could not run the shape rule: it cannot on an input "
                "of unknown rank, nor on a 0-d one, which it does not tell apart: give the "
                "model's inputs a known rank of at least 1)");
  }
}

// Reads a scalar attribute of a node (for the kernel); see attribute_missing. An attribute of
// the wrong type is an error, never the default in disguise: make_node(..., epsilon=1) makes
// an INT.
template <typename T>
void read_attribute(const Ort::ConstKernelInfo& info, const char* op, const char* name,
                    bool required, T& value) {
  try {
    value = info.GetAttribute<T>(name);
  } catch (const Ort::Exception&) {
    const char* found = attribute_type_found(info, name);
    if (found == nullptr) return attribute_missing(op, name, required);
    fail_attribute_type(op, name, attribute_type_name<T>(), found);
  }
}

// Reads a list attribute. An empty result may be a value of another type (see
// attribute_type_found); an empty list is accepted whatever list type it claims.
template <typename T>
void read_attribute(const Ort::ConstKernelInfo& info, const char* op, const char* name,
                    bool required, std::vector<T>& value) {
  std::vector<T> read;
  try {
    read = info.GetAttributes<T>(name);
  } catch (const Ort::Exception&) {
    return attribute_missing(op, name, required);
  }
  if (read.empty()) {
    const char* found = attribute_type_found(info, name);
    if (found != kOtherAttribute) {
      fail_attribute_type(op, name, attribute_type_name<std::vector<T>>(), found);
    }
  }
  value = std::move(read);
}

// ONNX's name of an element type (TensorProto.DataType's, lower case), for messages.
inline std::string element_type_name(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return "uint16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: return "int16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING: return "string";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return "bool";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return "uint32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return "uint64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
    default: return "element type " + std::to_string(static_cast<int>(type));
  }
}

// Reads a tensor attribute, copied once when the kernel is created; false when the node does
// not carry it. Its element type must be the one the definition declares: another would be
// reinterpreted in silence. (A string tensor's elements are not plain data: T is never
// std::string here, which the generator refuses.)
template <typename T>
bool read_tensor_attribute(const Ort::ConstKernelInfo& info, const char* op, const char* name,
                           opgen::TensorAttribute<T>& value) {
  Ort::AllocatorWithDefaultOptions allocator;
  Ort::Value tensor{nullptr};
  try {
    tensor = info.GetTensorAttribute(name, allocator);
  } catch (const Ort::Exception& error) {
    const char* found = attribute_type_found(info, name);
    if (found == nullptr) return false;
    if (found != kOtherAttribute) fail_attribute_type(op, name, "TENSOR", found);
    // A TENSOR ONNX Runtime cannot read (its data elsewhere, or not filling its dims) lands
    // here too: its own words say which.
    opgen::fail(std::string(op) + ": attribute '" + name + "' must be a readable TENSOR, got " +
                found + " (ONNX Runtime: " + error.what() + ")");
  }
  const Ort::TensorTypeAndShapeInfo type = tensor.GetTensorTypeAndShapeInfo();
  if (type.GetElementType() != element_type<T>()) {
    opgen::fail(std::string(op) + ": attribute '" + name + "' must be a tensor of " +
                element_type_name(element_type<T>()) + ", got one of " +
                element_type_name(type.GetElementType()));
  }
  const size_t count = type.GetElementCount();
  const opgen::Shape shape = type.GetShape();
  // A kernel takes a tensor attribute's view as it takes an input's: every product of its dims
  // must fit in int64 (an empty [0, 2^32, 2^32] holds no element, but size_from(1) would wrap).
  const int64_t numel = opgen::checked_numel(shape);
  const bool negative = std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
  if (negative || numel < 0 || static_cast<uint64_t>(numel) != count) {
    opgen::fail(std::string(op) + ": attribute '" + name + "' has shape " + opgen::shape_to_string(shape) +
                (negative || numel >= 0 ? ", which is not a tensor's shape" : ", whose size overflows int64"));
  }
  const T* data = reinterpret_cast<const T*>(tensor.GetTensorData<typename OrtTypeOf<T>::type>());
  value.shape = shape;
  value.values.assign(data, data + count);
  return true;
}

template <typename T>
void read_attribute(const Ort::ConstKernelInfo& info, const char* op, const char* name,
                    bool required, opgen::TensorAttribute<T>& value) {
  if (!read_tensor_attribute(info, op, name, value)) attribute_missing(op, name, required);
}

// An optional one without a default: read first, probed only when absent (the probe of the
// generic overload below would copy the tensor a second time).
template <typename T>
void read_attribute(const Ort::ConstKernelInfo& info, const char* op, const char* name,
                    bool /*required*/, std::optional<opgen::TensorAttribute<T>>& value) {
  opgen::TensorAttribute<T> read;
  if (read_tensor_attribute(info, op, name, read)) {
    value = std::move(read);
  } else {
    value.reset();
  }
}

// ONNX has no bool attributes: a bool is an INT attribute, 0 or 1 (any other value is an error,
// not "true").
inline void read_attribute(const Ort::ConstKernelInfo& info, const char* op, const char* name,
                           bool required, bool& value) {
  int64_t number = value ? 1 : 0;
  read_attribute(info, op, name, required, number);
  if (number != 0 && number != 1) {
    opgen::fail(std::string(op) + ": attribute '" + name + "' is a bool, so it must be 0 or 1, got " +
                std::to_string(number));
  }
  value = number != 0;
}

// An optional attribute without a default: empty when the node does not carry it.
template <typename T>
void read_attribute(const Ort::ConstKernelInfo& info, const char* op, const char* name,
                    bool /*required*/, std::optional<T>& value) {
  if (attribute_type_found(info, name) == nullptr) {
    value.reset();
    return;
  }
  T read{};
  read_attribute(info, op, name, /*required=*/true, read);
  value = std::move(read);
}

// ONNX Runtime's graph-time shape inference of a custom op (OrtCustomOp::InferOutputShapeFn),
// on the C API: the 1.29 C++ wrapper can neither read input element types nor write a symbolic
// output dim that ONNX Runtime 1.31 accepts.
class ShapeInference {
 public:
  explicit ShapeInference(OrtShapeInferContext* context) : api_(Ort::GetApi()), context_(context) {
    Ort::ThrowOnError(api_.ShapeInferContext_GetInputCount(context_, &input_count_));
  }

  // An optional input is absent when the node omits it or names it "" (no element type then).
  bool present(size_t index) const {
    return index < input_count_ && element_type(index) != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }

  ONNXTensorElementDataType element_type(size_t index) const {
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    Ort::ThrowOnError(api_.GetTensorElementType(info(index), &type));
    return type;
  }

  // Dims as ONNX Runtime reports them: a value, a model's symbolic name, or unknown.
  std::vector<SymDim> shape(size_t index) const {
    if (!present(index)) return {};
    const OrtTensorTypeAndShapeInfo* input = info(index);
    size_t rank = 0;
    Ort::ThrowOnError(api_.GetDimensionsCount(input, &rank));
    std::vector<int64_t> values(rank);
    std::vector<const char*> names(rank, nullptr);
    Ort::ThrowOnError(api_.GetDimensions(input, values.data(), rank));
    Ort::ThrowOnError(api_.GetSymbolicDimensions(input, names.data(), rank));
    std::vector<SymDim> dims;
    for (size_t i = 0; i < rank; ++i) {
      dims.push_back(values[i] >= 0 ? SymDim(values[i]) : SymDim::named(names[i] ? names[i] : ""));
    }
    return dims;
  }

  // ONNX Runtime reports an input of unknown rank as rank 0, like a scalar. A rule run on such
  // an input could infer a wrong shape that ONNX Runtime would trust, so it is not run (the
  // caller leaves out inputs that must be scalars: their rank 0 is no news).
  bool any_rank_unknown(std::initializer_list<size_t> inputs) const {
    for (size_t index : inputs) {
      if (!present(index)) continue;
      size_t rank = 0;
      Ort::ThrowOnError(api_.GetDimensionsCount(info(index), &rank));
      if (rank == 0) return true;
    }
    return false;
  }

  // A variadic input's values: the inputs from `first` to the node's last.
  std::vector<std::vector<SymDim>> shapes_from(size_t first) const {
    std::vector<std::vector<SymDim>> shapes;
    for (size_t index = first; index < input_count_; ++index) shapes.push_back(shape(index));
    return shapes;
  }
  bool any_rank_unknown_from(size_t first) const {
    for (size_t index = first; index < input_count_; ++index) {
      if (any_rank_unknown({index})) return true;
    }
    return false;
  }

  // Reads an attribute the shape rule needs; see attribute_missing. (ReadOpAttr reads an
  // attribute of another type as if it had the asked one, so the type is checked first.)
  void read_attribute(const char* op, const char* name, bool required, int64_t& value) const {
    if (const OrtOpAttr* attr = attribute(op, name, required, ORT_OP_ATTR_INT)) {
      size_t size = 0;
      Ort::ThrowOnError(api_.ReadOpAttr(attr, ORT_OP_ATTR_INT, &value, sizeof value, &size));
    }
  }
  void read_attribute(const char* op, const char* name, bool required, float& value) const {
    if (const OrtOpAttr* attr = attribute(op, name, required, ORT_OP_ATTR_FLOAT)) {
      size_t size = 0;
      Ort::ThrowOnError(api_.ReadOpAttr(attr, ORT_OP_ATTR_FLOAT, &value, sizeof value, &size));
    }
  }
  void read_attribute(const char* op, const char* name, bool required, bool& value) const {
    int64_t number = value ? 1 : 0;
    read_attribute(op, name, required, number);
    value = number != 0;
  }
  void read_attribute(const char* op, const char* name, bool required, std::string& value) const {
    if (const OrtOpAttr* attr = attribute(op, name, required, ORT_OP_ATTR_STRING)) {
      size_t size = 0;
      // The first call asks for the size (and fails for want of room); the second reads.
      OrtStatus* status = api_.ReadOpAttr(attr, ORT_OP_ATTR_STRING, nullptr, 0, &size);
      if (status != nullptr) api_.ReleaseStatus(status);
      std::vector<char> text(size + 1, '\0');
      Ort::ThrowOnError(api_.ReadOpAttr(attr, ORT_OP_ATTR_STRING, text.data(), text.size(), &size));
      value.assign(text.data());
    }
  }

  // Sets an output's element type and shape. An unnamed unknown dim gets a fresh name, unique
  // in the process, so it never claims to equal another dim (ONNX Runtime takes unknown dims
  // only by name); the dims of one data-dependent size symbol share theirs within the node.
  // An optional output the node leaves out at the end has no slot here (ONNX Runtime's shape
  // inference cannot tell how many outputs a node has): setting it fails, and is skipped.
  void set_optional_output(size_t index, ONNXTensorElementDataType type,
                           const std::vector<SymDim>& shape, const char* op, const char* output) {
    try {
      set_output(index, type, shape, op, output);
    } catch (const Ort::Exception& error) {
      if (std::string(error.what()).find("out of range") == std::string::npos) throw;
    }
  }

  void set_output(size_t index, ONNXTensorElementDataType type, const std::vector<SymDim>& shape,
                  const char* op, const char* output) {
    std::vector<int64_t> values;
    std::vector<std::string> names;
    for (const SymDim& dim : shape) {
      values.push_back(dim.known() ? dim.value() : -1);
      names.push_back(dim.known() ? std::string() : !dim.name().empty() ? dim.name() : fresh_name(op, output, dim.symbol()));
    }
    std::vector<const char*> name_pointers;
    for (const std::string& name : names) name_pointers.push_back(name.c_str());
    OrtTensorTypeAndShapeInfo* info = nullptr;
    Ort::ThrowOnError(api_.CreateTensorTypeAndShapeInfo(&info));
    const std::unique_ptr<OrtTensorTypeAndShapeInfo, void (*)(OrtTensorTypeAndShapeInfo*)> owned(
        info, [](OrtTensorTypeAndShapeInfo* p) { Ort::GetApi().ReleaseTensorTypeAndShapeInfo(p); });
    Ort::ThrowOnError(api_.SetTensorElementType(info, type));
    Ort::ThrowOnError(api_.SetDimensions(info, values.data(), values.size()));
    Ort::ThrowOnError(api_.SetSymbolicDimensions(info, name_pointers.data(), name_pointers.size()));
    Ort::ThrowOnError(api_.ShapeInferContext_SetOutputTypeShape(context_, index, info));
  }

 private:
  const OrtTensorTypeAndShapeInfo* info(size_t index) const {
    OrtTensorTypeAndShapeInfo* result = nullptr;  // owned by the context
    Ort::ThrowOnError(api_.ShapeInferContext_GetInputTypeShape(context_, index, &result));
    return result;
  }

  const OrtOpAttr* attribute(const char* op, const char* name, bool required, OrtOpAttrType expected) const {
    const OrtOpAttr* attr = nullptr;
    OrtStatus* status = api_.ShapeInferContext_GetAttribute(context_, name, &attr);
    if (status != nullptr || attr == nullptr) {
      if (status != nullptr) api_.ReleaseStatus(status);
      attribute_missing(op, name, required);
      return nullptr;
    }
    OrtOpAttrType found = ORT_OP_ATTR_UNDEFINED;
    Ort::ThrowOnError(api_.OpAttr_GetType(attr, &found));
    if (found != expected) {
      opgen::fail(std::string(op) + ": attribute '" + name + "' must be of type " +
                  (expected == ORT_OP_ATTR_INT ? "INT" : expected == ORT_OP_ATTR_FLOAT ? "FLOAT" : "STRING") + ", got another type");
    }
    return attr;
  }

  std::string fresh_name(const char* op, const char* output, const std::string& symbol) {
    static std::atomic<uint64_t> counter{0};
    if (!symbol.empty()) {
      std::string& name = symbol_names_[symbol];
      if (name.empty()) name = std::string("unk__") + op + "_" + symbol + "_" + std::to_string(counter++);
      return name;
    }
    return std::string("unk__") + op + "_" + output + "_" + std::to_string(counter++);
  }

  const OrtApi& api_;
  OrtShapeInferContext* context_;
  size_t input_count_ = 0;
  std::map<std::string, std::string> symbol_names_;  // data-dependent size symbol -> its name
};

// The kernel Context over ONNX Runtime's intra-op thread pool.
class ThreadPoolContext final : public opgen::Context {
 public:
  // `elements`: what the call touches (opgen::elements_touched), which sizes the tasks.
  ThreadPoolContext(const Ort::KernelContext& context, int64_t elements)
      : context_(context), elements_(elements) {}

  void parallel_for(int64_t total, const RangeFn& fn) const override {
    if (total <= 0) return;
    const int64_t grain = opgen::items_per_task(total, elements_);
    const int64_t tasks = total / grain + (total % grain != 0);
    const int64_t chunks = std::min<int64_t>(tasks, kMaxChunks);
    if (chunks == 1) {
      fn(0, total);
      return;
    }
    Job job{&fn, total, chunks, nullptr, SIZE_MAX, {}};
    context_.ParallelFor(&run_chunk, static_cast<size_t>(chunks), 0, &job);
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  static constexpr int64_t kMaxChunks = 64;
  struct Job {
    const RangeFn* fn;
    int64_t total;
    int64_t chunks;
    std::exception_ptr error;  // of the earliest chunk that failed: the same every run
    size_t error_index;
    std::mutex mutex;
  };

  static void run_chunk(void* data, size_t index) {
    Job& job = *static_cast<Job*>(data);
    const int64_t i = static_cast<int64_t>(index);
    try {
      (*job.fn)(job.total * i / job.chunks, job.total * (i + 1) / job.chunks);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.mutex);
      if (index < job.error_index) {
        job.error = std::current_exception();
        job.error_index = index;
      }
    }
  }

  const Ort::KernelContext& context_;
  int64_t elements_;
};

}  // namespace opgen::ort
