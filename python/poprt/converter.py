"""poprt.Converter: the conversion library (converter/converter.h) from Python."""

import json
import os

from . import _poprt
from .errors import ApplicationError


def _model_input(model):
    """(name for messages, bytes or None) of an onnx.ModelProto, bytes or a path."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "<bytes>", bytes(model)
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model), None
    if hasattr(model, "SerializeToString"):
        return "<onnx.ModelProto>", model.SerializeToString()
    raise ApplicationError("model: expected an onnx.ModelProto, bytes or a path, got " + type(model).__name__)


class Converter:
    """Converts ONNX models with poprt-convert's options, given as keyword arguments with the flags'
    names (input_shape={"x": [1, 3, 224, 224]}, precision="fp16", batch_size=4, passes=[...], ...).
    Unknown options and bad values raise ApplicationError naming the option."""

    def __init__(self, **options):
        for key in ("input_model", "output_dir", "output_model", "summary_json", "report", "config_yaml"):
            if key in options:
                raise ApplicationError(f"poprt.Converter: option '{key}' names files; convert() returns the results "
                                       "(use poprt.compiler.Compiler.compile_and_export to write a PopEF)")
        self.options = dict(options)
        self._options_json = json.dumps(self.options)
        self.last_result = None  # what the last conversion reported: summary (JSON text), warnings, report

    def convert_to_bytes(self, model, export_popef=False):
        """The conversion's results as a dict: onnx (bytes), popef (bytes, with export_popef), summary,
        warnings, cache, report (the text poprt-convert prints)."""
        name, data = _model_input(model)
        options = dict(self.options)
        if export_popef:
            options["export_popef"] = True
        result = _poprt.convert(json.dumps(options), name, data)
        self.last_result = result
        return result

    def convert(self, model):
        """The converted model as an onnx.ModelProto (or bytes when the onnx package is missing)."""
        onnx_bytes = self.convert_to_bytes(model)["onnx"]
        try:
            import onnx
        except ImportError:
            return onnx_bytes
        return onnx.load_from_string(onnx_bytes)
