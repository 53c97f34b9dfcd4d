"""The poprt Python package against ONNX Runtime's stored outputs (../shared/models) and numpy:
conversion, fp16, the runtime (sync, into arrays, async, threads), errors for bad arrays and
options, PopEF bytes round trip, PopRT's command line."""

import glob
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import poprt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "..", "shared", "models")
MLP = os.path.join(ROOT, "models", "mlp.onnx")


def stored(name):
    d = os.path.join(MODELS, name)
    if not os.path.isdir(d):
        pytest.skip(f"{d} is not here")
    inputs = {}
    for f in sorted(glob.glob(os.path.join(d, "input_*.npy"))):
        inputs[os.path.basename(f)[:-4].split("_", 2)[2]] = np.load(f)
    outputs = {os.path.basename(f)[:-4].split("_", 2)[2]: np.load(f)
               for f in sorted(glob.glob(os.path.join(d, "output_*.npy")))}
    return os.path.join(MODELS, name + ".onnx"), inputs, outputs


def mlp_inputs():
    return {"x": np.load(os.path.join(ROOT, "models", "mlp", "input_0_x.npy"))}


def mlp_expected():
    return np.load(os.path.join(ROOT, "models", "mlp", "output_0_y.npy"))


@pytest.fixture(scope="module")
def mlp_popef():
    return poprt.compiler.Compiler.compile(MLP, input_shape={"x": [4, 64]})


@pytest.mark.parametrize("name", ["yunet_face", "resnet20_cifar", "mnist_cntk"])
def test_converts_and_runs_shared_models_like_onnx_runtime(name):
    path, inputs, expected = stored(name)
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    converted = poprt.Converter(input_shape=shapes).convert(path)
    assert len(converted.graph.node) > 0
    runner = poprt.runtime.ModelRunner(poprt.compiler.Compiler.compile(converted))
    got = runner.execute(inputs)
    assert set(got) == set(expected)
    for k, want in expected.items():
        np.testing.assert_allclose(got[k], want, rtol=1e-3, atol=1e-4, err_msg=k)


def test_fp16_through_the_python_api():
    path, inputs, expected = stored("resnet20_cifar")
    popef = poprt.compiler.Compiler.compile(path, input_shape={k: list(v.shape) for k, v in inputs.items()},
                                            precision="fp16")
    got = poprt.runtime.ModelRunner(popef).execute(inputs)
    for k, want in expected.items():
        g, w = got[k].astype(np.float64).ravel(), want.astype(np.float64).ravel()
        cosine = g @ w / (np.linalg.norm(g) * np.linalg.norm(w))
        assert cosine > 0.999, (k, cosine)


def test_converter_takes_a_model_proto_bytes_or_path():
    import onnx
    by_path = poprt.Converter(input_shape={"x": [4, 64]}).convert(MLP)
    by_bytes = poprt.Converter(input_shape={"x": [4, 64]}).convert(open(MLP, "rb").read())
    by_proto = poprt.Converter(input_shape={"x": [4, 64]}).convert(onnx.load(MLP))
    assert by_path.SerializeToString() == by_bytes.SerializeToString() == by_proto.SerializeToString()
    assert [d.dim_value for d in by_path.graph.input[0].type.tensor_type.shape.dim] == [4, 64]


def test_popef_bytes_round_trip_and_file(tmp_path, mlp_popef):
    path = poprt.compiler.Compiler.compile_and_export(MLP, tmp_path / "m.popef", input_shape={"x": [4, 64]})
    assert open(path, "rb").read() == mlp_popef  # deterministic, whatever the route
    for popef in (mlp_popef, path):
        got = poprt.runtime.ModelRunner(popef).execute(mlp_inputs())["y"]
        np.testing.assert_allclose(got, mlp_expected(), rtol=1e-4, atol=1e-5)


def test_outputs_into_caller_arrays_and_io_descriptions(mlp_popef):
    runner = poprt.runtime.ModelRunner(mlp_popef)
    (x,), (y,) = runner.get_execute_inputs(), runner.get_execute_outputs()
    assert (x.name, x.dtype, x.shape, y.name, y.shape) == ("x", "float32", [4, 64], "y", [4, 10])
    out = {"y": np.zeros((4, 10), np.float32)}
    runner.execute(mlp_inputs(), out)
    np.testing.assert_allclose(out["y"], mlp_expected(), rtol=1e-4, atol=1e-5)
    assert runner.estimate()["cycles"] > 0
    frozen = np.zeros((4, 10), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(poprt.ApplicationError, match="output 'y': the array is read-only"):
        runner.execute(mlp_inputs(), {"y": frozen})


def test_async_requests_from_several_threads(mlp_popef):
    runner = poprt.runtime.ModelRunner(mlp_popef)
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1, 1, (4, 64)).astype(np.float32) for _ in range(8)]
    want = [runner.execute({"x": x})["y"] for x in xs]
    results = [None] * len(xs)

    def worker(i):
        pending = runner.execute_async({"x": xs[i]})
        results[i] = pending.result()["y"]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, w in zip(results, want):
        np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("inputs,message", [
    ({"x": np.zeros((4, 64), np.float64)}, "input 'x': expected dtype float32, got float64"),
    ({"x": np.zeros((4, 63), np.float32)}, "input 'x': expected shape [4,64], got [4,63]"),
    ({"x": np.zeros((64, 4), np.float32).T}, "input 'x': the array is not C-contiguous"),
    ({"x": np.broadcast_to(np.zeros(64, np.float32), (4, 64))}, "input 'x': the array is not C-contiguous"),
    ({"x": np.zeros((8, 64), np.float32)[::2]}, "input 'x': the array is not C-contiguous"),
    ({"x": np.zeros((4, 64), ">f4")}, "input 'x': expected dtype float32, got >f4"),
    ({}, "input 'x' is missing"),
    ({"x": np.zeros((4, 64), np.float32), "z": np.zeros(1)}, "input 'z': the model has no such input (inputs: x)"),
    ({"x": [[0.0] * 64] * 4}, "input 'x': expected a numpy array"),
])
def test_bad_arrays_raise_application_errors(mlp_popef, inputs, message):
    runner = poprt.runtime.ModelRunner(mlp_popef)
    with pytest.raises(poprt.ApplicationError) as e:
        runner.execute(inputs)
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)


def test_bad_options_and_models_name_what_is_wrong(tmp_path):
    with pytest.raises(poprt.ApplicationError, match="key 'precision': expected a string, got a list"):
        poprt.Converter(precision=["fp16"]).convert(MLP)
    with pytest.raises(poprt.ApplicationError, match="key 'batch_size': expected an integer"):
        poprt.Converter(batch_size="four").convert(MLP)
    with pytest.raises(poprt.ApplicationError, match="unknown key 'precison'"):
        poprt.Converter(precison="fp16").convert(MLP)
    with pytest.raises(poprt.ApplicationError, match="--precision: expected fp32 or fp16, got 'fp8'"):
        poprt.Converter(precision="fp8").convert(MLP)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(poprt.ApplicationError, match="bad.onnx: not a valid ONNX model"):
        poprt.Converter().convert(bad)
    with pytest.raises(poprt.ApplicationError, match="not a valid ONNX model"):
        poprt.Converter().convert(b"garbage")
    with pytest.raises(poprt.ApplicationError):
        poprt.runtime.ModelRunner(b"not a popef")


def run_cli(*args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "poprt.cli", *args], capture_output=True, text=True, env=env)


def test_poprt_command_line_runs_the_model(tmp_path):
    r = run_cli("-i", MLP, "--input_shape", "x=4,64", "-o", str(tmp_path), "--run")
    assert r.returncode == 0, r.stderr
    assert "[Success] Running the model with batch size 4: latency" in r.stdout
    assert (tmp_path / "executable.popef").exists() and (tmp_path / "mlp.poprt.onnx").exists()


def test_poprt_command_line_refuses_popr_options_it_lacks(tmp_path):
    r = run_cli("-i", MLP, "--quantize", "-o", str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.strip() == "poprt: usage error: --quantize is a PopRT option poprt does not support"
    assert not list(tmp_path.iterdir())
    assert run_cli("-v").stdout.startswith("poprt ")


def test_converter_shares_the_remote_compile_cache(tmp_path):
    """poprt.Converter takes the remote cache's options: a conversion in memory uploads its results,
    another (an empty local cache) gets byte-identical ones from the server."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
    from webdav_server import NGINX, Nginx
    if not os.path.exists(NGINX):
        pytest.skip("nginx is not installed (scripts/install-deps.sh installs nginx-light)")
    server = Nginx(str(tmp_path / "nginx")).start()
    try:
        common = {"input_shape": {"x": [4, 64]}, "remote_cache": server.url()}
        first = poprt.Converter(**common, remote_cache_upload=True, cache_dir=str(tmp_path / "a"))
        made = first.convert_to_bytes(MLP, export_popef=True)
        assert made["cache"] == "miss"
        second = poprt.Converter(**common, cache_dir=str(tmp_path / "b")).convert_to_bytes(MLP, export_popef=True)
        assert second["cache"] == "remote hit"
        assert (second["onnx"], second["popef"]) == (made["onnx"], made["popef"])
        again = poprt.Converter(**common, cache_dir=str(tmp_path / "b")).convert_to_bytes(open(MLP, "rb").read(),
                                                                                           export_popef=True)
        assert again["cache"] == "hit" and again["popef"] == made["popef"]
    finally:
        server.stop()
