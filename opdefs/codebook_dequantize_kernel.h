// Hand-written kernel of the CodebookDequantize op definition (opdefs/codebook_dequantize.yaml).
// The generator never writes this file. It is compiled into the ONNX Runtime library; the
// signature is declared in generated/codebook_dequantize/codebook_dequantize_op.h. The
// codebook is the node's attribute, copied once when the kernel was created.
//
// The lookups are split across the pool, checking every code as they go; an error names the
// first bad code.
#include <atomic>
#include <cstdint>
#include <string>

namespace opgen::codebook_dequantize {

void compute(const opgen::Context& ctx, const opgen::Input<uint8_t>& X, const opgen::Output<float>& Y,
             const Attributes& attrs) {
  const opgen::Input<float> codebook = attrs.codebook.view();
  if (codebook.rank() != 1 || codebook.numel() < 1 || codebook.numel() > 256) {
    opgen::fail(std::string(kOpType) + ": attribute 'codebook' must be 1-D with 1 to 256 entries, got shape " +
                opgen::shape_to_string(codebook.shape));
  }
  const int64_t entries = codebook.numel();
  // One pass, split across the pool: each code is looked up clamped to the codebook (so no read
  // strays), and a range that met a bad one says so. Only then is the first bad code found, on
  // this thread, for the message (the op fails, so the clamped values are never seen).
  std::atomic<bool> bad{false};
  ctx.parallel_for(X.numel(), [&](int64_t begin, int64_t end) {
    const uint8_t last = static_cast<uint8_t>(entries - 1);
    bool past = false;
    for (int64_t i = begin; i < end; ++i) {
      const uint8_t code = X.data[i];
      past |= code > last;
      Y.data[i] = codebook.data[code > last ? last : code];
    }
    if (past) bad.store(true, std::memory_order_relaxed);
  });
  if (!bad.load()) return;
  for (int64_t i = 0; i < X.numel(); ++i) {
    if (X.data[i] >= entries) {
      opgen::fail(std::string(kOpType) + ": input 'X' holds code " + std::to_string(X.data[i]) + " at element " +
                  std::to_string(i) + ", past the " + std::to_string(entries) + " entries of attribute 'codebook'");
    }
  }
}

}  // namespace opgen::codebook_dequantize
