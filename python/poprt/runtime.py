"""poprt.runtime: run PopEF executables on the simulator (the C++ runtime's ModelRunner).

    runner = poprt.runtime.ModelRunner("executable.popef", poprt.runtime.RuntimeConfig(batching_dim=0))
    outputs = runner.execute({"x": x})               # dict name -> numpy array
    runner.execute({"x": x}, {"y": y_out})           # into the caller's arrays
    future = runner.execute_async({"x": x})          # .result() -> dict, .done()

Inputs must be C-contiguous arrays of the input's dtype and shape: they are read in place, never
copied. The GIL is released while a request runs, so several Python threads keep several requests
in flight."""

import os
import tempfile

from . import _poprt
from .errors import ApplicationError


class RuntimeConfig(dict):
    """The runtime's configuration (ModelRunnerConfig): timeout_ns, request_timeout_ns, batching_dim,
    ring_buffer_size, validate_io, device_wait_ns, memory_limit_bytes."""

    def __init__(self, **options):
        super().__init__(**options)


class IoDesc:
    """An input or output: name, dtype (numpy's name), shape."""

    def __init__(self, d):
        self.name, self.dtype, self.shape = d["name"], d["dtype"], list(d["shape"])

    def numpy_data_type(self):
        return self.dtype

    def __repr__(self):
        return f"IoDesc({self.name!r}, {self.dtype}, {self.shape})"


class ModelRunner:
    """Runs a PopEF, given as a path or as bytes."""

    def __init__(self, popef, config=None):
        config = dict(config or {})
        if isinstance(popef, (bytes, bytearray, memoryview)):
            # The runtime reads PopEFs from files: the bytes go through a private temporary file,
            # removed once loaded.
            with tempfile.NamedTemporaryFile(suffix=".popef") as f:
                f.write(bytes(popef))
                f.flush()
                self._runner = _poprt.Runner(f.name, config)
        elif isinstance(popef, (str, os.PathLike)):
            self._runner = _poprt.Runner(os.fspath(popef), config)
        else:
            raise ApplicationError("popef: expected a path or bytes, got " + type(popef).__name__)

    def get_execute_inputs(self):
        return [IoDesc(d) for d in self._runner.inputs]

    def get_execute_outputs(self):
        return [IoDesc(d) for d in self._runner.outputs]

    @property
    def inputs(self):
        return self.get_execute_inputs()

    @property
    def outputs(self):
        return self.get_execute_outputs()

    @property
    def replication_factor(self):
        return self._runner.replication_factor

    def execute(self, inputs, outputs=None):
        """Runs one request. Without `outputs`, returns a dict of new arrays; with it, fills them."""
        if outputs is None:
            return self._runner.execute(inputs)
        self._runner.execute_into(inputs, outputs)
        return outputs

    def execute_async(self, inputs):
        """Submits a request; the returned object's result() waits for the outputs."""
        return self._runner.execute_async(inputs)

    def estimate(self):
        """The static cost model's estimate of one run on a real IPU: cycles, clock_hz, seconds, ..."""
        return self._runner.estimate()


Runner = ModelRunner
