// How the CLIs print errors: "<tool>: error: MESSAGE" lines (the default), or with
// --error_format json one JSON object per line, for CI systems to parse:
//   {"tool": ..., "kind": "error"|"usage"|"internal", "code": EXIT_CODE, "error": MESSAGE,
//    "flag": ..., "file": ..., "node": ..., "model": ...}
// flag/file/node are there when the message names them (a message starting with --FLAG or a
// path, "node 'NAME'" in it); model when a batch conversion knows which model failed.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

namespace poprt::tools {

enum class ErrorKind { Error, Usage, Internal };

struct ErrorReport {
  std::string tool;
  ErrorKind kind = ErrorKind::Error;
  std::string message;  // without the "internal error: " prefix for internal errors
  int code = 1;         // the exit code it causes
  std::string model;    // the model a batch conversion was converting, if any
};

// --error_format for the whole process (runTool sets it from argv before parsing, so even a
// usage error is printed in the requested format).
void setJsonErrors(bool json);
bool jsonErrors();

// The JSON object of an error, with the fields the message names.
nlohmann::ordered_json errorJson(const ErrorReport& e);

// Prints one line to `out`: text or JSON as set.
void printError(std::ostream& out, const ErrorReport& e);

}  // namespace poprt::tools
