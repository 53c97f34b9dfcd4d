#!/usr/bin/python3
"""End to end: one exit-code rule for every tool, walked flag by flag. Every flag a tool's --help
lists is in the table below with a bad value and what it must give: exit 2 and a usage error for a
value no model or file could make right (a malformed or out-of-range value, an unknown name, a
combination of flags that contradict each other), exit 1 for a file that cannot be read or written
or does not fit; always one line naming the flag. A flag --help lists and the table lacks fails the
test, so a new flag cannot come without its bad-value case.

    /usr/bin/python3 tests/e2e/test_flag_values.py --bin-dir build/bin
"""

import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402

MLP = os.path.join(e2e_util.REPO_DIR, "models", "mlp.onnx")
NO_FILE = "/nonexistent/poprt/file"
UNWRITABLE = "/proc/poprt_cannot_write_here"  # /proc takes no new files

# flag -> (extra arguments that let the run reach the flag's check, bad value, exit code, mention).
# A value of None: a switch (no value); listed so that the walk knows it was considered.
CONVERT = {
    "--config_yaml": ([], NO_FILE, 1, NO_FILE),
    "--input_model": ([], NO_FILE, 1, NO_FILE),
    "--output_dir": ([], UNWRITABLE, 1, "--output_dir"),
    "--output_model": ([], UNWRITABLE + ".onnx", 1, UNWRITABLE),  # an absolute name replaces the output dir
    "--export_popef": None,
    "--input_shape": ([], "x=a,64", 2, "--input_shape"),
    "--precision": ([], "fp8", 2, "--precision"),
    "--fp16_skip_op_types": (["--precision", "fp16"], "Sofmax", 2, "Sofmax"),
    "--fp16_skip_node_names": ([], "n1", 2, "--fp16_skip_node_names"),  # without --precision fp16
    "--fp16_io": None,
    "--enable_avoid_overflow_patterns": None,
    "--fp16_keep_vector_regions": None,
    "--fp16_calibration_input": (["--precision", "fp16", "--input_shape", "x=4,64"], "x", 2, "--fp16_calibration_input"),
    "--fp16_min_cosine": ([], "1.5", 2, "--fp16_min_cosine"),
    "--precision_compare": None,
    "--precision_compare_per_layer": None,
    "--precision_compare_input": ([], "x=" + NO_FILE, 2, "--precision_compare_input"),  # needs --precision_compare
    "--serialize_matmul": ([], "mm=1", 2, "--serialize_matmul"),
    "--ipu_version": ([], "ipu3", 2, "--ipu_version"),
    "--num_ipus": ([], "0", 2, "--num_ipus"),
    "--execution_strategy": ([], "diagonal", 2, "--execution_strategy"),
    "--manual_sharding_config": (["--num_ipus", "2"], NO_FILE, 1, NO_FILE),
    "--replication_factor": ([], "0", 2, "--replication_factor"),
    "--batches_per_step": ([], "0", 2, "--batches_per_step"),
    "--tiles_per_ipu": ([], "100000", 2, "--tiles_per_ipu"),
    "--available_memory_proportion": ([], "2", 2, "--available_memory_proportion"),
    "--batch_size": ([], "-1", 2, "--batch_size"),
    "--batch_axis": (["--batch_size", "4"], "-1", 2, "--batch_axis"),
    "--passes": ([], "no_such_pass", 2, "no_such_pass"),
    "--skip_passes": ([], "no_such_pass", 2, "no_such_pass"),
    "--list_all_passes": None,
    "--print_ir_after": ([], "no_such_pass", 2, "--print_ir_after"),
    "--max_tensor_size": ([], "-5", 2, "--max_tensor_size"),
    "--show": None,
    "--check": None,
    "--check_rtol": (["--check"], "-1", 2, "--check_rtol"),
    "--check_atol": (["--check"], "-1", 2, "--check_atol"),
    "--summary_json": ([], UNWRITABLE + ".json", 1, "--summary_json"),
    "--report": (["--export_popef", "--input_shape", "x=4,64"], UNWRITABLE, 1, "--report"),
    "--convert_version": ([], "99", 2, "--convert_version"),
    "--logging_level": ([], "LOUD", 2, "--logging_level"),
    "--cache_dir": None,  # a cache that cannot be made is a warning: it never fails a conversion
    "--cache_max_bytes": ([], "-1", 2, "--cache_max_bytes"),
    "--remote_cache": ([], "ftp://cache.example/x", 2, "--remote_cache"),
    "--remote_cache_upload": None,
    "--remote_cache_header_file": (["--remote_cache", "http://127.0.0.1:9/x"], NO_FILE, 1, NO_FILE),
    "--custom_library_so_paths": ([], NO_FILE, 1, "--custom_library_so_paths"),
    "--error_format": ([], "xml", 2, "--error_format"),
}

RUN = {
    "--input": ([], "x", 2, "--input"),
    "--input_dir": ([], NO_FILE, 1, NO_FILE),
    "--fill": ([], "twos", 2, "--fill"),
    "--seed": ([], "-1", 2, "--seed"),
    "--output_dir": (["--fill", "zeros"], UNWRITABLE, 1, "--output_dir"),
    "--expected_dir": (["--fill", "zeros"], NO_FILE, 1, NO_FILE),
    "--rtol": ([], "-1", 2, "--rtol"),
    "--atol": ([], "-1", 2, "--atol"),
    "--compare": ([], "roughly", 2, "--compare"),
    "--min_cosine": ([], "2", 2, "--min_cosine"),
    "--benchmark": None,
    "--iterations": ([], "0", 2, "--iterations"),
    "--warmup": ([], "-1", 2, "--warmup"),
    "--duration": ([], "-2", 2, "--duration"),
    "--export_times": (["--fill", "zeros"], UNWRITABLE + ".json", 1, "--export_times"),
    "--profile": None,
    "--threads": ([], "0", 2, "--threads"),
    "--async": ([], "0", 2, "--async"),
    "--json": (["--fill", "zeros"], UNWRITABLE + ".json", 1, "--json"),
    "--report": (["--fill", "zeros"], UNWRITABLE, 1, "--report"),
    "--custom_library_so_paths": ([], NO_FILE, 1, "--custom_library_so_paths"),
    "--logging_level": ([], "LOUD", 2, "--logging_level"),
    "--error_format": ([], "xml", 2, "--error_format"),
}

DUMP = {
    "--json": None,
    "--custom_library_so_paths": ([], NO_FILE, 1, "--custom_library_so_paths"),
    "--logging_level": ([], "LOUD", 2, "--logging_level"),
    "--error_format": ([], "xml", 2, "--error_format"),
}

SERVE = {
    "--model": ([], "m", 2, "--model"),
    "--model_repository": ([], NO_FILE, 1, "--model_repository"),
    "--model_control_mode": (["--model_repository", "."], "sometimes", 2, "--model_control_mode"),
    "--load_model": (["--model_repository", "."], "m", 2, "--load_model"),  # without explicit mode
    "--repository_poll_secs": (["--model_repository", "."], "0", 2, "--repository_poll_secs"),
    "--host": (["--model", "m=POPEF", "--port", "0", "--grpc_port", "-1"], "192.0.2.1", 1, "--host"),  # not ours
    "--port": (["--model", "m=POPEF", "--grpc_port", "-1"], "70000", 2, "--port"),
    "--grpc_port": (["--model", "m=POPEF", "--port", "0"], "-2", 2, "--grpc_port"),
    "--max_queue_delay_us": (["--model", "m=POPEF"], "-1", 2, "--max_queue_delay_us"),
    "--dynamic_batching": None,
    "--http_threads": (["--model", "m=POPEF"], "0", 2, "--http_threads"),
    "--custom_library_so_paths": (["--model", "m=POPEF"], NO_FILE, 1, "--custom_library_so_paths"),
    "--logging_level": (["--model", "m=POPEF"], "LOUD", 2, "--logging_level"),
    "--error_format": (["--model", "m=POPEF"], "xml", 2, "--error_format"),
}


def help_flags(tool):
    r = e2e_util.run_tool(tool, ["--help"])
    if r.returncode != 0:
        raise AssertionError(r.describe())
    return [f for f in re.findall(r"^\s+(--[a-z0-9_]+)", r.stdout, re.M) if f != "--help"]


class FlagValuesTest(e2e_util.E2ETestCase):

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="poprt-e2e-flags-")
        out = os.path.join(cls.work, "mlp")
        r = e2e_util.run_tool("poprt-convert", ["--input_model", MLP, "--input_shape", "x=4,64", "--export_popef",
                                                "--output_dir", out])
        if r.returncode != 0:
            raise AssertionError(r.describe())
        cls.popef = os.path.join(out, "executable.popef")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, True)

    def walk(self, tool, table, base, defaults=None):
        listed = help_flags(tool)
        self.assertEqual(sorted(set(listed) - set(table)), [], "flags of %s without a bad-value case" % tool)
        self.assertEqual(sorted(set(table) - set(listed)), [], "cases for flags %s does not have" % tool)
        for flag, case in table.items():
            if case is None:
                continue
            extra, value, code, mention = case
            extra = [a.replace("POPEF", self.popef) for a in extra]
            # The tool's usual arguments, but for the one under test (it would be given twice).
            usual = [a for k, v in (defaults or {}).items() if k != flag for a in (k, v)]
            with self.subTest(tool=tool, flag=flag, value=value):
                r = e2e_util.run_tool(tool, base + usual + extra + [flag, value], timeout=120)
                self.assertFails(r, tool, code=code, usage=(code == 2), mentions=[mention])

    def test_poprt_convert(self):
        self.walk("poprt-convert", CONVERT, [], {"--input_model": MLP, "--output_dir": self.path("out")})

    def test_popef_run(self):
        self.walk("popef-run", RUN, [self.popef])

    def test_popef_dump(self):
        self.walk("popef-dump", DUMP, [self.popef])

    def test_popef_serve(self):
        self.walk("popef-serve", SERVE, [])


if __name__ == "__main__":
    e2e_util.main()
