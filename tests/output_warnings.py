"""What counts as a warning in what `./dev run`'s steps print (generation, CMake's configuration
and the compilers, `python -m generator run`), for the tests that require none there: a user
should see a warning only for something they did (issue 50).

A line counts when, in any case, it holds
- a word ending in "warning" or "warnings": CMake's "CMake Warning", "CMake Warning (dev)" and
  "CMake Deprecation Warning", a compiler's "warning:" and nvcc's "warning #177-D", Python's
  "UserWarning:", "DeprecationWarning:", ..., PyTorch's C++ "Warning:", pip's "WARNING:";
- "deprecat" (deprecated, deprecation), however it is announced;
- a log line at warning severity that may lack the word: glog's "[W1129 06:56:03.773 ...]"
  (PyTorch's C++ logging) and ONNX Runtime's "[W:onnxruntime:...]".
Not a bare "warn": a path may hold it (a worktree named wt-warn), as it may a folder named
"warnings/" (which would count; the tests' folders are named after tests without the word).
Compiler flags such as -Wno-deprecated are not shown: a build prints its commands only when one
fails, and those tests fail then anyway.
"""

import re

WARNING = re.compile(r"warnings?\b|deprecat|\[W\d{4} |\[W:onnxruntime", re.IGNORECASE)


def warning_lines(*outputs: str) -> list[str]:
    """The lines of the outputs that warn."""
    return [line for output in outputs for line in output.splitlines() if WARNING.search(line)]
