"""An opgen cache of this test process's own (as XDG_CACHE_HOME) for the tests that generate
from random text. The user's cache would fill with entries never read again; no cache at all
(OPGEN_NO_CACHE=1) compiled every template anew for each example and formatted each file twice
(generation, then `--check`), about half of those tests' time. For generating only: the
ONNX Runtime headers a build (or `generator.build.ort_include_dir`) needs are in the user's
cache, and under this one would be fetched again."""

import atexit
import functools
import shutil
import tempfile


@functools.cache
def scratch_cache() -> str:
    folder = tempfile.mkdtemp(prefix="opgen-cache-")
    atexit.register(shutil.rmtree, folder, True)
    return folder
