#!/usr/bin/env bash
# The main job on the bundled default model: installs the dependencies, builds the tools,
# compiles models/mlp.onnx to a PopEF for ipu2, runs it on the simulator and prints the
# outputs, the host time and the estimated IPU time, then checks them against numpy's result.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --target poprt-convert popef-run popef-dump

out=out/quickstart
rm -rf "$out"
echo
build/bin/poprt-convert --input_model models/mlp.onnx --input_shape x=4,64 --export_popef --output_dir "$out"
echo
build/bin/popef-run "$out/executable.popef" --input x=models/mlp/input_0_x.npy --output_dir "$out/outputs"
echo
/usr/bin/python3 - "$out/outputs/output_0_y.npy" models/mlp/output_0_y.npy <<'PY'
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
print(f"quickstart: output y {'matches' if ok else 'DOES NOT match'} the numpy reference "
      f"(max abs diff {np.abs(got - want).max():.2e})")
sys.exit(0 if ok else 1)
PY
