// What the fuzz targets share: a scratch folder for the readers that take paths (with an
// external-data file, a subfolder and a symlink that points out of it), property checks that
// abort (libFuzzer records an abort as a finding, with the input), and quiet logging.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "lib/support/log.h"
#include "lib/support/status.h"

namespace poprt::fuzz {

// A finding that is not a crash: a broken property (a round trip that changes the value, an
// error message without its file name). Printed, then abort() so libFuzzer saves the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void require(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// Every refusal names what it refused: the message starts with `prefix` and says something.
inline void requireNamedError(const Error& e, std::string_view prefix) {
  const std::string& m = e.message();
  require(m.size() > prefix.size() + 2 && m.compare(0, prefix.size(), prefix) == 0,
          "error does not start with '" + std::string(prefix) + "': " + m);
}

// The scratch folder, made once per process and removed at exit:
//   data.bin     4 KiB of bytes 0..255 repeated (external data that may be read)
//   sub/         a subfolder with inner.bin (1 KiB)
//   escape       a symlink to /etc (external data must never follow it out)
//   up           a symlink to .. (likewise)
inline const std::filesystem::path& scratchDir() {
  static const std::filesystem::path dir = [] {
    namespace fs = std::filesystem;
    // In memory when possible: ext4 flushes a file rewritten in place, which would cost each
    // input milliseconds of waiting on the disk.
    std::error_code ec;
    fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string templ = (base / "poprt-fuzz-XXXXXX").string();
    if (!mkdtemp(templ.data())) fail("cannot create a scratch folder");
    fs::path d(templ);
    auto write = [](const fs::path& p, size_t n) {
      std::ofstream out(p, std::ios::binary);
      for (size_t i = 0; i < n; ++i) out.put(static_cast<char>(i & 0xff));
    };
    write(d / "data.bin", 4096);
    fs::create_directory(d / "sub");
    write(d / "sub" / "inner.bin", 1024);
    fs::create_directory_symlink("/etc", d / "escape");
    fs::create_directory_symlink("..", d / "up");
    static fs::path for_exit = d;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(for_exit, ec);
    });
    return d;
  }();
  return dir;
}

inline void writeFile(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) fail("cannot write " + path.string());
}

// True when canonical `p` lies inside canonical `root`.
inline bool isInside(const std::filesystem::path& p, const std::filesystem::path& root) {
  std::error_code ec;
  auto cp = std::filesystem::canonical(p, ec);
  if (ec) return false;
  auto cr = std::filesystem::canonical(root, ec);
  auto [r, q] = std::mismatch(cr.begin(), cr.end(), cp.begin(), cp.end());
  (void)q;
  return r == cr.end();
}

// Called from LLVMFuzzerInitialize: nothing but findings on stderr.
inline void quiet() { setLogLevel(LogLevel::Off); }

}  // namespace poprt::fuzz
