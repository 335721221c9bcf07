// The small, dependency-free API that hand-written kernels program against. The ONNX Runtime
// wrapper and the pybind11 binding both adapt their tensors to these views, so one kernel
// source serves both runtimes.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace opgen {

using Shape = std::vector<int64_t>;

// Raised by kernels and shape checks. Runtimes turn it into an ONNX Runtime error status or a
// Python ValueError; it never escapes a C ABI boundary.
class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

[[noreturn]] inline void fail(const std::string& message) { throw Error(message); }

// The non-empty texts joined by ", " (the dtypes of the inputs present, for a message).
inline std::string join_present(std::initializer_list<std::string> texts) {
  std::string joined;
  for (const std::string& text : texts) {
    if (text.empty()) continue;
    joined += (joined.empty() ? "" : ", ") + text;
  }
  return joined;
}

inline std::string dim_to_string(int64_t dim) { return std::to_string(dim); }

// An attribute value as every runtime's error messages spell it: ints in decimal, strings as
// JSON does (what Python's json.dumps(value, ensure_ascii=False) gives, byte for byte).
inline std::string quoted(int64_t value) { return std::to_string(value); }
// A float as the shortest "%.<p>g" that reads back as the same float32 (the generator's
// float32_text and the Python _support.quoted spell it the same way).
inline std::string quoted(float value) {
  if (std::isnan(value)) return "nan";
  char text[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, static_cast<double>(value));
    // Through double, as Python's float32(float(text)) reads it.
    if (static_cast<float>(std::strtod(text, nullptr)) == value) break;
  }
  return text;
}
// The length of the well-formed UTF-8 sequence at value[at], or 0 where none starts there
// (Unicode's table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
inline size_t utf8_sequence(const std::string& value, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(value[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (at + length > value.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = at + 2; i < at + length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return length;
}

// A byte that is no part of well-formed UTF-8 is written \xNN: what Python's
// bytes.decode("utf-8", "backslashreplace") gives, then JSON-escaped (_support.attribute), so
// that a message about such an attribute is the same text everywhere, and valid UTF-8.
inline std::string quoted(const std::string& value) {
  static const char* const kHex = "0123456789abcdef";
  std::string text = "\"";
  for (size_t at = 0; at < value.size();) {
    const size_t length = utf8_sequence(value, at);
    if (length == 0) {
      const auto byte = static_cast<unsigned char>(value[at++]);
      text += "\\\\x";
      text += kHex[byte >> 4];
      text += kHex[byte & 15];
      continue;
    }
    if (length > 1) {
      text.append(value, at, length);
      at += length;
      continue;
    }
    const char c = value[at++];
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': text += "\\\""; break;
      case '\\': text += "\\\\"; break;
      case '\n': text += "\\n"; break;
      case '\r': text += "\\r"; break;
      case '\t': text += "\\t"; break;
      case '\b': text += "\\b"; break;
      case '\f': text += "\\f"; break;
      default:
        if (byte < 0x20) {
          text += "\\u00";
          text += kHex[byte >> 4];
          text += kHex[byte & 15];
        } else {
          text += c;
        }
    }
  }
  return text + "\"";
}

// Checked int64 arithmetic for shapes: sizes come from clients (a ConstantOfShape in front of an
// op is enough), so an overflow is an error naming the op, never a wrapped value.
[[noreturn]] inline void fail_overflow(const char* op, int64_t a, const char* operation, int64_t b) {
  fail(std::string(op) + ": shape arithmetic overflows int64: " + std::to_string(a) + " " +
       operation + " " + std::to_string(b));
}
inline int64_t dim_add(const char* op, int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) fail_overflow(op, a, "+", b);
  return result;
}
inline int64_t dim_sub(const char* op, int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_sub_overflow(a, b, &result)) fail_overflow(op, a, "-", b);
  return result;
}
inline int64_t dim_mul(const char* op, int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) fail_overflow(op, a, "*", b);
  return result;
}

// The number of elements of `shape` if every product of its dims fits in int64 (zero dims
// counted as 1, so an empty [0, 2^32, 2^32] does not fit: its inner sizes would wrap), else -1.
// Negative dims (sizes only the kernel knows) are left out.
inline int64_t checked_numel(const std::vector<int64_t>& shape) {
  int64_t bound = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d == 0) empty = true;
    if (d > 1 && __builtin_mul_overflow(bound, d, &bound)) return -1;
  }
  return empty ? 0 : bound;
}

// The elements a call touches, summed over its input and output shapes (a variadic input's
// values each), saturating at INT64_MAX: what every runtime's parallel_for sizes its tasks by.
inline int64_t element_count(const std::vector<int64_t>& shape) {
  return std::max<int64_t>(0, checked_numel(shape));
}
inline int64_t element_count(const std::vector<std::vector<int64_t>>& shapes) {
  int64_t total = 0;
  for (const std::vector<int64_t>& shape : shapes) {
    if (__builtin_add_overflow(total, element_count(shape), &total)) return INT64_MAX;
  }
  return total;
}
template <typename... Shapes>
int64_t elements_touched(const Shapes&... shapes) {
  int64_t total = 0;
  const auto add = [&](int64_t count) {
    if (__builtin_add_overflow(total, count, &total)) total = INT64_MAX;
  };
  (add(element_count(shapes)), ...);
  return total;
}

// How many of `items` work items one task takes: about 32,768 elements' worth (PyTorch's
// grain, at::internal::GRAIN_SIZE), the work of an item taken to be its share of `elements`.
// A call on a few elements thus stays on the calling thread: a hand-off costs microseconds.
inline int64_t items_per_task(int64_t items, int64_t elements) {
  constexpr int64_t kElementsPerTask = 32768;
  const int64_t per_item = std::max<int64_t>(1, elements / std::max<int64_t>(1, items));
  return std::max<int64_t>(1, kElementsPerTask / per_item);
}

// "[2, 3]"; also for the symbolic dims of opgen/shape_rule.h (found by argument lookup).
template <typename Dim>
std::string shape_to_string(const std::vector<Dim>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + dim_to_string(shape[i]);
  }
  return text + "]";
}

// Offsets that broadcasting an input of `shape` to `out_shape` gives, one per output element
// in row-major order: kernels of broadcasting ops read input i at offsets[i].
inline std::vector<int64_t> broadcast_offsets(const Shape& shape, const Shape& out_shape) {
  const size_t rank = out_shape.size();
  const size_t offset = rank - shape.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[offset + i] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  std::vector<int64_t> result(static_cast<size_t>(total), 0);
  std::vector<int64_t> index(rank, 0);
  int64_t position = 0;
  for (int64_t k = 0; k < total; ++k) {
    result[static_cast<size_t>(k)] = position;
    for (size_t axis = rank; axis-- > 0;) {
      position += strides[axis];
      if (++index[axis] < out_shape[axis]) break;
      position -= strides[axis] * out_shape[axis];
      index[axis] = 0;
    }
  }
  return result;
}

// IEEE 754 half precision, stored as bits; same layout as Ort::Float16_t and numpy.float16.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float value) : bits(from_float(value)) {}
  explicit operator float() const { return to_float(bits); }
  explicit operator double() const { return to_float(bits); }

  static uint16_t from_float(float value) {
    uint32_t x;
    std::memcpy(&x, &value, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or NaN
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (abs < 0x38800000u) {  // subnormal half (or zero): round to nearest even
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
      const uint32_t mantissa = (abs & 0x007fffffu) | 0x00800000u;
      const int shift = 126 - static_cast<int>(abs >> 23);  // value / 2^-24 = mantissa >> shift
      uint32_t half = mantissa >> shift;
      const uint32_t rest = mantissa & ((1u << shift) - 1u);
      const uint32_t halfway = 1u << (shift - 1);
      if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
      return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = ((abs - 0x38000000u) >> 13);
    const uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }

  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t x;
    if (exponent == 0x1fu) {
      x = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
      x = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      x = sign | ((112u - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float value;
    std::memcpy(&value, &x, sizeof value);
    return value;
  }
};

// bfloat16, stored as bits; same layout as Ort::BFloat16_t.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float value) {
    uint32_t x;
    std::memcpy(&x, &value, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    } else {
      bits = static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
  }
  explicit operator float() const {
    const uint32_t x = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &x, sizeof value);
    return value;
  }
};

// ONNX's four float8 formats (as PyTorch and ml_dtypes have them), stored as bits; same layout
// as Ort::Float8E4M3FN_t and the others. e4m3fn: no infinities, S.1111.111 is NaN; e5m2: IEEE
// style, with infinities; the fnuz ones: no infinities and no -0, 0x80 is their one NaN.
enum class Float8Format { e4m3fn, e4m3fnuz, e5m2, e5m2fnuz };

template <Float8Format Format>
struct float8 {
  static constexpr bool kWide = Format == Float8Format::e5m2 || Format == Float8Format::e5m2fnuz;
  static constexpr bool kFnuz = Format == Float8Format::e4m3fnuz || Format == Float8Format::e5m2fnuz;
  static constexpr bool kHasInfinity = Format == Float8Format::e5m2;
  static constexpr int kMantissaBits = kWide ? 2 : 3;
  static constexpr int kBias = (kWide ? 15 : 7) + (kFnuz ? 1 : 0);
  static constexpr uint32_t kMaxCode = Format == Float8Format::e4m3fn ? 0x7e : kHasInfinity ? 0x7b : 0x7f;

  uint8_t bits = 0;
  float8() = default;
  // Rounds to nearest even and saturates (ONNX Cast's default, saturate=1).
  explicit float8(float value) : bits(from_float(value, true)) {}
  explicit operator float() const { return to_float(bits); }
  explicit operator double() const { return to_float(bits); }

  // ONNX Cast's conversion: round to nearest even; out of range (infinity included),
  // `saturate` gives the largest finite value of the sign, otherwise infinity (e5m2) or NaN.
  static uint8_t from_float(float value, bool saturate) {
    uint32_t x;
    std::memcpy(&x, &value, sizeof x);
    const uint32_t sign = (x >> 24) & 0x80u;
    const uint32_t abs = x & 0x7fffffffu;
    const uint8_t nan = kFnuz ? 0x80 : static_cast<uint8_t>(sign | 0x7fu);
    if (abs > 0x7f800000u) return nan;
    const uint8_t overflow = saturate ? static_cast<uint8_t>(sign | kMaxCode)
                             : kHasInfinity ? static_cast<uint8_t>(sign | 0x7cu)
                                            : nan;
    if (abs == 0x7f800000u) return overflow;
    const int exponent = static_cast<int>(abs >> 23) - 127;
    uint32_t code = 0;
    if (exponent >= 1 - kBias) {  // a normal float8 (or beyond the largest)
      const int shift = 23 - kMantissaBits;
      code = (static_cast<uint32_t>(exponent + kBias) << kMantissaBits) | ((abs & 0x7fffffu) >> shift);
      code = rounded(code, abs & ((1u << shift) - 1u), 1u << (shift - 1));
    } else {  // a subnormal float8 (or zero): the value over the smallest subnormal, rounded
      const int shift = 23 - kMantissaBits + (1 - kBias) - exponent;
      if (shift < 25) {  // shift >= 25 leaves less than half the smallest subnormal: zero
        const uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
        code = rounded(significand >> shift, significand & ((1u << shift) - 1u), 1u << (shift - 1));
      }
    }
    if (code > kMaxCode) return overflow;
    if (kFnuz && code == 0) return 0;
    return static_cast<uint8_t>(sign | code);
  }

  static float to_float(uint8_t bits) { return table()[bits]; }

 private:
  static uint32_t rounded(uint32_t kept, uint32_t rest, uint32_t half) {
    return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  }

  static float decode(uint8_t bits) {
    const uint32_t magnitude = bits & 0x7fu;
    if (kFnuz ? bits == 0x80u : kHasInfinity ? magnitude > 0x7cu : magnitude == 0x7fu) {
      return std::numeric_limits<float>::quiet_NaN();
    }
    float value;
    if (kHasInfinity && magnitude == 0x7cu) {
      value = std::numeric_limits<float>::infinity();
    } else {
      const int exponent = static_cast<int>(magnitude >> kMantissaBits);
      const uint32_t mantissa = magnitude & ((1u << kMantissaBits) - 1u);
      value = exponent == 0
                  ? std::ldexp(static_cast<float>(mantissa), 1 - kBias - kMantissaBits)
                  : std::ldexp(static_cast<float>(mantissa | (1u << kMantissaBits)),
                               exponent - kBias - kMantissaBits);
    }
    return (bits & 0x80u) ? -value : value;
  }

  struct Table {
    float values[256];
    Table() {
      for (int bits = 0; bits < 256; ++bits) values[bits] = decode(static_cast<uint8_t>(bits));
    }
  };
  static const float* table() {
    static const Table decoded;  // built once, thread-safely
    return decoded.values;
  }
};
using float8e4m3fn = float8<Float8Format::e4m3fn>;
using float8e4m3fnuz = float8<Float8Format::e4m3fnuz>;
using float8e5m2 = float8<Float8Format::e5m2>;
using float8e5m2fnuz = float8<Float8Format::e5m2fnuz>;

// A 4-bit integer (ONNX's int4, and uint4 unsigned), one per byte in a kernel's view: ONNX
// stores two per byte, and the runtime unpacks inputs before the kernel and packs outputs after
// (unpack_4bit, pack_4bit), so a kernel indexes them as any other type and its parallel_for
// ranges may split anywhere. It converts to int implicitly, as int8_t does; from an integer it
// keeps the low four bits (as a conversion to int8_t keeps the low eight), or use saturated().
template <bool Signed>
struct int4_of {
  using Storage = std::conditional_t<Signed, int8_t, uint8_t>;
  static constexpr int kMin = Signed ? -8 : 0;
  static constexpr int kMax = Signed ? 7 : 15;

  Storage value = 0;
  int4_of() = default;
  explicit int4_of(int64_t v) : value(from_nibble(static_cast<uint8_t>(v & 0xf))) {}
  operator int() const { return value; }

  // v clamped to [kMin, kMax].
  static int4_of saturated(int64_t v) { return int4_of(std::clamp<int64_t>(v, kMin, kMax)); }

  uint8_t nibble() const { return static_cast<uint8_t>(value) & 0xfu; }
  static Storage from_nibble(uint8_t nibble) {
    return static_cast<Storage>(Signed && nibble >= 8 ? static_cast<int>(nibble) - 16 : nibble);
  }
};
using int4 = int4_of<true>;
using uint4 = int4_of<false>;
static_assert(sizeof(int4) == 1 && sizeof(uint4) == 1, "one 4-bit value per byte");

}  // namespace opgen

// A kernel written for every integer type reads the range through numeric_limits, as for int8_t.
namespace std {
template <bool Signed>
class numeric_limits<opgen::int4_of<Signed>> {
  using T = opgen::int4_of<Signed>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = Signed;
  static constexpr bool is_integer = true;
  static constexpr bool is_exact = true;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = Signed ? 3 : 4;
  static constexpr int radix = 2;
  static T min() { return T(T::kMin); }
  static T lowest() { return T(T::kMin); }
  static T max() { return T(T::kMax); }
};
}  // namespace std

namespace opgen {

template <typename T>
constexpr bool is_4bit = false;
template <bool Signed>
constexpr bool is_4bit<int4_of<Signed>> = true;

// ONNX's layout of 4-bit tensors: element 2k in the low nibble of byte k, element 2k + 1 in
// its high nibble; an odd count leaves the last byte's high nibble 0. `count` elements take
// packed_4bit_bytes(count) bytes.
inline int64_t packed_4bit_bytes(int64_t count) { return count / 2 + count % 2; }
template <bool Signed>
void unpack_4bit(const uint8_t* bytes, int64_t count, int4_of<Signed>* values) {
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t byte = bytes[i / 2];
    values[i].value = int4_of<Signed>::from_nibble(i % 2 ? byte >> 4 : byte & 0xfu);
  }
}
template <bool Signed>
void pack_4bit(const int4_of<Signed>* values, int64_t count, uint8_t* bytes) {
  for (int64_t i = 0; i + 1 < count; i += 2) {
    bytes[i / 2] = static_cast<uint8_t>(values[i].nibble() | (values[i + 1].nibble() << 4));
  }
  if (count % 2) bytes[count / 2] = values[count - 1].nibble();
}

// The type a kernel should accumulate in: float for the 16- and 8-bit floats, int for the 4-bit
// integers, T otherwise.
template <typename T>
struct compute_type_of {
  using type = T;
};
template <>
struct compute_type_of<float16> {
  using type = float;
};
template <>
struct compute_type_of<bfloat16> {
  using type = float;
};
template <Float8Format Format>
struct compute_type_of<float8<Format>> {
  using type = float;
};
template <bool Signed>
struct compute_type_of<int4_of<Signed>> {
  using type = int;
};
template <typename T>
using compute_type = typename compute_type_of<T>::type;

// Input data may start at an address that is not aligned for its type: ONNX Runtime hands a
// numpy array's buffer over as it is, and a numpy array or a PyTorch tensor may start anywhere
// (np.frombuffer or torch.frombuffer with an offset). Reading it through a T* is undefined
// behaviour (found by the kernel fuzzer under UBSan), so the kernel gets an aligned copy, kept
// here until the kernel returns. Aligned data, the usual case, costs one test.
class AlignedCopies {
 public:
  // `count` gives the number of elements; it is called only when a copy is made.
  template <typename T, typename Count>
  const T* operator()(const T* data, Count&& count) {
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(T) == 0) return data;
    const size_t bytes = static_cast<size_t>(count()) * sizeof(T);
    copies_.emplace_back((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
    std::memcpy(copies_.back().data(), data, bytes);
    return reinterpret_cast<const T*>(copies_.back().data());
  }

  // Room for `count` elements of T (a valid pointer also for none), kept here until the kernel
  // returns: where 4-bit inputs are unpacked for the kernel and its 4-bit outputs written.
  template <typename T>
  T* scratch(size_t count) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t));
    const size_t bytes = std::max<size_t>(1, count * sizeof(T));
    copies_.emplace_back((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
    return reinterpret_cast<T*>(copies_.back().data());
  }

  // `count` strings, kept here until the kernel returns: ONNX Runtime hands string tensors over
  // by copy only (its API reads and writes them as bytes). (A moved vector keeps its buffer, so
  // the pointer stays valid as more are added.)
  std::string* strings(size_t count) {
    strings_.emplace_back(count);
    return strings_.back().data();
  }

  // Memory these copies do not hold (a device buffer) whose owner releases it with them.
  void keep(std::shared_ptr<void> owner) { owners_.push_back(std::move(owner)); }

 private:
  std::vector<std::vector<std::max_align_t>> copies_;
  std::vector<std::vector<std::string>> strings_;
  std::vector<std::shared_ptr<void>> owners_;
};

// A dense, contiguous, row-major tensor view. The runtime owns the memory.
template <typename T>
struct TensorView {
  T* data = nullptr;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // Size of one axis; negative axes count from the end, as in Python.
  int64_t dim(int64_t axis) const { return shape.at(axis < 0 ? axis + rank() : axis); }
  // Element counts never overflow: the runtimes refuse shapes whose sizes do not fit in int64
  // (see checked_numel) before a kernel runs, so every product of dims below is exact.
  int64_t numel() const { return size_between(0, rank()); }
  // The product of the dims before `axis` (negative axes count from the end): the number of
  // matrices of a [..., N, N] input is size_before(-2). Never divide numel() to get it.
  int64_t size_before(int64_t axis) const { return size_between(0, normalize(axis)); }
  // The product of the dims from `axis` to the end.
  int64_t size_from(int64_t axis) const { return size_between(normalize(axis), rank()); }

 private:
  int64_t normalize(int64_t axis) const {
    const int64_t index = axis < 0 ? axis + rank() : axis;
    if (index < 0 || index > rank()) fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank()));
    return index;
  }
  int64_t size_between(int64_t begin, int64_t end) const {
    int64_t count = 1;
    for (int64_t i = begin; i < end; ++i) count *= shape[static_cast<size_t>(i)];
    return count;
  }
};

template <typename T>
using Input = TensorView<const T>;
template <typename T>
using Output = TensorView<T>;
// A variadic input: its values in order (at least its minimum number of them).
template <typename T>
using Inputs = std::vector<Input<T>>;
// A variadic output: one view per value of the variadic input it pairs with, of its shape.
template <typename T>
using Outputs = std::vector<Output<T>>;

// A tensor attribute's value, owned by the kernel (copied from the node once, when the kernel
// is created): its elements in row-major order and its shape. Empty (shape {0}) until read.
template <typename T>
struct TensorAttribute {
  std::vector<T> values;
  Shape shape{0};

  Input<T> view() const { return Input<T>{values.data(), shape}; }
  int64_t numel() const { return static_cast<int64_t>(values.size()); }
};

// An output whose size depends on the data: the kernel calls allocate(shape) once, when it
// knows the shape, and writes through the view it returns.
template <typename T>
class AllocatedOutput {
 public:
  using Allocator = std::function<T*(const Shape&)>;
  explicit AllocatedOutput(Allocator allocator) : allocator_(std::move(allocator)) {}

  Output<T> allocate(const Shape& shape) {
    if (view_.data != nullptr || allocated_) fail("an output of data-dependent size is allocated once");
    for (int64_t d : shape) {
      if (d < 0) fail("allocate: negative dimension in " + shape_to_string(shape));
    }
    // Every runtime's allocator and the kernel's view then count elements in int64: a shape
    // whose sizes overflow it (an empty [0, 2^32, 2^32] too) is refused here, for all of them.
    if (checked_numel(shape) < 0) {
      fail("allocate: shape " + shape_to_string(shape) + ", whose size overflows int64");
    }
    view_ = Output<T>{allocator_(shape), shape};
    allocated_ = true;
    return view_;
  }
  bool allocated() const { return allocated_; }
  const Output<T>& view() const { return view_; }
  void check_allocated(const char* op, const char* name) const {
    if (!allocated_) fail(std::string(op) + ": the kernel did not allocate output '" + name + "'");
  }

 private:
  Allocator allocator_;
  Output<T> view_;
  bool allocated_ = false;
};

// What a runtime lends a kernel: a parallel-for over independent work items.
class Context {
 public:
  using RangeFn = std::function<void(int64_t begin, int64_t end)>;
  virtual ~Context() = default;
  // Calls fn on disjoint [begin, end) ranges covering [0, total), possibly on several threads.
  // An exception thrown by fn is rethrown here after all ranges finished.
  virtual void parallel_for(int64_t total, const RangeFn& fn) const = 0;
};

// Runs everything on the calling thread.
class SerialContext final : public Context {
 public:
  void parallel_for(int64_t total, const RangeFn& fn) const override {
    if (total > 0) fn(0, total);
  }
};

}  // namespace opgen
