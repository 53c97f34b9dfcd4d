"""PopRT's command line over poprt: `python3 -m poprt.cli -i model.onnx --run` (or the `poprt`
script). poprt-convert's options keep their names; PopRT's short spellings (-i, -o, -v) and --run
(compile, run once on the simulator, print PopRT's one-line summary) are added. PopRT options
poprt does not have are refused by name, never ignored."""

import argparse
import os
import sys
import time

from . import _poprt
from .errors import PoprtError

# PopRT 1.x options with no poprt counterpart.
POPRT_ONLY = [
    "quantize", "calibration_loader", "calibration_with_data", "custom_library_so_paths", "custom_pattern_so_paths",
    "custom_shape_inference", "compiler_options", "disable_fast_norm", "enable_insert_remap", "enable_erf_gelu",
    "serialize_matmul", "serialize_matmul_add", "remap_mode", "infer_shape_ahead", "num_of_layers_keep_fp16",
    "only_manual_sharding", "pack_args", "print_completion", "disable_compilation_progress_bar", "framework",
    "optimize_internal_exchange_code", "perf_tuner", "eightbitsio", "merge_if_with_same_cond", "enable_compress_pattern",
    "fold_periodic_initializer", "fp8_skip_op_names", "fp8_params", "max_tensor_size_mb",
]

EXIT_ERROR, EXIT_USAGE = 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"poprt: usage error: {message}\n")
        sys.exit(EXIT_USAGE)


def _parser():
    p = _Parser(prog="poprt", description="Convert, compile and run ONNX models for the (simulated) IPU.")
    p.add_argument("-v", "--version", action="version", version="poprt " + __import__("poprt").__version__)
    p.add_argument("--run", action="store_true", help="compile, run the model once on the simulator with random "
                   "inputs and print the batch size, latency and throughput")
    for key, kind, help_text in _poprt.options():
        names = ["--" + key] + (["-i"] if key == "input_model" else ["-o"] if key == "output_dir" else [])
        if kind == "flag":
            p.add_argument(*names, dest=key, action="store_true", default=None, help=help_text)
        elif kind in ("list", "comma_list"):
            p.add_argument(*names, dest=key, action="append", default=None, help=help_text)
        else:
            p.add_argument(*names, dest=key, type={"int": int, "float": float}.get(kind, str), default=None,
                           help=help_text)
    p.add_argument("--config_yaml", default=None, help="read options from this YAML file")
    return p


def _refuse_poprt_only(argv):
    for a in argv:
        name = a[2:].split("=", 1)[0] if a.startswith("--") else None
        if name in POPRT_ONLY:
            sys.stderr.write(f"poprt: usage error: --{name} is a PopRT option poprt does not support\n")
            sys.exit(EXIT_USAGE)


def _run(popef_path):
    import numpy as np
    from .runtime import ModelRunner
    runner = ModelRunner(popef_path)
    rng = np.random.default_rng(0)
    inputs = {}
    for d in runner.get_execute_inputs():
        dtype = np.dtype(d.dtype)
        if dtype.kind == "f":
            inputs[d.name] = rng.uniform(-1, 1, d.shape).astype(dtype)
        elif dtype.kind == "b":
            inputs[d.name] = rng.integers(0, 2, d.shape).astype(dtype)
        else:
            inputs[d.name] = rng.integers(0, 4, d.shape).astype(dtype)
    t0 = time.perf_counter()
    runner.execute(inputs)
    host_ms = (time.perf_counter() - t0) * 1e3
    first = runner.get_execute_inputs()[0] if runner.get_execute_inputs() else None
    batch = first.shape[0] if first is not None and first.shape else 1
    est = runner.estimate()
    if est["seconds"] > 0:
        latency_ms = est["seconds"] * 1e3
        print(f"[Success] Running the model with batch size {batch}: latency {latency_ms:.3f} ms, throughput "
              f"{batch / est['seconds']:.1f} samples/s (estimated on the IPU; simulator {host_ms:.1f} ms)")
    else:
        print(f"[Success] Running the model with batch size {batch}: latency {host_ms:.3f} ms, throughput "
              f"{batch / (host_ms / 1e3):.1f} samples/s (on the host: no part runs on the IPU)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    _refuse_poprt_only(argv)
    args = vars(_parser().parse_args(argv))
    run = args.pop("run")
    options = {k: v for k, v in args.items() if v is not None}
    for key, kind, _ in _poprt.options():
        if kind == "comma_list" and key in options:
            options[key] = [x for item in options[key] for x in item.split(",") if x]
    if "input_model" in options:
        options["input_model"] = options["input_model"][-1] if isinstance(options["input_model"], list) \
            else options["input_model"]
    model = options.pop("input_model", None)
    if model is None and "config_yaml" not in options:
        sys.stderr.write("poprt: usage error: --input_model (-i) is required\n")
        return EXIT_USAGE
    if run:
        options["export_popef"] = True
    output_dir = options.pop("output_dir", ".")
    output_model = options.pop("output_model", None)
    try:
        if "config_yaml" in options:
            raise PoprtError("--config_yaml: use poprt-convert for config files")
        from .converter import Converter
        result = Converter(**options).convert_to_bytes(model, export_popef=options.get("export_popef", False))
        os.makedirs(output_dir, exist_ok=True)
        stem = os.path.splitext(os.path.basename(model))[0]
        onnx_path = os.path.join(output_dir, output_model or stem + ".poprt.onnx")
        with open(onnx_path, "wb") as f:
            f.write(result["onnx"])
        print(f"poprt: converted ONNX {onnx_path}")
        for w in result["warnings"]:
            print(f"  warning: {w}")
        if result["popef"]:
            popef_path = os.path.join(output_dir, "executable.popef")
            with open(popef_path, "wb") as f:
                f.write(result["popef"])
            print(f"poprt: PopEF {popef_path}")
            if run:
                _run(popef_path)
    except PoprtError as e:
        sys.stderr.write(f"poprt: error: {e}\n")
        return EXIT_ERROR
    except OSError as e:
        sys.stderr.write(f"poprt: error: {e.filename}: {e.strerror}\n")
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
