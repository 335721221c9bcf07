// Runs a model that calls natively registered ops from C++, with no Python interpreter in the
// process: what a C++ inference server does. The test suite (tests/test_native_deployment.py)
// compiles it against the torch wheel's libtorch.
//
//   deploy_runner torchscript MODEL.pt INPUTS.pt [LIBRARY.so ...]
//   deploy_runner aoti PACKAGE.pt2 INPUTS.pt [LIBRARY.so ...]
//   deploy_runner torchscript-autograd MODEL.pt INPUTS.pt [LIBRARY.so ...]
//
// Loads each library (the native op libraries: loading registers the ops), then the model
// (torch::jit::load, or AOTInductor's AOTIModelPackageLoader), calls it on the tensors of
// INPUTS.pt (a list saved with torch.save), and prints one line per output tensor:
// "<dims>|<values>", values in float64 with 17 digits. An error prints "error: <what>" and
// exits 1; a process that maps libpython exits 3. The model runs under c10::InferenceMode, as a
// server runs it; torchscript-autograd runs it with autograd on (grad mode, the inputs'
// requires_grad as saved), as a program that forgot inference mode does.
#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>
#include <torch/serialize.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace {

bool maps_libpython() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libpython") != std::string::npos) return true;
  }
  return false;
}

std::vector<at::Tensor> read_inputs(const char* path) {
  std::ifstream file(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const c10::IValue loaded = torch::pickle_load(bytes);  // outlives the loop over its list
  std::vector<at::Tensor> inputs;
  for (const c10::IValue& value : loaded.toListRef()) inputs.push_back(value.toTensor());
  return inputs;
}

std::vector<at::Tensor> run_torchscript(const char* model_path, const std::vector<at::Tensor>& inputs) {
  torch::jit::script::Module module = torch::jit::load(model_path);
  module.eval();
  std::vector<c10::IValue> arguments(inputs.begin(), inputs.end());
  const c10::IValue result = module.forward(arguments);
  std::vector<at::Tensor> outputs;
  if (result.isTuple()) {
    for (const c10::IValue& value : result.toTupleRef().elements()) outputs.push_back(value.toTensor());
  } else {
    outputs.push_back(result.toTensor());
  }
  return outputs;
}

std::vector<at::Tensor> run_aoti(const char* package_path, const std::vector<at::Tensor>& inputs) {
  torch::inductor::AOTIModelPackageLoader loader(package_path);
  return loader.run(inputs);
}

void print_tensor(const at::Tensor& output) {
  const at::Tensor values = output.contiguous().to(at::kDouble);
  std::string line;
  for (int64_t d = 0; d < values.dim(); ++d) line += (d ? "," : "") + std::to_string(values.size(d));
  line += "|";
  const double* data = values.data_ptr<double>();
  char text[40];
  for (int64_t i = 0; i < values.numel(); ++i) {
    std::snprintf(text, sizeof text, "%s%.17g", i ? " " : "", data[i]);
    line += text;
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s torchscript|aoti MODEL INPUTS.pt [LIBRARY.so ...]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  for (int i = 4; i < argc; ++i) {
    if (dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      std::fprintf(stderr, "error: %s\n", dlerror());
      return 1;
    }
  }
  if (maps_libpython()) {
    std::fprintf(stderr, "error: a Python library is loaded in this process\n");
    return 3;
  }
  try {
    std::optional<c10::InferenceMode> inference;
    if (mode != "torchscript-autograd") inference.emplace();
    const std::vector<at::Tensor> inputs = read_inputs(argv[3]);
    const std::vector<at::Tensor> outputs =
        mode == "aoti" ? run_aoti(argv[2], inputs) : run_torchscript(argv[2], inputs);
    for (const at::Tensor& output : outputs) print_tensor(output);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  if (maps_libpython()) {
    std::fprintf(stderr, "error: a Python library was loaded while the model ran\n");
    return 3;
  }
  return 0;
}
