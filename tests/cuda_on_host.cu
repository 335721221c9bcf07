// The CUDA kernels' arithmetic run on the host, where CI has no GPU: nvcc compiles the
// __host__ __device__ functions for both sides, and CUDA's conversion intrinsics have host
// implementations giving the device's results. Checked bit for bit against the CPU kernels:
//  - opgen::cuda::widen and narrow (float16, bfloat16, float8 e4m3fn and e5m2) against the CPU
//    types' conversions: every value widened; narrowed, every value of the format, every
//    midpoint between neighbours and the floats either side of it, the specials, random floats;
//  - Inverse's per-matrix elimination (N <= 8, the CUDA kernel's invert_in_registers) against
//    the CPU kernel's, on random, integer (often singular), near-singular, tied-pivot and
//    non-finite matrices: the same singular matrices (the same column) and the same bits;
//  - Sum's merged broadcast layout and per-element sums
//    (over its launches of kValues values, through the kernel's own launch loop) against the
//    CPU kernel, on random shapes of rank 0 to 10 and 1 to 40 values, -0.0 included;
//  - Quantize's and Dequantize's per-element conversions, every Q and T, against the CPU
//    kernels: for Quantize the floats above over several scales (an integer Q's NaN failing with
//    the same message, through the kernel's flagged item), for Dequantize every value of Q.
// What this cannot check: the device's own instructions (sm_90 converts float8 and bfloat16 in
// hardware where the host and sm_80 run CUDA's software conversions), and the device's NaNs.
// Prints one line per check and "mismatches: 0" when all agree; exits 1 otherwise.
// Built and run by tests/test_cuda.py (nvcc -I generated -I .).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "inverse/inverse_cuda.h"
#include "opdefs/inverse_kernel.cuh"
#include "opdefs/inverse_kernel.h"
#include "sum_op/sum_op_cuda.h"
#include "opdefs/sum_op_kernel.cuh"
#include "opdefs/sum_op_kernel.h"
#include "quantize/quantize_cuda.h"
#include "opdefs/quantize_kernel.cuh"
#include "opdefs/quantize_kernel.h"
#include "dequantize/dequantize_cuda.h"
#include "opdefs/dequantize_kernel.cuh"
#include "opdefs/dequantize_kernel.h"

namespace {

int mismatches = 0;

// Each check's own random sequence (FNV-1a of its name): no two checks see the same cases.
std::mt19937 random_for(const std::string& name) {
  uint32_t hash = 2166136261u;
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return std::mt19937(hash);
}

template <typename Bits>
void report(const char* what, double input, Bits cpu, Bits cuda) {
  if (++mismatches <= 20) {
    std::printf("MISMATCH %s: input %.17g: cpu 0x%llx, cuda 0x%llx\n", what, input,
                static_cast<unsigned long long>(cpu), static_cast<unsigned long long>(cuda));
  }
}

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Every value of the format, and the floats the narrowing must round: each value, the midpoint
// between it and its upper neighbour, and the floats on either side of value and midpoint.
template <typename T, typename Code>
std::vector<float> rounding_cases(int codes, const std::string& name) {
  std::vector<float> finite;
  for (int code = 0; code < codes; ++code) {
    T value;
    value.bits = static_cast<Code>(code);
    const float f = opgen::cuda::widen(value);
    if (std::isfinite(f)) finite.push_back(f);
  }
  std::sort(finite.begin(), finite.end());
  std::vector<float> cases;
  const float huge = std::numeric_limits<float>::max();
  for (size_t i = 0; i < finite.size(); ++i) {
    const float upper = i + 1 < finite.size() ? finite[i + 1] : finite[i] * 2;
    const float midpoint = static_cast<float>((static_cast<double>(finite[i]) + upper) / 2);
    for (const float f : {finite[i], midpoint}) {
      cases.push_back(f);
      cases.push_back(std::nextafter(f, huge));
      cases.push_back(std::nextafter(f, -huge));
    }
  }
  for (const uint32_t bits : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
                              0xff800001u, 0x7fffffffu, 0xffffffffu, 0x7fa00000u, 0x00000001u,
                              0x80000001u, 0x007fffffu, 0x7f7fffffu, 0xff7fffffu}) {
    cases.push_back(float_of(bits));
  }
  std::mt19937 random = random_for(name);
  for (int i = 0; i < 1 << 20; ++i) cases.push_back(float_of(static_cast<uint32_t>(random())));
  return cases;
}

template <typename T, typename Code>
void check_conversions(const char* name, int codes) {
  int checked = 0;
  for (int code = 0; code < codes; ++code) {
    T value;
    value.bits = static_cast<Code>(code);
    const float cpu = static_cast<float>(value), cuda = opgen::cuda::widen(value);
    if (bits_of(cpu) != bits_of(cuda)) report((std::string("widen ") + name).c_str(), code, bits_of(cpu), bits_of(cuda));
    ++checked;
  }
  for (const float f : rounding_cases<T, Code>(codes, name)) {
    const T cpu(f), cuda = opgen::cuda::narrow<T>(f);
    if (cpu.bits != cuda.bits) report((std::string("narrow ") + name).c_str(), f, cpu.bits, cuda.bits);
    ++checked;
  }
  std::printf("%s conversions: %d checked\n", name, checked);
}

// The CPU kernel on one matrix: its inverse, or the column its error names.
template <typename T, typename Acc, int N>
int64_t cpu_inverse(const T* in, T* out) {
  try {
    opgen::inverse::invert_range_small<T, Acc, N>(in, out, 0, 1);
    return -1;
  } catch (const opgen::Error& error) {
    const std::string message = error.what();
    const std::string marker = "zero pivot in column ";
    const size_t at = message.find(marker);
    if (at == std::string::npos) return -2;
    return std::stoll(message.substr(at + marker.size()));
  }
}

template <typename T>
uint64_t bits_of_element(T value) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(value));
  } else if constexpr (sizeof(T) == 8) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
  } else if constexpr (sizeof(T) == 4) {
    return bits_of(value);
  } else {
    return value.bits;
  }
}

template <typename T, typename Acc, int N>
void check_inverse(const char* name, std::mt19937& random) {
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::uniform_int_distribution<int> small_integer(-2, 2);
  const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(), 1e-30, 3e-39};
  int checked = 0, singular = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    T in[N * N], cpu[N * N], cuda[N * N];
    const int kind = trial % 6;
    for (int i = 0; i < N * N; ++i) {
      double v = 0;
      switch (kind) {
        case 0: v = uniform(random); break;
        case 1: v = small_integer(random); break;  // exactly singular often
        case 2: v = small_integer(random) * 0.1; break;  // singular in exact arithmetic only
        case 3: v = (random() % 2 ? 1 : -1) * (1 + (random() % 3) * 0.25); break;  // tied pivots
        case 4: v = random() % 8 == 0 ? specials[random() % 10] : uniform(random); break;
        default: v = uniform(random) * std::ldexp(1.0, static_cast<int>(random() % 40) - 20); break;
      }
      in[i] = static_cast<T>(static_cast<Acc>(v));
    }
    if (kind == 2 && N >= 2) {  // one row a multiple of another: near singular after rounding
      for (int c = 0; c < N; ++c) in[N + c] = static_cast<T>(static_cast<Acc>(3) * static_cast<Acc>(in[c]));
    }
    const int64_t cpu_zero = cpu_inverse<T, Acc, N>(in, cpu);
    const int64_t cuda_zero = opgen::inverse::invert_in_registers<T, Acc, N>(in, cuda);
    ++checked;
    if (cpu_zero != cuda_zero) {
      report((std::string("Inverse singular column ") + name).c_str(), N, cpu_zero, cuda_zero);
      continue;
    }
    if (cpu_zero >= 0) {
      ++singular;
      continue;
    }
    for (int i = 0; i < N * N; ++i) {
      const uint64_t a = bits_of_element(cpu[i]), b = bits_of_element(cuda[i]);
      const bool both_nan = std::isnan(static_cast<double>(static_cast<Acc>(cpu[i]))) &&
                            std::isnan(static_cast<double>(static_cast<Acc>(cuda[i])));
      if (a != b && !both_nan) {
        report((std::string("Inverse ") + name + " N=" + std::to_string(N)).c_str(), i, a, b);
        break;
      }
    }
  }
  std::printf("Inverse %s N=%d: %d matrices, %d singular\n", name, N, checked, singular);
}

template <typename T, typename Acc>
void check_inverse_sizes(const char* name) {
  std::mt19937 random = random_for(std::string("Inverse ") + name);
  check_inverse<T, Acc, 1>(name, random);
  check_inverse<T, Acc, 2>(name, random);
  check_inverse<T, Acc, 3>(name, random);
  check_inverse<T, Acc, 4>(name, random);
  check_inverse<T, Acc, 5>(name, random);
  check_inverse<T, Acc, 6>(name, random);
  check_inverse<T, Acc, 7>(name, random);
  check_inverse<T, Acc, 8>(name, random);
}


// Sum as its CUDA kernel computes it, every element on the host: the merged layout, then each
// launch's values added in (the kernel's partial sums between launches), rounded once.
template <typename T>
bool cuda_sum(const opgen::Inputs<T>& X, const opgen::Output<T>& Y) {
  using namespace opgen::sum_op;
  using C = std::conditional_t<std::is_integral_v<T>, T, double>;
  Layout layout;
  try {
    layout = merged_axes(X, Y);
  } catch (const opgen::Error&) {
    return false;  // more alternating broadcast axes than the kernel takes
  }
  const OutputShape shape = output_shape(layout);
  std::vector<C> partial(static_cast<size_t>(Y.numel()));  // the partial sums between launches
  for_each_launch(X, layout, [&](const Values<T>& values, bool first, bool last) {
    for (int64_t i = 0; i < Y.numel(); ++i) {
      C& total = partial[static_cast<size_t>(i)];
      total = add_values_at<T, C>(i, values, shape, first, first ? C(0) : total);
      if (last) Y.data[i] = opgen::cuda::narrow<T>(static_cast<opgen::cuda::compute_t<T>>(total));
    }
  });
  return true;
}

template <typename T>
void check_sum(const char* name) {
  std::mt19937 random = random_for(std::string("Sum ") + name);
  const double values[] = {-0.0, 0.0, 1.5, -2.25, 1e300, -1e300, 3.0e-5, 65504.0, 1e-8, 7.0};
  int checked = 0, refused = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const int rank = static_cast<int>(random() % 11);
    opgen::Shape out(static_cast<size_t>(rank));
    for (int64_t& dim : out) dim = 1 + static_cast<int64_t>(random() % 3);
    const size_t count = 1 + random() % (trial % 10 == 0 ? 40 : 4);
    std::vector<opgen::Shape> shapes(count);
    std::vector<std::vector<T>> data(count);
    opgen::Inputs<T> X;
    opgen::Shape broadcast(static_cast<size_t>(rank), 1);
    for (size_t v = 0; v < count; ++v) {
      const size_t value_rank = random() % 3 == 0 ? static_cast<size_t>(rank) : random() % (rank + 1);
      shapes[v].assign(out.end() - static_cast<std::ptrdiff_t>(value_rank), out.end());
      for (int64_t& dim : shapes[v]) {
        if (random() % 3 == 0) dim = 1;  // broadcast along this axis
      }
      int64_t size = 1;
      for (size_t d = 0; d < value_rank; ++d) {
        size *= shapes[v][d];
        int64_t& widest = broadcast[static_cast<size_t>(rank) - value_rank + d];
        widest = std::max(widest, shapes[v][d]);
      }
      data[v].resize(static_cast<size_t>(size));
      for (T& element : data[v]) {
        if constexpr (std::is_integral_v<T>) {
          element = static_cast<T>(random());  // any 32 bits: sums wrap around
        } else {
          element = static_cast<T>(static_cast<opgen::compute_type<T>>(values[random() % 10]));
        }
      }
      X.push_back(opgen::Input<T>{data[v].data(), shapes[v]});
    }
    int64_t n = 1;
    for (const int64_t dim : broadcast) n *= dim;
    std::vector<T> cpu(static_cast<size_t>(n)), cuda(static_cast<size_t>(n));
    opgen::sum_op::compute(opgen::SerialContext{}, X, opgen::Output<T>{cpu.data(), broadcast},
                           opgen::sum_op::Attributes{});
    if (!cuda_sum(X, opgen::Output<T>{cuda.data(), broadcast})) {
      ++refused;
      continue;
    }
    ++checked;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t a = bits_of_element(cpu[static_cast<size_t>(i)]), b = bits_of_element(cuda[static_cast<size_t>(i)]);
      if (a != b) {
        report((std::string("Sum ") + name + " rank " + std::to_string(rank)).c_str(), static_cast<double>(i), a, b);
        break;
      }
    }
  }
  std::printf("Sum %s: %d cases, %d refused\n", name, checked, refused);
}

const float kScales[] = {1.0f, 0.5f, 3.0f, 0.1f, 1e-3f, 65504.0f, 1e-30f, 1.5e-45f};

// Quantize: the CUDA kernel's per-element conversion against the CPU kernel on the same values.
// An integer Q fails on a NaN quotient: those values go in one by one (the CPU kernel names the
// index, the CUDA kernel flags it).
template <typename Q, typename T>
void check_quantize(const char* name) {
  using C = opgen::compute_type<T>;
  const std::vector<float> floats = rounding_cases<opgen::float16, uint16_t>(1 << 16, std::string("Quantize ") + name);
  int checked = 0, nans = 0;
  for (const float scale_value : kScales) {
    const T scale = static_cast<T>(static_cast<C>(scale_value));
    const C step = static_cast<C>(scale);
    if (!(step > C(0))) continue;  // a scale T cannot hold (refused by both, checked elsewhere)
    std::vector<T> x;
    for (const float f : floats) {
      const T value = static_cast<T>(static_cast<C>(f));
      const C quotient = static_cast<C>(value) / step;
      if (std::is_integral_v<Q> && quotient != quotient) {
        ++nans;
        const T pair[2] = {static_cast<T>(C(1)), value};
        Q out[2];
        std::string cpu_error, cuda_error;
        try {
          opgen::quantize::compute(opgen::SerialContext{}, opgen::Input<T>{pair, {2}}, opgen::Input<T>{&scale, {}},
                                   opgen::Output<Q>{out, {2}}, opgen::quantize::Attributes{});
        } catch (const opgen::Error& error) {
          cpu_error = error.what();
        }
        long long first = -1;
        for (int64_t i = 0; i < 2; ++i) {
          const long long item = opgen::quantize::quantize_item(pair, out, i, opgen::cuda::widen(scale));
          if (item >= 0 && (first < 0 || item < first)) first = item;
        }
        try {
          opgen::quantize::fail_flagged(first);
        } catch (const opgen::Error& error) {
          cuda_error = error.what();
        }
        if (cpu_error.empty() || cpu_error != cuda_error) {
          report((std::string("Quantize NaN ") + name).c_str(), f, cpu_error.size(), cuda_error.size());
        }
        continue;
      }
      x.push_back(value);
    }
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<Q> cpu(x.size());
    opgen::quantize::compute(opgen::SerialContext{}, opgen::Input<T>{x.data(), {n}}, opgen::Input<T>{&scale, {}},
                             opgen::Output<Q>{cpu.data(), {n}}, opgen::quantize::Attributes{});
    std::vector<Q> cuda_out(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const long long item = opgen::quantize::quantize_item(x.data(), cuda_out.data(), static_cast<int64_t>(i),
                                                            opgen::cuda::widen(scale));
      const Q cuda = cuda_out[i];
      ++checked;
      if (bits_of_element(cpu[i]) != bits_of_element(cuda) || item >= 0) {
        report((std::string("Quantize ") + name).c_str(), static_cast<double>(static_cast<C>(x[i])),
               bits_of_element(cpu[i]), bits_of_element(cuda));
      }
    }
  }
  std::printf("Quantize %s: %d values, %d NaN\n", name, checked, nans);
}

// Dequantize: every value of Q, times each scale.
template <typename Q, typename T>
void check_dequantize(const char* name) {
  constexpr int codes = 1 << (8 * sizeof(Q));
  std::vector<Q> x(codes);
  for (int code = 0; code < codes; ++code) {
    if constexpr (std::is_integral_v<Q>) {
      x[static_cast<size_t>(code)] = static_cast<Q>(code);
    } else {
      x[static_cast<size_t>(code)].bits = static_cast<uint8_t>(code);
    }
  }
  int checked = 0;
  for (const float scale_value : kScales) {
    const T scale = static_cast<T>(static_cast<opgen::compute_type<T>>(scale_value));
    std::vector<T> cpu(x.size());
    opgen::dequantize::compute(opgen::SerialContext{}, opgen::Input<Q>{x.data(), {codes}}, opgen::Input<T>{&scale, {}},
                               opgen::Output<T>{cpu.data(), {codes}}, opgen::dequantize::Attributes{});
    const float step = opgen::cuda::widen(scale);
    for (size_t i = 0; i < x.size(); ++i) {
      const T cuda = opgen::dequantize::dequantized<T>(x[i], step);
      ++checked;
      if (bits_of_element(cpu[i]) != bits_of_element(cuda)) {
        report((std::string("Dequantize ") + name).c_str(), static_cast<double>(i), bits_of_element(cpu[i]),
               bits_of_element(cuda));
      }
    }
  }
  std::printf("Dequantize %s: %d values\n", name, checked);
}

// Both ops for one Q and T: "<q> to <t>".
template <typename Q, typename T>
void check_quantized_type(const char* q, const char* t) {
  const std::string name = std::string(q) + " to " + t;
  check_quantize<Q, T>(name.c_str());
  check_dequantize<Q, T>(name.c_str());
}

template <typename T>
void check_quantization(const char* t) {
  check_quantized_type<uint8_t, T>("uint8", t);
  check_quantized_type<int8_t, T>("int8", t);
  check_quantized_type<uint16_t, T>("uint16", t);
  check_quantized_type<int16_t, T>("int16", t);
  check_quantized_type<opgen::float8e4m3fn, T>("float8e4m3fn", t);
  check_quantized_type<opgen::float8e5m2, T>("float8e5m2", t);
}

}  // namespace

int main() {
  check_conversions<opgen::float16, uint16_t>("float16", 1 << 16);
  check_conversions<opgen::bfloat16, uint16_t>("bfloat16", 1 << 16);
  check_conversions<opgen::float8e4m3fn, uint8_t>("float8e4m3fn", 1 << 8);
  check_conversions<opgen::float8e5m2, uint8_t>("float8e5m2", 1 << 8);
  check_inverse_sizes<float, float>("float32");
  check_inverse_sizes<double, double>("float64");
  check_inverse_sizes<opgen::float16, float>("float16");
  check_sum<float>("float32");
  check_sum<double>("float64");
  check_sum<opgen::float16>("float16");
  check_sum<int32_t>("int32");
  check_sum<int64_t>("int64");
  check_quantization<float>("float32");
  check_quantization<opgen::float16>("float16");
  std::printf("mismatches: %d\n", mismatches);
  return mismatches == 0 ? 0 : 1;
}
