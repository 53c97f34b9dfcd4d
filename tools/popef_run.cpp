// popef-run: runs a PopEF on the IPU simulator with inputs from .npy/.pb files, writes the outputs
// as .npy and prints them with the host time and the estimated time on a real IPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "lib/support/dtype_dispatch.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "lib/support/npy.h"
#include "lib/onnx/value_io.h"
#include "sim/load_popef.h"
#include "tools/tool_common.h"

namespace poprt::tools {
namespace {

struct RunOptions {
  std::string popef;
  std::vector<std::string> inputs;
  std::string output_dir;
  std::string logging_level;
};

// "first values ... | min max mean" for a quick look at an output.
std::string summarize(const Tensor& t) {
  std::string s;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t n = t.numElements();
  Status st = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto data = t.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      double v = static_cast<double>(toCompute(data[static_cast<size_t>(i)]));
      if (i < 4) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.6g", i ? " " : "", v);
        s += buf;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
  });
  if (!st.ok()) return "(" + std::string(dtypeName(t.dtype())) + ")";
  if (n > 4) s += " ...";
  if (n == 0) return "(empty)";
  char buf[96];
  std::snprintf(buf, sizeof buf, "  | min %.6g max %.6g mean %.6g", lo, hi, sum / static_cast<double>(n));
  return "[" + s + "]" + buf;
}

Status run(const RunOptions& o) {
  POPRT_TRY(applyLogging(o.logging_level));
  std::map<std::string, std::string> files;
  for (const auto& text : o.inputs) {
    POPRT_ASSIGN_OR_RETURN(auto kv, splitAssignment(text, "--input"));
    if (!files.emplace(kv.first, kv.second).second) return Error("--input: '" + kv.first + "' is given twice");
  }
  auto t_load = std::chrono::steady_clock::now();
  POPRT_ASSIGN_OR_RETURN(sim::LoadedModel model, sim::loadPopef(o.popef));
  sim::Engine& engine = *model.engine;
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

  auto in_streams = engine.streams(exec::HostStream::Role::Input);
  std::string names;
  for (const auto* s : in_streams) names += (names.empty() ? "" : ", ") + s->name;
  for (const auto& entry : files) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 cannot capture those
    bool known = std::any_of(in_streams.begin(), in_streams.end(), [&](const auto* s) { return s->name == name; });
    if (!known) return Error("--input: the model has no input named '" + name + "' (inputs: " + names + ")");
  }
  std::vector<ops::RtValue> inputs;
  for (const auto* s : in_streams) {
    auto it = files.find(s->name);
    if (it == files.end())
      return Error(o.popef + ": input '" + s->name + "' (" + std::string(dtypeName(s->dtype)) + shapeToString(s->shape) +
                   ") was not given (hint: --input " + s->name + "=FILE.npy)");
    POPRT_ASSIGN_OR_RETURN(ops::RtValue v, onnxio::readValueFile(it->second, s->kind));
    if (auto why = sim::inputMismatch(v, *s); !why.empty()) return Error(it->second + ": " + why);
    inputs.push_back(std::move(v));
  }

  auto t0 = std::chrono::steady_clock::now();
  auto ran = engine.run(std::move(inputs));
  if (!ran.ok()) return ran.error().withContext(o.popef);
  std::vector<ops::RtValue> outputs = std::move(ran).value();
  double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  auto out_streams = engine.streams(exec::HostStream::Role::Output);
  if (!o.output_dir.empty()) {
    // Tensors as .npy; sequences and optionals as ONNX .pb, the format of the ONNX test data.
    // All staged, then renamed into place together: an output that cannot be written (a bfloat16
    // tensor has no .npy form) leaves no other output behind, and no fresh directory.
    OutputFiles files;
    std::filesystem::path dir(o.output_dir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto* s = out_streams[i];
      if (s->kind == ValueKind::Tensor) {
        const std::filesystem::path path = dir / outputFileName(i, s->name, ".npy");
        auto bytes = serializeNpy(outputs[i].tensor);
        if (!bytes.ok()) return bytes.error().withContext(path.string());
        if (auto st = files.add(path, *bytes); !st.ok()) return st.error().withContext("--output_dir " + o.output_dir);
      } else {
        const std::filesystem::path path = dir / outputFileName(i, s->name, ".pb");
        POPRT_ASSIGN_OR_RETURN(std::string bytes, onnxio::serializeValueProto(outputs[i], s->kind, s->name));
        if (auto st = files.add(path, bytes); !st.ok()) return st.error().withContext("--output_dir " + o.output_dir);
      }
    }
    POPRT_TRY(files.commit());
  }
  const auto& target = engine.executable().target;
  const auto& est = engine.estimate();
  const double latency_s = static_cast<double>(est.total()) / target.clock_hz;
  const int64_t batch = !in_streams.empty() && !in_streams[0]->shape.empty() ? in_streams[0]->shape[0] : 1;
  std::printf("popef-run: %s (%s, %u tiles)\n", o.popef.c_str(), target.name.c_str(), target.numTiles());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ops::RtValue& v = outputs[i];
    if (v.isTensor())
      std::printf("  output %zu  %s  %s%s  %s\n", i, out_streams[i]->name.c_str(), std::string(dtypeName(v.tensor.dtype())).c_str(),
                  shapeToString(v.tensor.shape()).c_str(), summarize(v.tensor).c_str());
    else if (v.kind == ops::RtValue::Kind::Sequence)
      std::printf("  output %zu  %s  sequence of %zu tensor(s)\n", i, out_streams[i]->name.c_str(), v.sequence.size());
    else
      std::printf("  output %zu  %s  empty optional\n", i, out_streams[i]->name.c_str());
  }
  if (!o.output_dir.empty()) std::printf("  outputs written to %s\n", o.output_dir.c_str());
  std::printf("  host      load %.3f ms, run %.3f ms (wall time of the simulator)\n", load_s * 1e3, host_s * 1e3);
  std::printf("  IPU est.  %llu cycles (compute %llu, exchange %llu, sync %llu) = %.3f ms at %.2f GHz, "
              "throughput %.1f samples/s at batch %lld\n",
              static_cast<unsigned long long>(est.total()), static_cast<unsigned long long>(est.compute),
              static_cast<unsigned long long>(est.exchange), static_cast<unsigned long long>(est.sync), latency_s * 1e3,
              target.clock_hz / 1e9, latency_s > 0 ? static_cast<double>(batch) / latency_s : 0.0,
              static_cast<long long>(batch));
  return okStatus();
}

}  // namespace
}  // namespace poprt::tools

int main(int argc, char** argv) {
  using namespace poprt::tools;
  RunOptions o;
  CLI::App app{"popef-run: run a PopEF on the IPU simulator"};
  app.add_option("popef", o.popef, "the PopEF file to run")->required();
  app.add_option("--input", o.inputs, "NAME=FILE.npy or NAME=FILE.pb (repeatable)");
  app.add_option("--output_dir", o.output_dir, "write each output as DIR/output_<i>_<name>.npy");
  addLoggingFlag(app, o.logging_level);
  return runTool("popef-run", app, argc, argv, [&] { return run(o); });
}
