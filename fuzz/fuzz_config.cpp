// libFuzzer target: the conversion's option readers. Each input is tried as a --config_yaml file
// (converter::applyConfigYaml: keys, types, ranges, a models: list), as the Python package's JSON
// object of keyword arguments (applyOptionsJson) and as a --manual_sharding_config file
// (readShardingConfig). What the readers accept must then make a compile-cache key (every option's
// value turned into the key's text), as a conversion with --cache_dir would.
#include <string>

#include "converter/cache_key.h"
#include "converter/options.h"
#include "converter/sharding_config.h"
#include "fuzz/fuzz_util.h"

using namespace poprt;
using namespace poprt::converter;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

namespace {

void requireKey(ConvertOptions o) {
  o.input_model = (fuzz::scratchDir() / "data.bin").string();  // any readable file: only its bytes are hashed
  (void)cacheKey(o);  // an error (a file it names is missing) is fine; a crash or an exception is not
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = (fuzz::scratchDir() / "config.yaml").string();
  fuzz::writeFile(file, data, size);

  ConvertOptions o;
  o.config_yaml = file;
  if (Status st = applyConfigYaml({}, o); !st.ok()) {
    fuzz::requireNamedError(st.error(), file + ":");
  } else {
    requireKey(o);
    for (const ConvertOptions& m : o.models) requireKey(m);
  }

  ConvertOptions kwargs;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (Status st = applyOptionsJson("kwargs", text, kwargs); !st.ok())
    fuzz::requireNamedError(st.error(), "kwargs: ");
  else
    requireKey(kwargs);

  if (auto shards = readShardingConfig(file); !shards.ok()) fuzz::requireNamedError(shards.error(), file);
  return 0;
}
