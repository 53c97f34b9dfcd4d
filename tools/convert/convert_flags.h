// poprt-convert's command line over the conversion's option table (converter/options.h): one
// --KEY flag per option, plus --config_yaml.
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <string>

#include "converter/options.h"

namespace poprt::tools {

// Registers every option of the table (plus --config_yaml) on `app`, bound to `o`.
void addConvertFlags(CLI::App& app, converter::ConvertOptions& o);

// The keys the parsed command line gave (they win over --config_yaml's).
std::set<std::string> givenOptions(const CLI::App& app);

}  // namespace poprt::tools
