#include "tools/convert/convert_flags.h"

#include <cstdlib>
#include <type_traits>
#include <variant>

namespace poprt::tools {
namespace {

using converter::ConvertOptions;
using converter::OptionSpec;

// A CLI11 validator running the spec's range check on the text of a number.
CLI::Validator rangeValidator(const std::function<std::string(double)>& check) {
  return CLI::Validator(
      [check](std::string& text) -> std::string {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";  // not a number: the conversion reports it
        std::string why = check(v);
        return why.empty() ? "" : why + ", got " + text;
      },
      "", "");
}

}  // namespace

void addConvertFlags(CLI::App& app, ConvertOptions& o) {
  app.add_option("--config_yaml", o.config_yaml,
                 "read options from this YAML file (keys: the long flags without dashes); flags given here win");
  for (const OptionSpec& spec : converter::optionTable()) {
    const std::string flag = std::string("--") + spec.key;
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, bool>) {
            app.add_flag(flag, *field, spec.help);
          } else {
            CLI::Option* opt = app.add_option(flag, *field, spec.help);
            if constexpr (std::is_same_v<T, std::vector<std::string>>) {
              if (spec.comma_list) opt->delimiter(',');
            }
            if (spec.check) opt->check(rangeValidator(spec.check));
          }
        },
        spec.field(o));
  }
}

std::set<std::string> givenOptions(const CLI::App& app) {
  std::set<std::string> given;
  for (const OptionSpec& spec : converter::optionTable())
    if (app.count(std::string("--") + spec.key) > 0) given.insert(spec.key);
  return given;
}

}  // namespace poprt::tools
