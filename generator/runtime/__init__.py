"""Files every output directory gets as they are, with only the generated-file header added:
the C++ runtime headers (include/opgen/) and the generated package's _support.py and
_testing.py. Each lives at its output path, relative to this directory, as real source that
compilers and linters read; the generator never imports them (see render.copy_runtime)."""
