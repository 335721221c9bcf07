// Hand-written kernel of the StringReplace op definition (opdefs/string_replace.yaml).
// The generator never writes this file. It is compiled into the ONNX Runtime library; the
// signature is declared in generated/string_replace/string_replace_op.h.
//
// Each string is scanned twice: once to count the occurrences (so the result's exact length is
// known, checked against what a std::string can hold, and allocated once), then to copy.
#include <cstddef>
#include <string>
#include <string_view>

namespace opgen::string_replace {

inline size_t count_occurrences(std::string_view text, std::string_view pattern) {
  size_t count = 0;
  for (size_t at = text.find(pattern); at != std::string_view::npos;
       at = text.find(pattern, at + pattern.size())) {
    ++count;
  }
  return count;
}

inline std::string replaced(std::string_view text, std::string_view pattern,
                            std::string_view rewrite) {
  const size_t count = count_occurrences(text, pattern);
  if (count == 0) return std::string(text);
  // text.size() - count * pattern.size() cannot underflow: the occurrences do not overlap.
  const size_t kept = text.size() - count * pattern.size();
  std::string result;
  if (rewrite.size() > 0 && count > (result.max_size() - kept) / rewrite.size()) {
    opgen::fail("StringReplace: a result would be longer than a string can be");
  }
  result.reserve(kept + count * rewrite.size());
  size_t from = 0;
  for (size_t at = text.find(pattern); at != std::string_view::npos;
       at = text.find(pattern, from)) {
    result.append(text, from, at - from);
    result.append(rewrite);
    from = at + pattern.size();
  }
  result.append(text, from, std::string_view::npos);
  return result;
}

void compute(const opgen::Context& ctx, const opgen::Input<std::string>& X,
             const opgen::Output<std::string>& Y, const Attributes& attrs) {
  if (attrs.pattern.empty()) opgen::fail("StringReplace: attribute 'pattern' must not be empty");
  const std::string_view pattern = attrs.pattern;
  const std::string_view rewrite = attrs.rewrite;
  ctx.parallel_for(X.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) Y.data[i] = replaced(X.data[i], pattern, rewrite);
  });
}

}  // namespace opgen::string_replace
