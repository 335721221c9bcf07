"""The `tests` section."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from generator.errors import ErrorCollector
from generator.model.expressions import SAMPLER_PARAMETERS
from generator.model.names import IDENTIFIER
from generator.model.tensors import Attribute, TensorParam, VariadicArity, value_name
from generator.model.tests import (
    BuiltinEquivalent,
    DTypeChoice,
    ErrorCase,
    KnownCase,
    RandomCase,
    Tests,
    Tolerance,
)
from generator.model.types import (
    AttrType,
    DType,
    TypeConstraint,
    dtype_range,
    message_value,
    type_choosers,
)
from generator.parse import read
from generator.parse.expressions import parse_reference
from generator.parse.tensors import attr_value
from generator.runtime._names import input_of
from generator.source import Node


def _tensor_literal(node: Node) -> Any:
    def check(value: object, where: Node) -> None:
        if isinstance(value, list):
            for v in value:
                check(v, where)
        elif not isinstance(value, int | float | str):  # bools are ints: bool tensors
            raise where.error(
                f"expected a number, a boolean, a string, or nested lists of them, found "
                f"{value!r}"
            )
        elif isinstance(value, int):
            read.in_int64(value, where)  # the widest integer dtype

    def shape(value: object) -> tuple[int, ...]:
        if not isinstance(value, list):
            return ()
        shapes = {shape(v) for v in value}
        if len(shapes) > 1:
            raise node.error(
                "ragged nested lists: the rows of a tensor must all have one shape, found "
                f"{sorted(shapes, key=len)}"
            )
        return (len(value), *(shapes.pop() if shapes else ()))

    value = node.plain()
    check(value, node)
    shape(value)
    return value


def _case_attribute(node: Node, attr: Attribute) -> Any:
    """A case's value of an attribute; a tensor attribute's is nested lists of numbers of its
    dtype (a list of lists is a matrix), kept as written."""
    if attr.dtype is None and attr.type is AttrType.tensor:
        raise node.error(
            f"attribute '{attr.name}' declares no element type: give it 'dtype' (float32, ...) "
            "to write its values as nested lists"
        )
    if attr.dtype is None:
        return attr_value(node, attr.type)
    dtype = attr.dtype
    value = _tensor_literal(node)
    integral = not dtype.is_floating

    def check(item: object) -> None:
        if isinstance(item, list):
            for element in item:
                check(element)
            return
        if isinstance(item, str | bool) or (integral and not isinstance(item, int)):
            kind = "an integer" if integral else "a number"
            raise node.error(
                f"attribute '{attr.name}' is a tensor of {dtype.value}: expected {kind} "
                f"or nested lists of them, found {item!r}"
            )
        assert isinstance(item, int | float)  # _tensor_literal: numbers, strings, lists
        if not integral and dtype is not DType.float64 and math.isfinite(item):
            try:
                struct.pack("<e" if dtype is DType.float16 else "<f", item)
            except OverflowError:
                raise node.error(
                    f"attribute '{attr.name}' is a tensor of {dtype.value}: {item!r} is outside "
                    f"its range and would become infinite (write .inf for an infinity)"
                ) from None
        if integral and isinstance(item, int):
            low, high = dtype_range(dtype)
            if not low <= item <= high:
                raise node.error(
                    f"attribute '{attr.name}' is a tensor of {dtype.value}: {item} is "
                    f"outside [{low}, {high}]"
                )

    check(value)
    return value


def _parse_case_attributes(
    fields: dict[str, Node], signature: _Signature, case: Node, valid: bool = True
) -> dict[str, Any]:
    """A case's attributes; a known or random case's (`valid`) must be values every runtime
    takes (an error case's may be any, to test the refusal)."""
    # Values a definition cannot spell (a graph, a tensor) are the capability check's to refuse.
    # An attribute that chooses a type variable's dtype is the tests' to set, per dtype.
    choosers = {name: c.name for name, c in type_choosers(signature.constraints).items()}
    attrs = {name: a for name, a in signature.attrs.items() if name not in choosers}
    required = {
        name
        for name, attr in attrs.items()
        if attr.required and (attr.type.takes_values or attr.dtype is not None)
    }
    if "attributes" not in fields:
        if required:
            raise case.error(
                f"give the required attribute(s) {sorted(required)} under 'attributes'"
            )
        return {}
    node = fields["attributes"]
    if node.is_mapping:
        for name, child in node.value.items():
            if name in choosers:
                raise Node(name, child.key_location or child.location, child.path).error(
                    f"attribute '{name}' chooses {choosers[name]}: the tests run every dtype "
                    f"of {choosers[name]}, setting it to each"
                )
    values = read.mapping(node, set(attrs), required)
    parsed = {name: _case_attribute(child, attrs[name]) for name, child in values.items()}
    for name, value in parsed.items():
        refusal = attrs[name].refusal(value) if valid else None
        if refusal is not None:
            raise values[name].error(
                f"{message_value(value)} {refusal}, which every runtime refuses: a known or "
                "random case runs the op (an error case may test a refusal)"
            )
    return parsed


@dataclass(frozen=True)
class _Signature:
    """What the test cases of an op name: its inputs, outputs and attributes."""

    inputs: tuple[TensorParam, ...]
    outputs: tuple[TensorParam, ...]
    attrs: dict[str, Attribute]
    constraints: tuple[TypeConstraint, ...] = ()
    exported: bool = True  # the op has a PyTorch side, whose tests export it

    def dtypes_of(self, tensor: TensorParam, only: DTypeChoice | None) -> tuple[DType, ...]:
        """The dtypes a tensor of a known case takes (`only`: the case's `dtypes`)."""
        if tensor.type_var is None:
            return (tensor.dtype,) if tensor.dtype is not None else ()
        constraint = next((c for c in self.constraints if c.name == tensor.type_var), None)
        if constraint is None or not constraint.is_tensor_only:
            return ()
        if only is not None and tensor.type_var in only:
            return tuple(d for d in constraint.dtypes if d in only[tensor.type_var])
        return constraint.dtypes

    @property
    def input_names(self) -> set[str]:
        return {t.name for t in self.inputs}

    @property
    def output_names(self) -> set[str]:
        return {t.name for t in self.outputs}

    def tensor_map(self, node: Node, names: set[str]) -> dict[str, Node]:
        """Every required input (or output) by name; optional inputs may be left out (absent:
        the tests omit trailing ones and name the others "", as ONNX does)."""
        optional = [t.name for t in self.inputs if t.optional]
        return read.mapping(node, names, names - set(optional)) if names else {}

    def value_map(self, node: Node, exported: bool = False) -> dict[str, Node]:
        """The inputs' values by name: a variadic input X is a list of its values, which are
        X_0, X_1, ... (at least its minimum number of them). `exported`: the case is exported
        (a random case of an op with a PyTorch side)."""
        values: dict[str, Node] = {}
        for name, child in self.tensor_map(node, self.input_names).items():
            tensor = next(t for t in self.inputs if t.name == name)
            if not isinstance(tensor.arity, VariadicArity):
                values[name] = child
                continue
            items = read.sequence(child)
            if len(items) < tensor.arity.min_arity:
                raise child.error(
                    f"variadic input '{name}' is a list of its values, at least "
                    f"{tensor.arity.min_arity} here; found {len(items)}"
                )
            paired = next((t for t in self.outputs if t.variadic and t.same_shape_as == name), None)
            if not items and paired is not None and len(self.outputs) == 1:
                raise child.error(
                    f"variadic input '{name}' has no value here, so the op would have no "
                    f"output (its one output, '{paired.name}', takes one value per value of "
                    "it): ONNX Runtime runs no model without outputs"
                )
            if not items and paired is not None and exported and self.exported:
                raise child.error(
                    f"variadic input '{name}' has no value here, so variadic output "
                    f"'{paired.name}' would have none, which neither ONNX exporter exports "
                    "(give it a value in a random case; a known case may leave it none)"
                )
            values.update((value_name(name, i), item) for i, item in enumerate(items))
        return values

    def output_values(self, node: Node, input_values: dict[str, Node]) -> dict[str, Node]:
        """The outputs' values by name: a variadic output Y is a list of its values, Y_0, Y_1,
        ..., one per value of the variadic input it pairs with."""
        values: dict[str, Node] = {}
        written = self.tensor_map(node, self.output_names)
        # In the op's order, whatever the file's: the tests pair them with the outputs by position.
        for tensor in self.outputs:
            if tensor.name not in written:
                continue
            name, child = tensor.name, written[tensor.name]
            paired = tensor.same_shape_as or ""
            if not tensor.variadic or paired not in {t.name for t in self.inputs if t.variadic}:
                values[name] = child  # (no variadic input to pair with: the shape rule says so)
                continue
            items = read.sequence(child)
            count = sum(1 for value in input_values if input_of(value, paired) == paired)
            if len(items) != count:
                raise child.error(
                    f"variadic output '{name}' is a list of its values, one per value of input "
                    f"'{paired}' ({count} here); found {len(items)}"
                )
            values.update((value_name(name, i), item) for i, item in enumerate(items))
        return values

    def output_of(self, value: str) -> TensorParam:
        """The output a value of output_values belongs to."""
        variadic = next((t.name for t in self.outputs if t.variadic), None)
        name = input_of(value, variadic)
        return next(t for t in self.outputs if t.name == name)

    def input_of(self, value: str) -> TensorParam:
        """The input a value of value_map belongs to."""
        variadic = next((t.name for t in self.inputs if t.variadic), None)
        name = input_of(value, variadic)
        return next(t for t in self.inputs if t.name == name)


Case = TypeVar("Case")


def parse_tests(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
    dtypes: tuple[DType, ...],
    errors: ErrorCollector,
    constraints: tuple[TypeConstraint, ...] = (),
    exported: bool = True,
) -> Tests:
    fields = read.mapping(
        node, {"tolerances", "known", "random", "errors", "builtin_equivalents"}, set()
    )
    signature = _Signature(inputs, outputs, attrs, constraints, exported)
    tensor_dtypes = tuple(
        dict.fromkeys(d for t in inputs + outputs for d in signature.dtypes_of(t, None))
    )
    tolerances = _parse_tolerances(node, fields.get("tolerances"), dtypes, errors, tensor_dtypes)

    def cases(key: str, parse: Callable[[Node, _Signature], Case]) -> tuple[Case, ...]:
        """Each case of a list, parsed on its own: one bad case does not hide the others."""
        items = read.sequence(fields[key]) if key in fields else []
        parsed = [errors.attempt(parse, item, signature) for item in items]
        return tuple(case for case in parsed if case)

    known = cases("known", _parse_known)
    random = cases("random", _parse_random)
    if "random" not in fields or not fields["random"].value:
        errors.add(node.error("give at least one case under 'random' (it drives the export tests)"))
    error_cases = cases("errors", _parse_error)
    builtins = [
        _parse_builtin(item, constraints)
        for item in (
            read.sequence(fields["builtin_equivalents"]) if "builtin_equivalents" in fields else []
        )
    ]
    return Tests(tolerances, known, random, error_cases, tuple(builtins))


def _parse_tolerances(
    node: Node,
    tol_node: Node | None,
    dtypes: tuple[DType, ...],
    errors: ErrorCollector,
    tensor_dtypes: tuple[DType, ...] = (),
) -> dict[DType, Tolerance]:
    """Required only where an output is floating (integer and bool outputs compare exactly)."""
    tolerances: dict[DType, Tolerance] = {}
    for name, child in (
        read.mapping(tol_node, {d.value for d in DType}, set()).items() if tol_node else ()
    ):
        tf = read.mapping(child, {"rtol", "atol"}, {"rtol", "atol"})
        tolerances[DType(name)] = Tolerance(read.finite(tf["rtol"]), read.finite(tf["atol"]))
        if tensor_dtypes and DType(name) not in tensor_dtypes:  # a typo or a leftover
            errors.add(
                child.error(
                    f"no input or output of the op can be {name}, so this tolerance would "
                    f"apply to nothing; they can be {[d.value for d in tensor_dtypes]}"
                )
            )
    missing = [d.value for d in dtypes if d not in tolerances]
    if missing:
        errors.add(
            (tol_node or node).error(
                f"declare tolerances for every floating output dtype; missing {missing}"
            )
        )
    return tolerances


def _integer_range(dtype: DType) -> tuple[int, int] | None:
    """The values an integer dtype holds (None: not an integer dtype)."""
    bits = {"4": 4, "8": 8, "16": 16, "32": 32, "64": 64}
    for prefix, signed in (("int", True), ("uint", False)):
        width = dtype.value.removeprefix(prefix)
        if dtype.value.startswith(prefix) and width in bits:
            n = bits[width]
            return (-(2 ** (n - 1)), 2 ** (n - 1) - 1) if signed else (0, 2**n - 1)
    return None


def _is_complex_text(text: str) -> bool:
    try:
        complex(text)
    except ValueError:
        return False
    return True


def _check_known_values(node: Node, value: Any, dtypes: tuple[DType, ...]) -> None:
    """Each value must be one the tensor's dtypes hold exactly: the tests would otherwise wrap
    it (-1 as uint16 is 65535), truncate it (1.5 as int32) or fail at run time."""
    if isinstance(value, list):
        for v in value:
            _check_known_values(node, v, dtypes)
        return
    for dtype in dtypes:
        if dtype.is_complex:
            if isinstance(value, str) and not _is_complex_text(value):
                raise node.error(
                    f"{value!r} is no {dtype.value} value (a number, or a string Python's "
                    'complex() reads, such as "1-2j" or "nan+1j")'
                )
            continue
        if (dtype is DType.string) != isinstance(value, str):
            kind = "a string" if isinstance(value, str) else "a number"
            raise node.error(f"{value!r} is {kind}, no {dtype.value} value")
        if dtype is DType.string:
            continue
        limits = _integer_range(dtype)
        if dtype is DType.bool and value not in (0, 1):
            raise node.error(f"{value!r} is no {dtype.value} value (true, false, 0 or 1)")
        integral = math.isfinite(value) and value == int(value)
        if limits is not None and (not integral or not limits[0] <= value <= limits[1]):
            raise node.error(
                f"{value!r} is no {dtype.value} value (integers from {limits[0]} to {limits[1]})"
            )


def _chosen_dtypes(node: Node, constraints: tuple[TypeConstraint, ...]) -> DTypeChoice:
    """`dtypes`: some dtypes of named type variables (`{T: [float32], Q: [int8]}`), or a list
    of the first type variable's (the one `type_constraints` lists first)."""
    if not constraints:
        raise node.error("'dtypes' chooses among the type variables' dtypes; the op has none")
    if node.is_mapping:
        names = {c.name for c in constraints}
        given = read.mapping(node, names, set())
    else:
        given = {constraints[0].name: node}
    chosen: DTypeChoice = {}
    for name, dtypes_node in given.items():
        constraint = next(c for c in constraints if c.name == name)
        only = tuple(read.dtype(d) for d in read.sequence(dtypes_node))
        allowed = constraint.dtypes if constraint.is_tensor_only else ()
        never = [d.value for d in only if d not in allowed]
        if never:  # it would never run at them
            raise dtypes_node.error(
                f"{never} are not dtypes of {name} ({[d.value for d in allowed]}), the type "
                "variable whose dtypes these choose"
            )
        if not only:
            raise dtypes_node.error(f"give at least one dtype of {name}, or leave {name} out")
        chosen[name] = only
    return chosen


def _parse_known(item: Node, signature: _Signature) -> KnownCase:
    kf = read.mapping(item, {"inputs", "outputs", "attributes", "dtypes"}, {"inputs", "outputs"})
    only = _chosen_dtypes(kf["dtypes"], signature.constraints) if "dtypes" in kf else None

    def literal(tensor: TensorParam, node: Node) -> Any:
        value = _tensor_literal(node)
        _check_known_values(node, value, signature.dtypes_of(tensor, only))
        return value

    input_values = signature.value_map(kf["inputs"])
    ins = {k: literal(signature.input_of(k), v) for k, v in input_values.items()}
    outs = {
        k: literal(signature.output_of(k), v)
        for k, v in signature.output_values(kf["outputs"], input_values).items()
    }
    return KnownCase(ins, outs, _parse_case_attributes(kf, signature, item), only)


def _parse_random(item: Node, signature: _Signature) -> RandomCase:
    rf = read.mapping(item, {"shapes", "dynamic", "sample", "attributes"}, {"shapes"})
    shapes: dict[str, tuple[int | str, ...]] = {}  # a str: a dynamic dim's symbol
    shape_nodes = signature.value_map(rf["shapes"], exported=True)
    for name, shape_node in shape_nodes.items():
        shapes[name] = tuple(_random_dim(d) for d in read.sequence(shape_node))
    dynamic = _parse_dynamic(rf["dynamic"], shapes, signature.exported) if "dynamic" in rf else {}
    unbound = set(_symbols(shapes)) - dynamic.keys()
    if unbound:
        raise item.error(f"dynamic dims {sorted(unbound)} need sizes under 'dynamic'")
    for name, shape in shapes.items():
        _check_test_tensor_size(shape_nodes[name], f"input '{name}'", shape, dynamic)
    samples: dict[str, str] = {}
    if "sample" in rf:  # by input: a variadic input's sampler draws each of its values
        given = {signature.input_of(value).name for value in shapes}
        for name, expr in read.mapping(rf["sample"], given, set()).items():
            samples[name] = parse_reference(
                expr, set(SAMPLER_PARAMETERS), "the sampler's parameters"
            )
    return RandomCase(shapes, dynamic, samples, _parse_case_attributes(rf, signature, item))


def _random_dim(node: Node) -> int | str:
    if isinstance(node.value, int) and not isinstance(node.value, bool):
        return read.integer(node, minimum=0)
    if isinstance(node.value, str) and IDENTIFIER.fullmatch(node.value):
        return node.value
    raise node.error(f"expected a size or a dynamic dim name, found {read.kind_of(node)}")


def _parse_dynamic(
    node: Node, shapes: Mapping[str, tuple[int | str, ...]], exported: bool
) -> dict[str, tuple[int, ...]]:
    dynamic: dict[str, tuple[int, ...]] = {}
    for sym, sizes in read.mapping(node, set(_symbols(shapes)), set()).items():
        values = tuple(_dynamic_size(s, exported) for s in read.sequence(sizes))
        if len(values) < 2:
            raise sizes.error("give at least two sizes so the dynamic dim is exercised")
        dynamic[sym] = values
    if len({len(sizes) for sizes in dynamic.values()}) > 1:
        counts = {sym: len(sizes) for sym, sizes in dynamic.items()}
        raise node.error(
            "every dynamic dim of a case needs the same number of sizes (the tests "
            f"run the first sizes together, then the second, ...); found {counts}"
        )
    return dynamic


def _parse_error(item: Node, signature: _Signature) -> ErrorCase:
    ef = read.mapping(item, {"shapes", "inputs", "message", "attributes", "dtypes"}, {"message"})
    if ("shapes" in ef) == ("inputs" in ef):
        raise item.error("give exactly one of 'shapes' (a shape error) or 'inputs' (values)")
    values: dict[str, Any] | None = None
    shapes: dict[str, tuple[int, ...]] = {}
    if "inputs" in ef:
        values = {k: _tensor_literal(v) for k, v in signature.value_map(ef["inputs"]).items()}
    else:
        for name, s in signature.value_map(ef["shapes"]).items():
            shapes[name] = tuple(read.integer(d, minimum=0) for d in read.sequence(s))
            _check_test_tensor_size(s, f"input '{name}'", shapes[name], {})
    message = read.string(ef["message"])
    only = _chosen_dtypes(ef["dtypes"], signature.constraints) if "dtypes" in ef else None
    return ErrorCase(
        shapes, values, message, _parse_case_attributes(ef, signature, item, valid=False), only
    )


def _parse_builtin(item: Node, constraints: tuple[TypeConstraint, ...]) -> BuiltinEquivalent:
    bf = read.mapping(item, {"domain", "op", "version", "dtypes"}, {"domain", "op", "version"})
    return BuiltinEquivalent(
        read.string(bf["domain"]),
        read.string(bf["op"]),
        read.version_number(bf["version"]),
        _chosen_dtypes(bf["dtypes"], constraints) if "dtypes" in bf else None,
    )


# A generated test allocates every random (or error) case's tensors, in several dtypes, copies
# and runtimes: 2**20 elements (8 MiB in float64) per tensor at every size is plenty to test
# with, and stops a typo such as 10**12 from allocating terabytes.
MAX_TEST_ELEMENTS = 2**20


def _dynamic_size(node: Node, exported: bool) -> int:
    """Sizes 0 and 1 too for an op without a PyTorch side: only one-node models run it."""
    size = read.integer(node)
    if size < 0:
        raise node.error(f"a size must be >= 0, found {size}")
    if size < 2 and exported:
        raise node.error(
            f"a dynamic dim's sizes must be >= 2, found {size}: the exporters (torch.export) "
            "specialise sizes 0 and 1 to constants, so the dim would not stay dynamic (an op "
            "without a PyTorch side may use them)"
        )
    return size


def _check_test_tensor_size(
    node: Node, what: str, dims: tuple[int | str, ...], dynamic: Mapping[str, tuple[int, ...]]
) -> None:
    """A test tensor must stay below MAX_TEST_ELEMENTS at each of the case's sizes."""
    for index in range(max((len(sizes) for sizes in dynamic.values()), default=1)):
        shape = [d if isinstance(d, int) else dynamic[d][index] for d in dims]
        if math.prod(shape) > MAX_TEST_ELEMENTS:
            raise node.error(
                f"{what} would have {math.prod(shape)} elements (shape {shape}); a generated "
                f"test tensor may have at most {MAX_TEST_ELEMENTS} (2**20)"
            )


def _symbols(shapes: Mapping[str, tuple[int | str, ...]]) -> list[str]:
    return [d for dims in shapes.values() for d in dims if isinstance(d, str)]
