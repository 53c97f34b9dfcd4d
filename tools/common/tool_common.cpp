#include "tools/common/tool_common.h"

#include <malloc.h>

#include <algorithm>
#include <iostream>
#include <vector>

#include "lib/plugin/plugin.h"
#include "lib/support/file_io.h"
#include "lib/support/log.h"
#include "tools/common/error_format.h"

namespace poprt::tools {

void keepFreedMemoryForReuse() {
  constexpr int kNever = 1 << 30;  // bytes: a block this big is still mapped on its own
  mallopt(M_MMAP_THRESHOLD, kNever);
  mallopt(M_TRIM_THRESHOLD, kNever);
}

void addLoggingFlag(CLI::App& app, std::string& level) {
  app.add_option("--logging_level", level, "OFF, ERR, WARN, INFO, DEBUG or TRACE (also POPRT_LOG_LEVEL)");
}

void addCustomLibraryFlag(CLI::App& app, std::vector<std::string>& paths) {
  app.add_option("--custom_library_so_paths", paths,
                 "a custom-op plugin library (poprt/custom_op.h) the PopEF's ops need, as given to poprt-convert; repeatable");
}

Status loadCustomLibraries(const std::vector<std::string>& paths) {
  if (auto st = plugin::loadPlugins(paths); !st.ok()) return st.error().withContext("--custom_library_so_paths");
  return okStatus();
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

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// For arguments the parser did not expect: each unknown flag named, with the closest flag of the
// tool when one is near ("did you mean --input_model?"), instead of the parser's sentence.
std::string unexpectedArguments(const CLI::App& app, int argc, char** argv, const std::string& parser_text) {
  std::vector<std::string> known;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& name : o->get_lnames()) known.push_back("--" + name);
  std::string message;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    std::string best;
    size_t best_distance = std::max<size_t>(2, arg.size() / 4) + 1;
    for (const std::string& k : known)
      if (size_t d = editDistance(arg, k); d < best_distance) best = k, best_distance = d;
    message += (message.empty() ? "" : "; ") + std::string("unknown flag '") + arg + "'" +
               (best.empty() ? "" : " (did you mean " + best + "?)");
  }
  return message.empty() ? parser_text : message;
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
  } catch (const CLI::CallForHelp& e) { return app.exit(e); } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) { return app.exit(e); } catch (const CLI::ExtrasError& e) {
    return fail(ErrorKind::Usage, unexpectedArguments(app, argc, argv, e.what()), kExitUsage);
  } catch (const CLI::ParseError& e) { return fail(ErrorKind::Usage, e.what(), kExitUsage); }
  try {
    Status st = body();
    if (!st.ok()) return fail(ErrorKind::Error, st.error().message(), kExitError);
    return kExitOk;
  } catch (const UsageError& e) { return fail(ErrorKind::Usage, e.what(), kExitUsage); } catch (const std::bad_alloc&) {
    return fail(ErrorKind::Error, "out of memory", kExitError);
  } catch (const std::exception& e) { return fail(ErrorKind::Internal, internalErrorMessage(e), kExitError); }
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
