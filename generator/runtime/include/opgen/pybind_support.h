// Adapters between numpy arrays (pybind11) and the kernel API of opgen/runtime.h. Inputs are
// read in place and outputs are numpy arrays the kernel writes into: no copies either way.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <type_traits>
#include <vector>

#include "opgen/runtime.h"

namespace opgen::py_support {

namespace py = pybind11;

template <typename T>
const char* numpy_name();
template <>
inline const char* numpy_name<opgen::float16>() { return "float16"; }
// numpy's bfloat16 and float8 types come from ml_dtypes (imported before such an array is made).
template <>
inline const char* numpy_name<opgen::bfloat16>() { return "bfloat16"; }
template <>
inline const char* numpy_name<opgen::float8e4m3fn>() { return "float8_e4m3fn"; }
template <>
inline const char* numpy_name<opgen::float8e4m3fnuz>() { return "float8_e4m3fnuz"; }
template <>
inline const char* numpy_name<opgen::float8e5m2>() { return "float8_e5m2"; }
template <>
inline const char* numpy_name<opgen::float8e5m2fnuz>() { return "float8_e5m2fnuz"; }

template <typename T>
constexpr bool from_ml_dtypes =
    std::is_same_v<T, opgen::bfloat16> || std::is_same_v<T, opgen::float8e4m3fn> ||
    std::is_same_v<T, opgen::float8e4m3fnuz> || std::is_same_v<T, opgen::float8e5m2> ||
    std::is_same_v<T, opgen::float8e5m2fnuz>;
template <>
inline const char* numpy_name<float>() { return "float32"; }
template <>
inline const char* numpy_name<double>() { return "float64"; }
template <>
inline const char* numpy_name<int8_t>() { return "int8"; }
template <>
inline const char* numpy_name<int16_t>() { return "int16"; }
template <>
inline const char* numpy_name<int32_t>() { return "int32"; }
template <>
inline const char* numpy_name<int64_t>() { return "int64"; }
template <>
inline const char* numpy_name<uint8_t>() { return "uint8"; }
template <>
inline const char* numpy_name<bool>() { return "bool"; }
template <>
inline const char* numpy_name<uint16_t>() { return "uint16"; }
template <>
inline const char* numpy_name<uint32_t>() { return "uint32"; }
template <>
inline const char* numpy_name<uint64_t>() { return "uint64"; }
template <>
inline const char* numpy_name<std::complex<float>>() { return "complex64"; }
template <>
inline const char* numpy_name<std::complex<double>>() { return "complex128"; }

inline std::string dtype_name(const py::array& array) {
  return py::str(array.dtype()).cast<std::string>();
}

// A variadic input's dtypes: "[float32, int64]".
inline std::string dtype_name(const std::vector<py::array>& arrays) {
  std::string names;
  for (const py::array& array : arrays) names += (names.empty() ? "" : ", ") + dtype_name(array);
  return "[" + names + "]";
}

inline opgen::Shape shape_of(const py::array& array, const char* op, const char* name) {
  if (!(array.flags() & py::array::c_style)) {
    opgen::fail(std::string(op) + ": input '" + name + "' must be C-contiguous");
  }
  return opgen::Shape(array.shape(), array.shape() + array.ndim());
}
inline std::vector<opgen::Shape> shape_of(const std::vector<py::array>& arrays, const char* op, const char* name) {
  std::vector<opgen::Shape> shapes;
  shapes.reserve(arrays.size());
  for (const py::array& array : arrays) shapes.push_back(shape_of(array, op, name));
  return shapes;
}

template <typename T>
const T* data(const py::array& array, opgen::AlignedCopies& aligned) {
  return aligned(static_cast<const T*>(array.data()), [&] { return array.size(); });
}

// The numpy dtype of T, looked up once: by name it costs microseconds on every call. pybind11's
// call-once helper, because the first lookup calls into Python (a plain function-local static
// could deadlock two threads on the GIL); it is never freed, so nothing runs at process exit.
template <typename T>
const py::dtype& dtype_of() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::dtype> storage;
  return storage
      .call_once_and_store_result([] {
        if constexpr (from_ml_dtypes<T>) py::module_::import("ml_dtypes");
        return py::dtype(numpy_name<T>());
      })
      .get_stored();
}

// Whether an array holds T: numpy's own equivalence test (byte order included), as pybind11's
// array_t uses.
template <typename T>
bool has_dtype(const py::array& array) {
  return py::detail::npy_api::get().PyArray_EquivTypes_(array.dtype().ptr(), dtype_of<T>().ptr());
}

template <typename T>
bool has_dtype(const std::vector<py::array>& arrays) {
  for (const py::array& array : arrays) {
    if (!has_dtype<T>(array)) return false;
  }
  return true;
}

template <typename T>
py::array empty(const opgen::Shape& shape) {
  return py::array(dtype_of<T>(), std::vector<py::ssize_t>(shape.begin(), shape.end()));
}

template <typename T>
T* mutable_data(py::array& array) {
  return static_cast<T*>(array.mutable_data());
}

}  // namespace opgen::py_support
