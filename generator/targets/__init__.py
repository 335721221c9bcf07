"""The runtime targets, a module each: its views of an op and its emitter. What several
targets need about a kernel op (its views, instantiations and wrapper facts) is computed once
in dest/cpp_kernel.py."""
