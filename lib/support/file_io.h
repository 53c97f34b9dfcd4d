// File helpers: bounded reads of untrusted files and atomic writes (temp file + rename), so a
// failed run never leaves a half-written output behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "lib/support/status.h"

namespace poprt {

// Default cap on a single file we read whole: 4 GiB.
inline constexpr uint64_t kMaxFileBytes = uint64_t{4} << 30;

// The size of a regular file at most `max_bytes` long, or why not: the checks before a bounded read.
Expected<uint64_t> boundedFileSize(const std::filesystem::path& path, uint64_t max_bytes = kMaxFileBytes);
Expected<std::vector<uint8_t>> readFileBytes(const std::filesystem::path& path, uint64_t max_bytes = kMaxFileBytes);
// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
Status writeFileAtomic(const std::filesystem::path& path, std::span<const uint8_t> bytes);
Status writeFileAtomic(const std::filesystem::path& path, const std::string& text);

// "NAME=VALUE" (--input, --precision_compare_input, ...) split at the last '=' (names may hold
// '='-free punctuation); a malformed value throws UsageError naming `flag`.
std::pair<std::string, std::string> splitAssignment(const std::string& text, const std::string& flag);

// A file a flag names for writing (--summary_json, --json) must be writable where it is named:
// not a directory, no non-directory on its path (missing directories are created later, like
// --output_dir's). Checked before any work so a bad path fails before anything is written.
Status checkOutputFile(const std::string& flag, const std::string& file);
// Creates the file's missing parent directories, then writes it atomically.
Status writeOutputFile(const std::string& flag, const std::string& file, const std::string& text);

// Files a run writes together, or not at all. add() writes each to a temporary file beside its
// target (creating missing parent directories); commit() renames them all into place. Destroyed
// without a successful commit() — an error on the way, an exception — it removes the temporary
// files and the directories it created, so a failed run leaves the file system as it found it.
// (A rename that fails halfway through commit() is reported; the files renamed before it stay.)
// add() may run on several threads at once; commit() and the destructor after they are done.
class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();

  Status add(const std::filesystem::path& path, std::span<const uint8_t> bytes);
  Status add(const std::filesystem::path& path, const std::string& text);
  Status commit();

 private:
  struct Staged {
    std::filesystem::path target, temp;
  };
  Status makeParents(const std::filesystem::path& path);
  void rollback();
  std::mutex mutex_;  // staged_ and created_dirs_, for add() on several threads
  std::vector<Staged> staged_;
  std::vector<std::filesystem::path> created_dirs_;  // outermost first
  bool committed_ = false;
};

}  // namespace poprt
