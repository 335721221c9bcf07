// The pieces generated shape rules are built from. Every rule is a template over its dim type:
// int64_t for the shapes of real tensors (the kernel wrappers), SymDim for the symbolic shapes
// of ONNX Runtime's graph-time shape inference. One rule, so the two cannot disagree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "opgen/runtime.h"

namespace opgen {

// A dim while ONNX Runtime builds its graph: a known value, or unknown with a name (a model's
// symbolic dim such as "batch", or an expression of named dims such as "(L - 3) // 2 + 1"), or
// unknown and unnamed. Equal names mean equal sizes, so a name is only ever given to a dim that
// really has that value.
class SymDim {
 public:
  SymDim(int64_t value) : known_(true), value_(value) {}  // implicit: literals mix with dims
  static SymDim named(std::string name) { return name.empty() ? unknown() : SymDim(std::move(name), kAtom); }
  static SymDim unknown() { return SymDim(std::string(), kAtom); }
  // A data-dependent size: unknown, and equal to the node's other dims of the same symbol.
  static SymDim data_dependent(std::string symbol) {
    SymDim dim = unknown();
    dim.symbol_ = std::move(symbol);
    return dim;
  }

  bool known() const { return known_; }
  int64_t value() const { return value_; }
  // The name of an unknown dim ("" when unnamed).
  const std::string& name() const { return name_; }
  // The data-dependent size symbol of an unnamed unknown dim ("" when none).
  const std::string& symbol() const { return symbol_; }
  bool is(int64_t value) const { return known_ && value_ == value; }
  bool same_as(const SymDim& other) const {
    return known_ ? other.is(value_) : !other.known_ && !name_.empty() && name_ == other.name_;
  }

  // a op b, by value when both are known, else by name (unnamed when an operand is unnamed).
  // Precedence: 1 for + and -, 2 for * and //; operands are parenthesised only where needed.
  template <typename Fn>
  static SymDim combine(const SymDim& a, const char* op, int precedence, const SymDim& b, Fn fn) {
    if (a.known_ && b.known_) return SymDim(fn(a.value_, b.value_));
    if ((!a.known_ && a.name_.empty()) || (!b.known_ && b.name_.empty())) return unknown();
    return SymDim(a.operand(precedence, false) + " " + op + " " + b.operand(precedence, true), precedence);
  }

 private:
  static constexpr int kAtom = 3;
  SymDim(std::string name, int precedence) : known_(false), value_(-1), name_(std::move(name)), precedence_(precedence) {}

  std::string operand(int precedence, bool right) const {
    const std::string text = known_ ? std::to_string(value_) : name_;
    const bool parenthesise = known_ ? value_ < 0 : (right ? precedence_ <= precedence : precedence_ < precedence);
    return parenthesise ? "(" + text + ")" : text;
  }

  bool known_;
  int64_t value_;
  std::string name_;
  int precedence_ = kAtom;
  std::string symbol_;
};

inline std::string dim_to_string(const SymDim& dim) {
  return dim.known() ? std::to_string(dim.value()) : (dim.name().empty() ? "?" : dim.name());
}

// Python's floor division (the shape rules' `//`); the rule checks that d > 0 first.
inline int64_t floor_div(int64_t n, int64_t d) {
  const int64_t q = n / d;
  return (n % d != 0 && ((n < 0) != (d < 0))) ? q - 1 : q;
}

// The shape rules' `+ - * //` on dims of either type. On int64_t they are checked (an overflow
// is an error naming the op); on symbolic dims known values are checked the same way, and the
// identities x + 0, x * 1, x // 1 keep names short.
inline int64_t dim_floor_div(const char* /*op*/, int64_t a, int64_t b) { return floor_div(a, b); }
inline SymDim dim_add(const char* op, const SymDim& a, const SymDim& b) {
  if (a.is(0)) return b;
  if (b.is(0)) return a;
  return SymDim::combine(a, "+", 1, b, [op](int64_t x, int64_t y) { return dim_add(op, x, y); });
}
inline SymDim dim_sub(const char* op, const SymDim& a, const SymDim& b) {
  if (b.is(0)) return a;
  return SymDim::combine(a, "-", 1, b, [op](int64_t x, int64_t y) { return dim_sub(op, x, y); });
}
inline SymDim dim_mul(const char* op, const SymDim& a, const SymDim& b) {
  if (a.is(0) || b.is(0)) return SymDim(0);
  if (a.is(1)) return b;
  if (b.is(1)) return a;
  return SymDim::combine(a, "*", 2, b, [op](int64_t x, int64_t y) { return dim_mul(op, x, y); });
}
inline SymDim dim_floor_div(const char* /*op*/, const SymDim& a, const SymDim& b) {
  if (b.is(1)) return a;
  return SymDim::combine(a, "//", 2, b, [](int64_t x, int64_t y) { return floor_div(x, y); });
}

// Fails when the sizes of `shape` do not fit in int64 (see checked_numel); on symbolic dims,
// when the known ones do not. `what` names the tensor ("input 'X'").
inline void check_extent(const char* op, const char* what, const std::vector<int64_t>& shape) {
  if (checked_numel(shape) < 0) {
    fail(std::string(op) + ": " + what + " has shape " + shape_to_string(shape) +
         ", whose size overflows int64");
  }
}
inline void check_extent(const char* op, const char* what, const std::vector<SymDim>& shape) {
  std::vector<int64_t> known;
  for (const SymDim& dim : shape) {
    if (dim.known()) known.push_back(dim.value());
  }
  if (checked_numel(known) < 0) {
    fail(std::string(op) + ": " + what + " has shape " + shape_to_string(shape) +
         ", whose size overflows int64");
  }
}

// A variadic input takes at least its minimum number of values; `message` is followed by the
// count it got.
inline void check_arity(size_t count, size_t minimum, const char* message) {
  if (count < minimum) fail(message + std::to_string(count));
}

// A variadic output pairs with a variadic input: a node gives it one value per value of the
// input. `message` is followed by "<outputs> for <inputs>".
inline void check_paired_count(size_t outputs, size_t inputs, const char* message) {
  if (outputs != inputs) fail(message + std::to_string(outputs) + " for " + std::to_string(inputs));
}

// A variadic input: every value's shape.
template <typename Dim>
void check_extent(const char* op, const char* what, const std::vector<std::vector<Dim>>& shapes) {
  for (const auto& shape : shapes) check_extent(op, what, shape);
}

// Checks on symbolic dims hold unless the dims show otherwise: `a == b` is false only when a
// and b are known to differ, `d >= 0` only when d is known and negative. (ONNX's own shape
// inference checks the same way: what is unknown at graph time is checked when the kernel runs.)
inline bool operator==(const SymDim& a, const SymDim& b) {
  return !(a.known() && b.known()) || a.value() == b.value();
}
inline bool operator>(const SymDim& a, int64_t b) { return !a.known() || a.value() > b; }
inline bool operator>=(const SymDim& a, int64_t b) { return !a.known() || a.value() >= b; }

// The size of an output dim that only the kernel knows (the data decides it); `symbol` is its
// name in the op definition.
template <typename Dim>
Dim data_dependent_dim(const char* symbol);
template <>
inline int64_t data_dependent_dim<int64_t>(const char* /*symbol*/) { return -1; }
template <>
inline SymDim data_dependent_dim<SymDim>(const char* symbol) { return SymDim::data_dependent(symbol); }

// Shape helpers of the generated rules (axes may be negative, as in Python).
constexpr int64_t kShapeEnd = INT64_MAX;

template <typename Dim>
Dim axis_size(const std::vector<Dim>& shape, int64_t axis) {
  return shape.at(static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis));
}

template <typename Dim>
void append_dims(std::vector<Dim>& out, const std::vector<Dim>& shape, int64_t start, int64_t stop) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (start < 0) start += rank;
  stop = stop == kShapeEnd ? rank : (stop < 0 ? stop + rank : stop);
  if (start < stop) out.insert(out.end(), shape.begin() + start, shape.begin() + stop);
}

// One dim of a broadcast: `result` (so far) and `dim` (the next operand's); false when they
// cannot broadcast.
inline bool broadcast_dim(int64_t& result, int64_t dim) {
  if (dim == result || dim == 1) return true;
  if (result != 1) return false;
  result = dim;
  return true;
}

// ONNX's rule for symbolic dims: a known size other than 1 wins over an unknown one (which must
// then be 1 or equal); two different names give an unnamed unknown dim.
inline bool broadcast_dim(SymDim& result, const SymDim& dim) {
  if (dim.is(1) || dim.same_as(result)) return true;
  if (result.is(1)) {
    result = dim;
  } else if (result.known() && dim.known()) {
    return false;
  } else if (dim.known()) {
    result = dim;
  } else if (!result.known()) {
    result = SymDim::unknown();
  }
  return true;
}

// The shapes an operand of broadcast_shapes stands for: one (nullptr for an absent optional
// input, skipped), or a variadic input's every value.
template <typename Dim>
using ShapeRefs = std::vector<const std::vector<Dim>*>;

template <typename Dim>
ShapeRefs<Dim> each_shape(const std::vector<std::vector<Dim>>& shapes) {
  ShapeRefs<Dim> refs;
  refs.reserve(shapes.size());
  for (const auto& shape : shapes) refs.push_back(&shape);
  return refs;
}

// numpy broadcasting of the operands' shapes; `message` names the op and its inputs.
template <typename Dim>
std::vector<Dim> broadcast_shapes(const std::string& message, std::initializer_list<ShapeRefs<Dim>> operands) {
  ShapeRefs<Dim> shapes;
  for (const auto& operand : operands) {
    for (const auto* shape : operand) {
      if (shape) shapes.push_back(shape);
    }
  }
  size_t rank = 0;
  for (const auto* shape : shapes) rank = std::max(rank, shape->size());
  std::vector<Dim> result(rank, Dim(1));
  for (const auto* shape : shapes) {
    const size_t offset = rank - shape->size();
    for (size_t i = 0; i < shape->size(); ++i) {
      if (broadcast_dim(result[offset + i], (*shape)[i])) continue;
      std::string got;
      for (const auto* s : shapes) got += (got.empty() ? "" : " and ") + shape_to_string(*s);
      fail(message + got);
    }
  }
  return result;
}

// The shape without `axis` (kept as a 1 when keepdims); the rule checked the axis range.
template <typename Dim>
std::vector<Dim> reduced_shape(const std::vector<Dim>& shape, int64_t axis, bool keepdims) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  std::vector<Dim> result;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) {
      result.push_back(shape[static_cast<size_t>(i)]);
    } else if (keepdims) {
      result.push_back(Dim(1));
    }
  }
  return result;
}

}  // namespace opgen
