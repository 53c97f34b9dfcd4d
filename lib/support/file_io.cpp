#include "lib/support/file_io.h"

#include <unistd.h>
#include <cstring>
#include <fstream>
#include <mutex>
#include <system_error>

namespace poprt {

Expected<uint64_t> boundedFileSize(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Error(path.string() + ": no such file (or not a regular file)");
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error(path.string() + ": cannot read size: " + ec.message());
  if (size > max_bytes)
    return Error(path.string() + ": file is " + std::to_string(size) + " bytes, above the limit of " + std::to_string(max_bytes));
  return size;
}

Expected<std::vector<uint8_t>> readFileBytes(const std::filesystem::path& path, uint64_t max_bytes) {
  POPRT_ASSIGN_OR_RETURN(const uint64_t size, boundedFileSize(path, max_bytes));
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

OutputFiles::~OutputFiles() {
  if (!committed_) rollback();
}

void OutputFiles::rollback() {
  std::error_code ignore;
  for (const auto& s : staged_) std::filesystem::remove(s.temp, ignore);
  staged_.clear();
  // Innermost first; remove() leaves a directory alone if something else was put in it.
  for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) std::filesystem::remove(*it, ignore);
  created_dirs_.clear();
}

Status OutputFiles::makeParents(const std::filesystem::path& path) {
  std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (auto d = dir; !d.empty() && !std::filesystem::exists(d, ec); d = d.parent_path()) {
    missing.push_back(d);
    if (d == d.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!std::filesystem::create_directory(*it, ec) && ec)
      return Error(it->string() + ": cannot create directory: " + ec.message());
    created_dirs_.push_back(*it);
  }
  if (!std::filesystem::is_directory(dir, ec)) return Error(dir.string() + ": is not a directory");
  return okStatus();
}

Status OutputFiles::add(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  std::filesystem::path tmp = path;
  {
    // The bookkeeping under the lock, the write outside it: two big files write at once.
    std::lock_guard<std::mutex> lock(mutex_);
    POPRT_TRY(makeParents(path));
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return Error(path.string() + ": is a directory");
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(staged_.size());
    staged_.push_back({path, tmp});  // before writing, so a partial temporary file is removed too
  }
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return Error(path.string() + ": cannot write: " + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) return Error(path.string() + ": write failed (disk full?)");
  return okStatus();
}

Status OutputFiles::add(const std::filesystem::path& path, const std::string& text) {
  return add(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Status OutputFiles::commit() {
  for (size_t i = 0; i < staged_.size(); ++i) {
    std::error_code ec;
    std::filesystem::rename(staged_[i].temp, staged_[i].target, ec);
    if (ec) {
      staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(i));
      return Error(staged_.front().target.string() + ": cannot rename temporary file into place: " + ec.message());
    }
  }
  staged_.clear();
  committed_ = true;
  return okStatus();
}

Status writeFileAtomic(const std::filesystem::path& path, const std::string& text) {
  return writeFileAtomic(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Status checkOutputFile(const std::string& flag, const std::string& file) {
  if (file.empty()) return okStatus();
  std::filesystem::path p = std::filesystem::absolute(file);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return Error(flag + " " + file + ": is a directory");
  for (std::filesystem::path dir = p.parent_path();; dir = dir.parent_path()) {
    if (std::filesystem::exists(dir, ec)) {
      if (!std::filesystem::is_directory(dir, ec))
        return Error(flag + " " + file + ": '" + dir.string() + "' is not a directory");
      return okStatus();
    }
    if (dir == dir.parent_path()) return okStatus();
  }
}

Status writeOutputFile(const std::string& flag, const std::string& file, const std::string& text) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return Error(flag + " " + file + ": cannot create its directory: " + ec.message());
  if (Status st = writeFileAtomic(file, text); !st.ok()) return st.error().withContext(flag);
  return okStatus();
}

std::pair<std::string, std::string> splitAssignment(const std::string& text, const std::string& flag) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(flag + ": expected NAME=VALUE, got '" + text + "'");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

}  // namespace poprt
