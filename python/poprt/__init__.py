"""poprt: compile ONNX models ahead of time for a simulated Graphcore IPU and run them.

    import poprt
    converted = poprt.Converter(input_shape={"x": [4, 64]}, precision="fp16").convert("model.onnx")
    popef = poprt.compiler.Compiler.compile(converted)          # PopEF bytes
    runner = poprt.runtime.ModelRunner(popef)
    outputs = runner.execute({"x": x})                          # dict of numpy arrays

The names follow Graphcore's PopRT; the work is done by poprt's C++ libraries (the conversion
library and the runtime), as in the command-line tools.
"""

from . import _poprt
from .errors import ApplicationError, PoprtError, RecoverableRuntimeError, UnrecoverableRuntimeError

_poprt.set_errors(ApplicationError, RecoverableRuntimeError, UnrecoverableRuntimeError)

from .converter import Converter  # noqa: E402
from . import compiler, runtime  # noqa: E402


def load_custom_ops(path):
    """Loads a custom-op plugin library (poprt/custom_op.h) for the rest of the process: models
    using its ops then convert, and PopEFs compiled with them run. Converter(custom_library_so_paths=[...])
    does the same for one conversion. Raises ApplicationError when the file is not such a plugin."""
    _poprt.load_custom_ops(str(path))


__version__ = "0.1.0"
__all__ = ["Converter", "compiler", "runtime", "load_custom_ops", "ApplicationError", "PoprtError", "RecoverableRuntimeError",
           "UnrecoverableRuntimeError"]
