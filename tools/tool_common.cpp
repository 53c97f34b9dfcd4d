#include "tools/tool_common.h"

#include <iostream>

#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "tools/error_format.h"

namespace poprt::tools {

void addLoggingFlag(CLI::App& app, std::string& level) {
  app.add_option("--logging_level", level, "OFF, ERR, WARN, INFO, DEBUG or TRACE (also POPRT_LOG_LEVEL)");
}


namespace {

// --error_format's value, read from argv before parsing so a usage error already uses it.
bool wantsJsonErrors(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--error_format" && i + 1 < argc) json = std::string(argv[i + 1]) == "json";
    if (a.rfind("--error_format=", 0) == 0) json = a.substr(15) == "json";
  }
  return json;
}

}  // namespace

int runTool(const std::string& tool, CLI::App& app, int argc, char** argv, const std::function<Status()>& body) {
  setJsonErrors(wantsJsonErrors(argc, argv));
  std::string error_format = "text";
  app.add_option("--error_format", error_format,
                 "text (default): errors as '<tool>: error: ...' lines; json: one JSON object per line on stderr "
                 "({\"error\", \"code\", \"kind\", and \"flag\"/\"file\"/\"node\" when known})")
      ->check(CLI::IsMember({"text", "json"}));
  auto fail = [&](ErrorKind kind, const std::string& message, int code) {
    printError(std::cerr, {tool, kind, message, code, ""});
    return code;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(ErrorKind::Usage, e.what(), kExitUsage);
  }
  try {
    Status st = body();
    if (!st.ok()) return fail(ErrorKind::Error, st.error().message(), kExitError);
    return kExitOk;
  } catch (const UsageError& e) {
    return fail(ErrorKind::Usage, e.what(), kExitUsage);
  } catch (const std::bad_alloc&) {
    return fail(ErrorKind::Error, "out of memory", kExitError);
  } catch (const std::exception& e) {
    return fail(ErrorKind::Internal, internalErrorMessage(e), kExitError);
  }
}

std::string internalErrorMessage(const std::exception& e) {
  std::string what = e.what();
  const std::string prefix = "internal error: ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

std::string outputFileName(size_t index, const std::string& name, const std::string& ext) {
  std::string safe = name;
  for (char& c : safe)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return "output_" + std::to_string(index) + "_" + safe + ext;
}

}  // namespace poprt::tools
