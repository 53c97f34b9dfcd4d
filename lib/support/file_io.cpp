#include "lib/support/file_io.h"

#include <cstring>
#include <fstream>
#include <system_error>
#include <unistd.h>

namespace poprt {

Expected<std::vector<uint8_t>> readFileBytes(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Error(path.string() + ": no such file (or not a regular file)");
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error(path.string() + ": cannot read size: " + ec.message());
  if (size > max_bytes)
    return Error(path.string() + ": file is " + std::to_string(size) + " bytes, above the limit of " +
                 std::to_string(max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(path.string() + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes(size);
  if (size && !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
    return Error(path.string() + ": read failed");
  return bytes;
}

Status writeFileAtomic(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Error(path.string() + ": cannot write: " + std::strerror(errno));
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignore;
      std::filesystem::remove(tmp, ignore);
      return Error(path.string() + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignore;
    std::filesystem::remove(tmp, ignore);
    return Error(path.string() + ": cannot rename temporary file into place: " + ec.message());
  }
  return okStatus();
}

Status writeFileAtomic(const std::filesystem::path& path, const std::string& text) {
  return writeFileAtomic(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace poprt
