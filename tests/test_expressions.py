"""Python expressions of definitions (references, gradient formulas, samplers) against the
namespace the generated modules evaluate them in: the validator (Python's symbol table over
generator/model/expressions.py's one list) refuses exactly what would raise NameError there."""

from __future__ import annotations

import builtins
import random
import subprocess
import symtable
import sys
from pathlib import Path

import pytest

from generator.api.python import tuple_display
from generator.model.expressions import EXPRESSION_MODULES, SAMPLER_PARAMETERS
from generator.parse.expressions import (
    MAX_EXPRESSION_LENGTH,
    pasteable_expression,
    undefined_names,
)

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"


def _module_namespace(path: Path) -> dict[str, object]:
    """The top-level namespace of a generated module, without running it (it loads built
    libraries): its absolute imports run, every other name it binds a stand-in."""
    source = path.read_text()
    namespace: dict[str, object] = {"__builtins__": builtins}
    for symbol in symtable.symtable(source, str(path), "exec").get_symbols():
        if symbol.is_assigned() or symbol.is_imported():
            namespace[symbol.get_name()] = object()
    for line in source.splitlines():
        if line.startswith("import "):
            exec(line, namespace)
    return namespace


# Where each kind of expression is evaluated: a generated module, and its function's parameters.
CONTEXTS = {
    "reference": (GENERATED / "inverse" / "test_inverse.py", ("X",)),
    "gradient": (GENERATED / "inverse" / "torch_op.py", ("ctx", "grad_Y", "X", "Y")),
    "sampler": (GENERATED / "inverse" / "test_inverse.py", SAMPLER_PARAMETERS),
}


@pytest.mark.parametrize("context", CONTEXTS)
def test_generated_modules_bind_what_expressions_may_name(context):
    path, _ = CONTEXTS[context]
    namespace = _module_namespace(path)
    for imported in EXPRESSION_MODULES:
        module = sys.modules[imported.module]
        assert namespace[imported.name] is module, (path, imported)
    # No top-level name of the module hides a builtin from its expressions.
    assert not set(namespace) - {"__builtins__"} & set(dir(builtins))


class _Expressions:
    """Random valid expressions whose every part runs (a lambda is called, a comprehension
    iterates once, a `:=` binds before its name is read), over the context's parameters, the
    modules and builtins expressions may name, names bound on the way and unknown names."""

    UNKNOWN = ("undefined_a", "Zq", "grad_Z", "shapes")
    # A set of ids: hashable whatever the body (an id differs from one evaluation to the next).
    COMPREHENSIONS = ("[{}]", "{{{}}}", "tuple({})", "len({{{}}})")

    def __init__(self, rng: random.Random, parameters: tuple[str, ...]) -> None:
        self.rng = rng
        self.known = [*parameters, *(m.name for m in EXPRESSION_MODULES), "len", "range"]
        self.fresh = 0
        self.in_iterable = 0  # `:=` may not appear in a comprehension's iterable

    def _name(self) -> str:
        self.fresh += 1
        return f"v{self.fresh}"

    def expression(self, depth: int, bound: tuple[str, ...]) -> str:
        choice = self.rng.randrange(8 if depth > 0 else 2)
        if choice == 0:  # a name
            pool = [*self.known, *bound, *bound]
            if self.rng.random() < 0.08:
                pool = list(self.UNKNOWN)
            return self.rng.choice(pool)
        if choice == 1:
            return str(self.rng.randrange(3))
        inner = depth - 1
        if choice == 2:
            return f"({self.expression(inner, bound)}, {self.expression(inner, bound)})"
        if choice in (3, 4):  # a lambda with every kind of parameter, called
            p, q, r, s, t, u = (self._name() for _ in range(6))
            default = self.expression(inner, bound)
            body = self.expression(inner, (*bound, p, q, r, s, t, u))
            args = ", ".join(self.expression(inner, bound) for _ in range(2))
            return f"(lambda {p}, /, {q}, *{r}, {s}, {t}={default}, **{u}: {body})({args}, {s}=0)"
        if choice == 5:  # a comprehension of one iteration; its `if` is always true
            v, w = self._name(), self._name()
            kind = self.rng.choice(self.COMPREHENSIONS)  # + dict
            body = self.expression(inner, (*bound, v, w))
            self.in_iterable += 1
            clause = f"for {v} in ({self.expression(inner, bound)},) "
            clause += f"for {w} in ({self.expression(inner, (*bound, v))},) if ({v},)"
            self.in_iterable -= 1
            # Keys hashable whatever the body: a dict's value, a set's id.
            item = {"[": f"({body})", "t": f"({body})", "l": f"0: ({body})"}.get(kind[0])
            item = item or f"id({body})"
            return kind.format(f"{item} {clause}")
        if choice == 6 and not self.in_iterable:  # `:=`, read after it binds
            w = self._name()
            value = self.expression(inner, bound)
            return f"(({w} := {value}), {self.expression(inner, (*bound, w))})[1]"
        if choice == 6:
            return self.expression(inner, bound)
        return f"f'{{{self.expression(0, bound)}!r}}'"  # (3.11: no quotes nested in one)


def _raises_name_error(text: str, namespace: dict[str, object], params: tuple[str, ...]) -> bool:
    """Evaluates the expression as the generated module does: returned by a function."""
    scope = dict(namespace)
    exec(f"def _evaluate({', '.join(params)}):\n    return (\n{text}\n    )\n", scope)
    try:
        scope["_evaluate"](*[1] * len(params))  # type: ignore[operator]
    except NameError:
        return True
    return False


@pytest.mark.parametrize("context", CONTEXTS)
def test_the_validator_refuses_exactly_what_raises_name_error(context):
    path, params = CONTEXTS[context]
    namespace = _module_namespace(path)
    rng = random.Random(f"expressions-{context}")
    refused = 0
    names = set(params) - {"ctx"}  # the function's own parameter, not the expression's
    for _ in range(400):
        text = _Expressions(rng, tuple(sorted(names))).expression(4, ())
        compile(text, "<fuzz>", "eval")  # valid Python, every one
        unknown = undefined_names(text, names)
        assert bool(unknown) == _raises_name_error(text, namespace, params), text
        refused += bool(unknown)
    assert 40 < refused < 360  # both outcomes drawn often


@pytest.mark.parametrize(
    "text",
    [
        "(lambda *v: v[0])(X)",
        "(lambda *, a=1: a)() + X",
        "(lambda **kw: kw['k'])(k=X)",
        "(y := X) + y",
        "[x + X for x in range(3)]",
        "{k: v for k, v in [(X, X)]}",
        "(lambda a: (lambda b: a + b))(X)(1)",
        "[(z := x) for x in [X]] and z",
        "f'{X!r:>{len(str(X))}}'",
        "(F.silu, np.float64(math.pi), torch.ones(1), X)",
    ],
)
def test_python_scoping_is_accepted(text):
    assert undefined_names(text, {"X"}) == set()
    assert not _raises_name_error(text, _module_namespace(CONTEXTS["reference"][0]), ("X",))


@pytest.mark.parametrize(
    "text,unknown",
    [
        ("(lambda a=b: a)(X)", {"b"}),
        ("([v for v in X], v)", {"v"}),
        ("(lambda *, a: c)(a=X)", {"c"}),
        ("re.sub('a', 'b', X)", {"re"}),  # the test module's own import, not the expression's
    ],
)
def test_free_names_are_refused(text, unknown):
    assert undefined_names(text, {"X"}) == unknown


@pytest.mark.parametrize("text", ["(yield X)", "(await X)", "[(x := 1) for x in X]"])
def test_what_pythons_compiler_refuses_is_refused(text):
    with pytest.raises(SyntaxError):
        undefined_names(text, {"X"})


SQUARE = ROOT / "tests" / "opdefs" / "square_through_silu.yaml"

BACKWARD = """
import torch
from generated.square_through_silu import torch_op
x = torch.tensor([1.5, -2.0, 0.25], dtype=torch.float64, requires_grad=True)
torch_op.square_through_silu(x).sum().backward()
torch.testing.assert_close(x.grad, 2 * x.detach())
print("backward ok")
"""


def test_a_gradient_formula_naming_F_math_and_np_runs_backward(tmp_path, run_generator):
    """`F.silu` in a formula built, then raised NameError in backward: torch_op.py imported
    none of F, math and np. (An op without a kernel: nothing to build.)"""
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / SQUARE.name).write_text(SQUARE.read_text())
    assert run_generator(cwd=tmp_path).returncode == 0
    result = subprocess.run(
        [sys.executable, "-c", BACKWARD],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert "backward ok" in result.stdout, result.stderr[-3000:]


class _Values(_Expressions):
    """Expressions whose value compares equal from one evaluation to the next (no set of ids),
    with the source's own forms around them: top-level tuples, conditionals, strings holding
    `#`, `,` and line breaks."""

    COMPREHENSIONS = ("[{}]", "tuple({})", "len({{{}}})")

    def top(self, depth: int) -> str:
        one = self.expression(depth, ())
        return self.rng.choice(
            [
                one,
                f"{one}, {self.expression(depth, ())}",  # a tuple without parentheses
                f"{one},",
                f"{one} if {self.expression(1, ())} else {self.expression(1, ())}",
                f"({one}, '#, \\\n' + str({one}))",
                f'"""a, # b\n\\\\""" + str({one})',
            ]
        )


def _noisy(text: str, rng: random.Random) -> str:
    """The expression as a definition may spell it: comments, line breaks and backslash
    continuations between its tokens, leading and trailing blanks, a trailing comment or
    backslash, inside parentheses or not (what Python cannot read must be refused)."""
    import io
    import tokenize

    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    pieces = []
    for token in tokens:
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            continue
        pieces.append(token.string)
        pieces.append(rng.choice([" ", " ", "", "  # a, comment \\\n", "\\\n", "\n"]))
    body = "".join(pieces)
    wrapped = rng.choice([body, f"(\n{body}\n)", f"({body})  # trailing, comment"])
    return rng.choice(["", " ", "\n"]) + wrapped + rng.choice(["", "\n", " \\", " # c"])


def _evaluate(statement: str, params: tuple[str, ...], namespace: dict[str, object]) -> object:
    """Runs `def _f(params): <statement>` as a generated module would, and calls it."""
    scope = dict(namespace)
    exec(f"def _f({', '.join(params)}):\n    {statement}\n", scope)
    return scope["_f"](*[1] * len(params))  # type: ignore[operator]


@pytest.mark.parametrize("context", CONTEXTS)
def test_every_accepted_expression_pastes_to_its_own_value(context):
    """A gradient formula `grad_Y, grad_Y` (a tuple), one ending in a comment or a backslash,
    one spanning lines: pasted as written into the tuple _backward returns, each gave a wrong
    count of gradients or a broken module. Every expression the validator accepts, pasted as
    the generated modules paste it (after `return`, as a tuple's item, as a call's argument),
    has the value the expression alone has; what Python cannot read alone is refused."""
    path, params = CONTEXTS[context]
    namespace = _module_namespace(path)
    namespace["_passed"] = lambda *args: args[1]
    rng = random.Random(f"pasting-{context}")
    names = set(params) - {"ctx"}
    accepted = refused = 0
    for _ in range(300):
        generator = _Values(rng, tuple(sorted(names)))
        generator.UNKNOWN = tuple(sorted(names))  # every name known: every one evaluates
        text = _noisy(generator.top(3), rng)
        try:
            compile(text.strip(), "<alone>", "eval")
            readable = len(text.strip()) <= MAX_EXPRESSION_LENGTH
        except SyntaxError:
            readable = False
        try:
            pasted = pasteable_expression(text.strip())
        except SyntaxError:
            assert not readable, text
            refused += 1
            continue
        assert readable, text
        accepted += 1
        alone = eval(text.strip(), {**namespace, **dict.fromkeys(params, 1)})
        assert _evaluate(f"return {pasted}", params, namespace) == alone, (text, pasted)
        items = _evaluate(f"return {tuple_display([pasted, pasted, 'None'])}", params, namespace)
        assert items == (alone, alone, None), (text, pasted)
        passed = _evaluate(f"return _passed('message', {pasted}, 3)", params, namespace)
        assert passed == alone, (text, pasted)
    assert accepted > 100 and refused > 30, (accepted, refused)
