// swish_runner PLUGIN.so MODEL.popef IN.bin OUT.bin
//
// Runs a PopEF whose model uses a custom op with the runtime API: the plugin is loaded first
// (loadCustomOpLibrary), then the PopEF runs as any other. The input x is read from IN.bin (raw
// float32 elements) and the output y written to OUT.bin.
#include <poprt/runtime/runtime.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace rt = poprt::runtime;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: swish_runner PLUGIN.so MODEL.popef IN.bin OUT.bin\n";
    return 2;
  }
  try {
    rt::loadCustomOpLibrary(argv[1]);
    rt::ModelRunner runner(argv[2]);
    std::ifstream in(argv[3], std::ios::binary);
    if (!in) throw rt::ApplicationError(std::string(argv[3]) + ": cannot open");
    std::vector<char> x{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    rt::OutputMemory out = runner.execute({{"x", {x.data(), x.size()}}});
    const rt::TensorMemory& y = out.at("y");
    std::ofstream(argv[4], std::ios::binary)
        .write(reinterpret_cast<const char*>(y.data.data()), static_cast<std::streamsize>(y.data.size()));
    std::cout << "y: " << y.data.size() / sizeof(float) << " float32 values -> " << argv[4] << "\n";
    return 0;
  } catch (const rt::Error& e) {
    std::cerr << "swish_runner: error: " << e.what() << "\n";
    return 1;
  }
}
