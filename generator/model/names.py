"""Names: what a user name may be, what the generated code reserves, and the validation patterns."""

from __future__ import annotations

import builtins
import keyword
import re
import unicodedata

from generator.model.expressions import EXPRESSION_MODULE_NAMES, SAMPLER_PARAMETERS
from generator.model.header_macros import HEADER_MACROS

# C++ keywords and names our generated code defines or uses in the signatures that hold user
# names (a parameter named like a type or namespace hides it), and the wrappers' locals and
# parameters in the scopes of user-named views and type variables (`context`, `kernel`, ...);
# Python's come from `keyword`.
CPP_RESERVED = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
    co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit
    export extern false float for friend goto if inline int long mutable namespace new noexcept not
    not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq attrs ctx
    context raw_context info raw_info kernel index types optional shapes pool serial release
    parallel characteristics
    opgen std Ort py pybind11 Attributes OutputShapes OutputShapesOf int8_t int16_t int32_t
    int64_t uint8_t size_t""".split()
)


# Python's builtins that the generated Python calls in functions whose parameters are user
# names (tests/test_names.py finds them in the generated modules).
PYTHON_BUILTINS_CALLED = frozenset(
    """AttributeError NotImplementedError RuntimeError ValueError all any bool enumerate float
    int len list map staticmethod str sum tuple zip""".split()
)

# Names the generated Python/C++ uses next to user names.
GENERATED_RESERVED = frozenset(
    {"onnx", "op", "g", "dtype", "module", "keyset"}
    # what expressions name beside the user's names: the generated modules import these
    | EXPRESSION_MODULE_NAMES
    | set(SAMPLER_PARAMETERS)
    | {"aligned"}  # the C++ adapters' opgen::AlignedCopies beside the input views
    # module-level names of the op modules that functions with user-named parameters call
    # (an attribute named _support hid the support module from every call)
    | {"_support", "_testing", "symbolic_helper", "Opset", "TORCH_OP"}
    | {"_ctx"}  # the fake kernel's, beside the data-dependent sizes
    | PYTHON_BUILTINS_CALLED
)

# The members of the ONNX Runtime wrappers (Ort::CustomOpBase and its kernel), class templates
# over the type variables: a type variable so named would be redeclared (tests/test_names.py
# reads them from the templates).
WRAPPER_MEMBER_NAMES = frozenset(
    """ComputeV2 CreateKernelV2 GetExecutionProviderType GetInputCharacteristic GetInputType
    GetInputTypeCount GetName GetOutputCharacteristic GetOutputType GetOutputTypeCount
    GetVariadicInputHomogeneity GetVariadicInputMinArity GetVariadicOutputHomogeneity
    GetVariadicOutputMinArity""".split()
)


# An op id (the definition's file stem) names generated/<op_id>/, generated/docs/<op_id>.md and
# the C++ namespace opgen::<op_id>, so it must not be a shared output entry or a name the
# support headers declare in namespace opgen (tests/test_definition_errors.py checks both
# lists against the generated output).
SHARED_OUTPUT_NAMES = frozenset(
    {"CMakeLists", "__init__", "_support", "_testing", "docs", "domains", "include", "index"}
    | {"_names"}  # generated/_names.py, the artifact names' one owner
    | {"_shapes", "_exporters"}  # generated/_shapes.py and _exporters.py, which _support re-exports
    | {"_cuda"}  # generated/_cuda.py, the way to the CUDA libraries
    | {"_package", "pyproject", "_lib"}  # the package's name and version; its wheel's files
)
# The generated package's own top-level names: an op module of one of these names would hide
# it (or be hidden) in the package's namespace.
PACKAGE_NAMES = frozenset(
    """OPS DOMAIN_LIBRARIES DEVICE_DOMAINS OVERRIDES register_all custom_translation_table
    custom_opsets
    torchscript_overrides add_functions get_library_path ort_library build_info
    export_model""".split()
    # its imports and private names
    + "contextlib os re sys tempfile warnings _registered _exported_ops".split()
    + "_without_unused_opset_warnings _without_exporter_notices _without_none_args _by_parameter _by_argument".split()
    # Python's builtins: an op module named `max` would hide the builtin from the package's
    # own code (custom_opsets calls max), and tomorrow's code may call any other.
    + dir(builtins)
)


OPGEN_NAMESPACE_NAMES = frozenset(
    """AlignedCopies AllocatedOutput Context Error Float8Format Input Inputs Output Outputs SerialContext Shape TensorAttribute
    ShapeRefs SymDim
    TensorView append_dims axis_size bfloat16 broadcast_dim broadcast_offsets broadcast_shapes
    check_arity check_extent check_paired_count checked_numel compute_type compute_type_of data_dependent_dim dim_add
    dim_floor_div dim_mul dim_sub dim_to_string each_shape element_count elements_touched fail
    fail_overflow float16 float8 float8e4m3fn float8e4m3fnuz float8e5m2 float8e5m2fnuz floor_div int4 int4_of is_4bit items_per_task join_present kShapeEnd ort pack_4bit packed_4bit_bytes uint4 unpack_4bit utf8_sequence
    py_support quoted reduced_shape schema schema_testing shape_to_string torch_support
    cuda ort_cuda torch_cuda""".split()
)


# Global names that code inside namespace opgen (the runtime headers, include/opgen/*.h) uses
# unqualified: an op id is namespace opgen::<op_id>, which would hide one of them there (C types
# and functions, ONNX Runtime's and PyTorch's C APIs, CUDA's). tests/test_definition_errors.py
# compiles every header with each name an op id may take declared that way. (Names beginning
# with "__", the implementation's, are refused as op ids too.)
RUNTIME_GLOBAL_NAMES = frozenset(
    """uint16_t uint32_t uint64_t uintptr_t stderr madvise dladdr realpath Dl_info
    ONNXTensorElementDataType OrtApi OrtOpAttr OrtOpAttrType OrtShapeInferContext OrtStatus
    OrtStatusPtr OrtTensorTypeAndShapeInfo OrtValue
    AtenTensorHandle StableIValue StableListHandle StringHandle torch_call_dispatcher
    torch_delete_list torch_delete_string torch_exception_get_what_without_backtrace
    torch_list_get_item torch_list_size torch_string_c_str torch_string_length""".split()
)


def is_runtime_global_name(name: str) -> bool:
    # and the families: PyTorch's shim functions, ONNX Runtime's C enumerators
    prefixes = ("__", "aoti_torch_", "ONNX_TENSOR_ELEMENT_DATA_TYPE_", "ORT_")
    return name in RUNTIME_GLOBAL_NAMES or name.startswith(prefixes)


# Names the generated C++ declares in each op's namespace opgen::<op_id>, where user names
# are parameters, locals and template parameters (checked against the output the same way).
OP_NAMESPACE_NAMES = frozenset(
    """AttributeProto Attributes Dim FunctionNodes FunctionOpsets InferOutputShapes
    InferTypesAndShapes ModelProto OpSchema OrtKernel OrtOp OutputShapes OutputShapesOf
    RegisterSchema RunSchemaTest add_ort_ops bind boxed_autograd_kernel boxed_cpu_kernel compute
    cpu_kernel infer_shapes kOpType make_model only_node run
    InferCudaOutputShapes OrtCudaKernel OrtCudaOp add_ort_cuda_ops boxed_cuda_kernel compute_cuda
    cuda_kernel""".split()
)


# Validation patterns: \A and \Z, and always fullmatch(), because `$` also matches before a final
# "\n" ("Op\n" would pass and the newline reach the generated code).
IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


# ONNX's own domains (`ai.onnx` is the default domain "" by name): a custom-op library cannot
# serve them, and a schema registered there would shadow ONNX's own.
ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")


def opset_variable(domain: str) -> str:
    """Module-level name of the onnxscript Opset of a domain in the exporters' Python ("" is
    the standard domain): a domain named as that one is refused."""
    return "_ONNX" if not domain else "_" + domain.replace(".", "_").upper()


# The attributes of onnxscript's Opset, through which the exporters call an op by its type
# (`_MY_OPS.<op type>(...)`): an op type so named would be the attribute (tests/test_names.py).
ONNXSCRIPT_OPSET_ATTRIBUTES = frozenset({"cache", "domain", "version"})


DOMAIN = re.compile(r"\A[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\Z")


def domain_problem(domain: str) -> str | None:
    """Why a definition's domain cannot be `domain`, or None."""
    if not DOMAIN.fullmatch(domain):
        return f"'{domain}' is not a dotted lower-case domain name"
    if domain in ONNX_DOMAINS:
        return (
            f"'{domain}' is ONNX's own domain: a custom-op library cannot serve it and a "
            "schema there would shadow ONNX's; use a domain of your own"
        )
    if opset_variable(domain) == opset_variable(""):
        return (
            f"'{domain}' would be named in the generated Python as ONNX's standard domain "
            "is (_ONNX); use a domain of your own"
        )
    if len(domain) > MAX_NAME_LENGTH:
        return (
            f"a domain may have at most {MAX_NAME_LENGTH} characters (file names are derived "
            f"from it), found {len(domain)}"
        )
    return None


def default_domain(package: str) -> str:
    """The domain `opgen new` and `opgen import` give a package's ops unless told: the
    package's name in lower case (a valid package name may hold capitals, a domain may not),
    with `_ops` where that is no valid domain (`onnx`), cut to the longest domain."""
    domain = package.lower()
    if domain_problem(domain):
        domain = domain[: MAX_NAME_LENGTH - len("_ops")].rstrip("_") + "_ops"
    return domain


TORCH_NAME = re.compile(r"\A([a-z_][a-z0-9_]*)::([a-z_][a-z0-9_]*)\Z")


def is_implementation_name(name: str) -> bool:
    """Whether C++ reserves the name to its compiler and library everywhere (their macros, on
    any platform, may take it): a name holding "__", or "_" and a capital letter first."""
    return "__" in name or re.match(r"_[A-Z]", name) is not None


def reserved_reason(name: str) -> str | None:
    """Why generated code cannot declare a user name (a tensor, attribute, type variable, size
    symbol or op id), or None where it can."""
    if name in HEADER_MACROS:
        return (
            "is a macro of the headers the generated C++ includes (C, C++, ONNX, ONNX Runtime, "
            "PyTorch, pybind11, Python or CUDA), which would replace it"
        )
    if name.endswith("_EXPORTS"):
        return "is a macro CMake defines when it compiles a shared library (<target>_EXPORTS)"
    if is_implementation_name(name):
        return "is reserved to the C++ implementation (a name holding '__', or '_' and a capital)"
    if (
        keyword.iskeyword(name)
        or name in CPP_RESERVED
        or name in GENERATED_RESERVED
        or name in OP_NAMESPACE_NAMES
        or name in WRAPPER_MEMBER_NAMES
    ):
        return "is reserved in Python, C++ or the generated code"
    return None


def is_reserved(name: str) -> bool:
    """Whether a tensor, attribute or type variable name is taken in some target."""
    return reserved_reason(name) is not None


# An op id and a domain become parts of file names (generated/<op_id>/<op_id>_schema_test.cc,
# libopgen_<domain>.so), and tools derive longer ones from those:
# `.<name>.opgen-<pid>-<random>.tmp` while writing, CMake's `<op_id>_schema_test.cc.o.d`,
# Python's `test_<op_id>.cpython-311-pytest-8.3.4.pyc`. 128 characters leaves room for every one of
# them within the usual 255-byte limit of a file name.
MAX_NAME_LENGTH = 128


ATEN_OVERLOAD = re.compile(
    r"\A([a-z_][a-z0-9_]*)::([a-z_][a-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\Z"
)


# What `torch.ops.<namespace>.<name>` would find before an op: attributes of torch.ops (for a
# namespace) and of its namespaces (for a name); and the module-level names of the generated
# torch_op.py, which calls the op as _OP (tests/test_names.py checks all three).
TORCH_OPS_ATTRIBUTES = frozenset({"_dir", "import_module", "load_library", "loaded_libraries"})
TORCH_OP_NAMESPACE_ATTRIBUTES = frozenset({"_dir", "name"})
TORCH_OP_MODULE_NAMES = (
    frozenset("""SCHEMA _Differentiable _LIBRARY _OP __getattr__ _autograd _backward _cpu _fake
    _legacy_custom_op _setup_context _support onnx""".split()) | EXPRESSION_MODULE_NAMES
)  # the gradient formulas' (torch among them)


# Namespaces PyTorch defines ops in (torch 2.13: the namespaces of
# torch._C._dispatch_get_all_op_names() and torch._C._jit_get_all_schemas() after `import
# torch`, plus Python-only `higher_order` and the `torchvision` package's). A new op there
# clashes with PyTorch's own, or would pass for one. torch is too slow to import here:
# tests/test_hostile_definitions.py checks this list against the installed torch.
TORCH_NAMESPACES = frozenset(
    """_c10d_functional _c10d_functional_autograd _dtensor _native _quantized _test aten c10d
    debug_mode_ops debugprims export higher_order inductor inductor_prims mkl mkldnn
    mkldnn_prepacked onednn onnx prim prims profiler quantization quantized rngprims sparse
    static_runtime symm_mem torchvision""".split()
)


# Characters a path may not hold: generated C++ (#include "..."), CMake and Python spell paths.
_UNSPELLABLE = {
    '"': "a double quote, which ends a C++ #include path",
    "\\": "a backslash, which C++ #include paths and CMake take as an escape",
    ";": "a semicolon, which CMake takes as a list separator",
}


def unspellable(text: str) -> str | None:
    """What in a path generated files cannot spell (a control character, a byte that is not
    UTF-8, a quote, a backslash, a semicolon), or None."""
    for character in text:
        if unicodedata.category(character) in ("Cc", "Cs", "Zl", "Zp"):
            if "\udc80" <= character <= "\udcff":
                return "a byte that is not UTF-8"
            return f"the control character {character!r}"
        if character in _UNSPELLABLE:
            return _UNSPELLABLE[character]
    return None
