"""poprt.compiler: models to PopEF executables, as PopRT's poprt.compiler.Compiler."""

import os

from .converter import Converter
from .errors import ApplicationError


class Compiler:
    @staticmethod
    def compile(model, **options):
        """The PopEF (bytes) of a model (onnx.ModelProto, bytes or path), with the converter's options."""
        return Converter(**options).convert_to_bytes(model, export_popef=True)["popef"]

    @staticmethod
    def compile_and_export(model, output_path, **options):
        """Compiles and writes the PopEF to output_path (through a temporary file and a rename)."""
        popef = Compiler.compile(model, **options)
        output_path = os.fspath(output_path)
        tmp = output_path + ".tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(popef)
            os.replace(tmp, output_path)
        except OSError as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise ApplicationError(f"{output_path}: cannot write the PopEF: {e.strerror}") from None
        return output_path
