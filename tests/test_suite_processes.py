"""How the suite runs in several processes (pytest-xdist, `./dev test`): what a test starts
must not take itself for one of them, and the modules that must stay in one process say so."""

import ast
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Module fixtures cheap enough to make again in each process, and read-only
MADE_IN_EACH_PROCESS = {
    "test_importer": "reads the schema registries",
    "test_check_record": "an empty opgen cache folder: one per process serves as well as one",
}


def test_a_pytest_a_test_starts_is_a_session_of_its_own():
    """The pytest sessions the tests start (a generated package's tests) inherited xdist's
    variables, took themselves for workers, and failed where pytest-benchmark was installed."""
    assert not [name for name in os.environ if name.startswith("PYTEST_XDIST_")]


def test_every_module_fixture_is_kept_in_one_process():
    """A module-scoped fixture is made once per process: its module runs whole in one process
    (a top-level `pytestmark = pytest.mark.xdist_group(...)`; one once sat inside a script
    string and did nothing), or the fixture is made once per run (run_once.made_once)."""
    for module in sorted(TESTS.glob("test_*.py")):
        text = module.read_text()
        if 'scope="module"' not in text or "made_once(" in text:
            continue
        grouped = any(
            isinstance(node, ast.Assign)
            and any(getattr(target, "id", None) == "pytestmark" for target in node.targets)
            and "xdist_group" in ast.unparse(node.value)
            for node in ast.parse(text).body
        )
        assert grouped or module.stem in MADE_IN_EACH_PROCESS, module.name
