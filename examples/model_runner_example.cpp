// model_runner_example MODEL.popef IN_DIR OUT_DIR
//
// Runs a PopEF with the poprt runtime API: each input is read from IN_DIR/<name>.bin (its raw
// little-endian elements), four requests go in flight at once with executeAsync into memory this
// program owns, then one more runs with execute() into memory the runner allocates, and each output
// is written to OUT_DIR/<name>.bin. Errors are reported by category, as a server would handle them.
#include <poprt/runtime/runtime.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace rt = poprt::runtime;

namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<char> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw rt::ApplicationError(path + ": cannot open");
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

int run(const std::string& popef, const std::string& in_dir, const std::string& out_dir) {
  rt::ModelRunnerConfig config;
  config.ring_buffer_size = 4;
  rt::ModelRunner runner(popef, config);
  std::cout << "model " << popef << ": " << runner.replicationFactor() << " replica(s), " << runner.batchesPerStep()
            << " batch(es) per step\n";

  // Inputs stay in this program's memory; the runtime reads them in place.
  std::vector<std::vector<char>> inputs;
  rt::InputMemoryView in_view;
  for (const rt::DataDesc& d : runner.getExecuteInputs()) {
    if (!d.fixedSize())
      throw rt::ApplicationError("input '" + d.name + "' is not a plain tensor; this example feeds raw tensors only");
    inputs.push_back(readFile(in_dir + "/" + d.name + ".bin"));
    in_view[d.name] = {inputs.back().data(), inputs.back().size()};
    std::cout << "  input  " << d.name << "  " << d.dtype << shapeText(d.shape) << "\n";
  }

  // Four requests in flight, each with its own output memory.
  constexpr int kInFlight = 4;
  std::vector<std::vector<std::vector<char>>> outputs(kInFlight);
  std::vector<std::future<void>> futures;
  for (int r = 0; r < kInFlight; ++r) {
    rt::OutputMemoryView out_view;
    for (const rt::DataDesc& d : runner.getExecuteOutputs()) {
      if (!d.fixedSize()) throw rt::ApplicationError("output '" + d.name + "' has no fixed size; use execute(inputs)");
      outputs[r].emplace_back(d.size_in_bytes);
      out_view[d.name] = {outputs[r].back().data(), outputs[r].back().size()};
    }
    futures.push_back(runner.executeAsync(in_view, out_view));
  }
  for (auto& f : futures) f.get();
  for (int r = 1; r < kInFlight; ++r)
    if (outputs[r] != outputs[0])
      throw rt::ApplicationError("request " + std::to_string(r) + " gave other outputs than request 0");

  // One more with outputs the runner allocates, written out.
  rt::OutputMemory result = runner.execute(in_view);
  for (const rt::DataDesc& d : runner.getExecuteOutputs()) {
    const rt::TensorMemory& m = result.at(d.name);
    std::ofstream(out_dir + "/" + d.name + ".bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(m.data.data()), static_cast<std::streamsize>(m.data.size()));
    std::cout << "  output " << d.name << "  " << m.desc.dtype << shapeText(m.desc.shape) << "  -> " << out_dir << "/" << d.name
              << ".bin\n";
  }
  const rt::IpuEstimate e = runner.estimate();
  std::cout << "estimated IPU latency " << e.seconds() * 1e6 << " us per batch\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: model_runner_example MODEL.popef IN_DIR OUT_DIR\n";
    return 2;
  }
  try {
    return run(argv[1], argv[2], argv[3]);
  } catch (const rt::ApplicationError& e) {
    std::cerr << "model_runner_example: error: " << e.what() << "\n";
  } catch (const rt::RecoverableRuntimeError& e) {
    std::cerr << "model_runner_example: recoverable runtime error (submit again): " << e.what() << "\n";
  } catch (const rt::UnrecoverableRuntimeError& e) {
    std::cerr << "model_runner_example: unrecoverable runtime error: " << e.what() << "\n";
  }
  return 1;
}
