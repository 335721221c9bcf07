// Hand-written kernel of the CodebookDequantize op definition (opdefs/codebook_dequantize.yaml).
// The generator never writes this file. It is compiled into the ONNX Runtime library; the
// signature is declared in generated/codebook_dequantize/codebook_dequantize_op.h. The
// codebook is the node's attribute, copied once when the kernel was created.
//
// Every code is checked on the calling thread first (an error names the first bad one); the
// lookups are then split across the pool.
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
  for (int64_t i = 0; i < X.numel(); ++i) {
    if (X.data[i] >= entries) {
      opgen::fail(std::string(kOpType) + ": input 'X' holds code " + std::to_string(X.data[i]) + " at element " +
                  std::to_string(i) + ", past the " + std::to_string(entries) + " entries of attribute 'codebook'");
    }
  }
  ctx.parallel_for(X.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) Y.data[i] = codebook.data[X.data[i]];
  });
}

}  // namespace opgen::codebook_dequantize
