// What the ONNX C++ schemas' inference functions share: the shape rule's checked arithmetic and
// the spelling of values in messages, the same as the kernels' (opgen/runtime.h and
// opgen/shape_rule.h, which this header uses; they need nothing but the standard library). To
// contribute an op's schema to ONNX Runtime, bring the three headers along.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "onnx/defs/data_type_utils.h"
#include "onnx/defs/shape_inference.h"
#include "opgen/shape_rule.h"

namespace opgen::schema {

// A type constraint's type strings less those whose element type the linked ONNX does not
// know (ONNX 1.12 has no float8, 1.14 no int4): a schema registers what its ONNX can hold.
inline std::vector<std::string> known_types(std::initializer_list<const char*> types) {
  std::vector<std::string> known;
  for (const char* type : types) {
    try {
      ONNX_NAMESPACE::Utils::DataTypeUtils::ToType(type);
      known.emplace_back(type);
    } catch (const std::exception&) {  // "Received invalid data type string"
    }
  }
  return known;
}

// A variadic output pairs with a variadic input (output `output` on, input `input` on): a node
// must give it one value per value of that input.
inline void check_paired_count(const ONNX_NAMESPACE::InferenceContext& ctx, size_t output, size_t input,
                               const char* message) {
  const size_t outputs = ctx.getNumOutputs() > output ? ctx.getNumOutputs() - output : 0;
  const size_t inputs = ctx.getNumInputs() > input ? ctx.getNumInputs() - input : 0;
  if (outputs != inputs) fail_shape_inference(message, outputs, " for ", inputs);
}

// The shape rule's `+ - * //` on dims of a model: an overflow fails the inference, naming the op,
// rather than wrapping. (`//` floors as in Python; the rule checks the divisor first.)
inline int64_t dim_add(const char* op, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) fail_shape_inference(op, ": shape arithmetic overflows int64: ", a, " + ", b);
  return result;
}
inline int64_t dim_sub(const char* op, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_sub_overflow(a, b, &result)) fail_shape_inference(op, ": shape arithmetic overflows int64: ", a, " - ", b);
  return result;
}
inline int64_t dim_mul(const char* op, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) fail_shape_inference(op, ": shape arithmetic overflows int64: ", a, " * ", b);
  return result;
}
inline int64_t dim_floor_div(const char* /*op*/, int64_t n, int64_t d) { return opgen::floor_div(n, d); }

// A dim and a shape as the kernels' messages spell them: known dims by value, others by name.
inline std::string dim_text(const ONNX_NAMESPACE::TensorShapeProto_Dimension& dim) {
  if (dim.has_dim_value()) return std::to_string(dim.dim_value());
  return dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param() : "?";
}
inline std::string shape_text(const ONNX_NAMESPACE::TensorShapeProto& shape) {
  std::string text = "[";
  for (int i = 0; i < shape.dim_size(); ++i) text += (i ? ", " : "") + dim_text(shape.dim(i));
  return text + "]";
}

}  // namespace opgen::schema
