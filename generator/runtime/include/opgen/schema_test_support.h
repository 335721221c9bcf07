// What the C++ schema tests of a domain share (they compile into one executable per domain):
// building a one-node model's value infos, spelling an inferred type, and counting failed
// checks. Needs ONNX's C++ library.
#pragma once

#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace opgen::schema_testing {

// One dim of a test model's input: a value, or a symbolic name when `param` is not empty.
struct Dim {
  int64_t value;
  std::string param;
};

inline void set_shape(ONNX_NAMESPACE::ValueInfoProto* info, ONNX_NAMESPACE::TensorProto_DataType dtype,
                      const std::vector<Dim>& dims) {
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(dtype);
  auto* shape = tensor->mutable_shape();
  for (const Dim& dim : dims) {
    auto* d = shape->add_dim();
    if (dim.param.empty()) {
      d->set_dim_value(dim.value);
    } else {
      d->set_dim_param(dim.param);
    }
  }
}

// "<elem type number> [d0, d1, ...]", unknown dims as "?".
inline std::string describe(const ONNX_NAMESPACE::TypeProto& type) {
  std::string text = std::to_string(type.tensor_type().elem_type()) + " [";
  const auto& shape = type.tensor_type().shape();
  for (int i = 0; i < shape.dim_size(); ++i) {
    if (i) text += ", ";
    const auto& dim = shape.dim(i);
    // ONNX names the unknown dims it merges into outputs unk__<n>.
    const bool unknown = !dim.has_dim_param() || dim.dim_param().rfind("unk__", 0) == 0;
    text += dim.has_dim_value() ? std::to_string(dim.dim_value()) : (unknown ? "?" : dim.dim_param());
  }
  return text + "]";
}

// The checks of one op's test: each prints "ok:" or "FAIL:" and its description.
class Checks {
 public:
  void expect(bool condition, const std::string& what) {
    std::cout << (condition ? "ok:   " : "FAIL: ") << what << std::endl;
    if (!condition) ++failures_;
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

// One op's test in the domain's executable.
struct SchemaTest {
  const char* op_id;
  int (*run)();  // the number of failed checks
};

// The domain's executable: registers the schemas, then runs the test of every op, or of the ops
// whose ids the arguments name (each once). Exit code 0: every check passed (or --help); 1: a
// check failed; 2: no such op id in the domain (nothing runs).
inline int run_schema_tests(int argc, char** argv, const char* domain, const std::vector<SchemaTest>& tests,
                            void (*register_schemas)()) {
  std::vector<const SchemaTest*> selected;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::cout << "usage: " << argv[0] << " [op id]...\nRuns the C++ schema test of every op of domain " << domain
                << ", or of the ops named:";
      for (const SchemaTest& test : tests) std::cout << " " << test.op_id;
      std::cout << std::endl;
      return 0;
    }
    const SchemaTest* found = nullptr;
    for (const SchemaTest& test : tests) {
      if (std::strcmp(test.op_id, argv[i]) == 0) found = &test;
    }
    if (found == nullptr) {
      std::cerr << argv[0] << ": no op with id '" << argv[i] << "' in domain " << domain << "; its ops:";
      for (const SchemaTest& test : tests) std::cerr << " " << test.op_id;
      std::cerr << std::endl;
      return 2;
    }
    bool seen = false;
    for (const SchemaTest* test : selected) seen = seen || test == found;
    if (!seen) selected.push_back(found);
  }
  if (selected.empty()) {
    for (const SchemaTest& test : tests) selected.push_back(&test);
  }
  register_schemas();
  int failed = 0;
  for (const SchemaTest* test : selected) failed += test->run();
  std::cout << selected.size() << " op(s) tested, " << failed << " check(s) failed" << std::endl;
  return failed == 0 ? 0 : 1;
}

}  // namespace opgen::schema_testing
