// poprt-convert's ahead-of-time parts: the compile cache's key and store (convert_cache*),
// batch planning (convert_batch), the models: list of --config_yaml and --error_format json.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <onnx/onnx_pb.h>

#include "converter/cache.h"
#include "converter/cache_key.h"
#include "converter/options.h"
#include "tools/common/error_format.h"
#include "tools/common/tool_common.h"
#include "tools/convert/convert_batch.h"
#include "tools/convert/convert_flags.h"

namespace poprt::tools {

using namespace poprt::converter;
namespace {
namespace fs = std::filesystem;

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("poprt-aot-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

// ------------------------------------------------------------------------------------- SHA-256

TEST(Sha256, StandardTestVectors) {
  // FIPS 180-2 examples.
  Sha256 abc;
  abc.update(std::string("abc"));
  EXPECT_EQ(abc.hexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 empty;
  EXPECT_EQ(empty.hexDigest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // Fed in pieces: the same as whole.
  Sha256 pieces;
  pieces.update(std::string("abcdbcdecdefdefgefghfghighij"));
  pieces.update(std::string("hijkijkljklmklmnlmnomnopnopq"));
  EXPECT_EQ(pieces.hexDigest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// ---------------------------------------------------------------------------------- cache key

// A model whose initializer "w" lives in `location` and whose If-branch Constant lives in `location2`.
std::string modelWithExternalData(const std::string& location, const std::string& location2) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* g = m.mutable_graph();
  auto external = [](onnx::TensorProto* t, const std::string& loc) {
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(1);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = t->add_external_data();
    e->set_key("location");
    e->set_value(loc);
  };
  external(g->add_initializer(), location);
  auto* node = g->add_node();
  node->set_op_type("If");
  auto* attr = node->add_attribute();
  attr->set_name("then_branch");
  auto* branch = attr->mutable_g();
  auto* constant = branch->add_node();
  auto* value = constant->add_attribute();
  value->set_name("value");
  external(value->mutable_t(), location2);
  return m.SerializeAsString();
}

TEST_F(TempDir, ExternalDataFilesAreFoundAnywhereInTheModel) {
  auto files = externalDataFiles(modelWithExternalData("w.bin", "sub/c.bin"), dir_);
  EXPECT_EQ(files, (std::vector<fs::path>{dir_ / "sub/c.bin", dir_ / "w.bin"}));
  EXPECT_TRUE(externalDataFiles(modelWithExternalData("w.bin", "w.bin"), dir_).size() == 1);
  EXPECT_TRUE(externalDataFiles("not a model", dir_).empty());
}

TEST_F(TempDir, KeyFollowsBytesAndResultOptionsNotPaths) {
  fs::path model = write("a/m.onnx", modelWithExternalData("w.bin", "c.bin"));
  write("a/w.bin", "weights");
  write("a/c.bin", "constant");
  ConvertOptions o;
  o.input_model = model.string();
  o.export_popef = true;
  auto key = [&](const ConvertOptions& opts) {
    auto k = cacheKey(opts);
    EXPECT_TRUE(k.ok()) << k.error().message();
    return k.ok() ? k->hex : std::string();
  };
  const std::string base = key(o);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(key(o), base);

  // Where things go and how messages look: the same key.
  ConvertOptions moved = o;
  moved.output_dir = "elsewhere";
  moved.output_model = "other.onnx";
  moved.summary_json = "s.json";
  moved.logging_level = "DEBUG";
  moved.cache_dir = "cache";
  moved.cache_max_bytes = 5;
  EXPECT_EQ(key(moved), base);
  // The same bytes somewhere else: the same key.
  fs::copy(dir_ / "a", dir_ / "b");
  ConvertOptions copy = o;
  copy.input_model = (dir_ / "b/m.onnx").string();
  EXPECT_EQ(key(copy), base);

  // What decides the result: a new key.
  for (auto change : std::vector<std::function<void(ConvertOptions&)>>{
           [](ConvertOptions& c) { c.precision = "fp16"; }, [](ConvertOptions& c) { c.export_popef = false; },
           [](ConvertOptions& c) { c.input_shapes = {"x=1,2"}; },
           [](ConvertOptions& c) { c.pipeline.skip_passes = {"constant_folding"}; },
           [](ConvertOptions& c) { c.available_memory_proportion = 0.5; }, [](ConvertOptions& c) { c.check = true; }}) {
    ConvertOptions c = o;
    change(c);
    EXPECT_NE(key(c), base);
  }
  // External data bytes are part of the key.
  write("b/c.bin", "constanT");
  EXPECT_NE(key(copy), base);
  // So are the bytes of files named by options, not their names.
  write("cal1.npy", "one");
  write("cal2.npy", "one");
  ConvertOptions cal1 = o, cal2 = o;
  cal1.fp16_calibration_inputs = {"x=" + (dir_ / "cal1.npy").string()};
  cal2.fp16_calibration_inputs = {"x=" + (dir_ / "cal2.npy").string()};
  EXPECT_EQ(key(cal1), key(cal2));
  write("cal2.npy", "two");
  EXPECT_NE(key(cal1), key(cal2));
  // A missing external-data file: no key (the import reports it).
  fs::remove(dir_ / "a/w.bin");
  EXPECT_FALSE(cacheKey(o).ok());
}

TEST(CacheKey, EveryOptionIsInTheKeyUnlessListedAsNotAffectingOutput) {
  // A new option of the table lands in the key by default: only these stay out.
  std::vector<std::string> outside;
  for (const auto& [name, value] : optionValues(ConvertOptions{}))
    if (!optionAffectsOutput(name)) outside.push_back(name);
  EXPECT_EQ(outside, (std::vector<std::string>{"input_model", "output_dir", "output_model", "list_all_passes", "show",
                                               "summary_json", "logging_level", "cache_dir", "cache_max_bytes", "remote_cache",
                                               "remote_cache_upload", "remote_cache_header_file"}));
}

// ------------------------------------------------------------------------------ cache storage

CacheKey fakeKey(char c) {
  CacheKey k;
  k.hex = std::string(64, c);
  k.material = std::string("material ") + c;
  return k;
}

CacheEntry summarized(CacheEntry entry, const std::string& summary) {
  entry.summary = summary;
  return entry;
}

TEST_F(TempDir, StoreThenRestoreCopiesTheFilesAndTheSummary) {
  auto cache = CompileCache::open(dir_ / "cache", 0);
  ASSERT_TRUE(cache.ok()) << cache.error().message();
  CacheEntry written{"", "onnx bytes", "popef bytes"};
  const CacheKey key = fakeKey('a');
  EXPECT_FALSE(cache->restore(key, {dir_ / "hit/m.onnx", dir_ / "hit/executable.popef"}).has_value());
  ASSERT_TRUE(cache->store(key, summarized(written, "{\"summary\": 1}")).ok());
  EXPECT_EQ(read(cache->entryDir(key) / "key.txt"), "material a");

  auto restored = cache->restore(key, {dir_ / "hit/m.onnx", dir_ / "hit/executable.popef"});
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->summary, "{\"summary\": 1}");
  EXPECT_EQ(restored->onnx, "onnx bytes");
  EXPECT_EQ(restored->popef, "popef bytes");
  EXPECT_EQ(read(dir_ / "hit/m.onnx"), "onnx bytes");
  EXPECT_EQ(read(dir_ / "hit/executable.popef"), "popef bytes");
  // Nothing else was left next to the outputs.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "hit"), fs::directory_iterator()), 2);

  // A second store of the same key (another process that compiled at the same time) keeps one entry.
  ASSERT_TRUE(cache->store(key, summarized(written, "{\"summary\": 2}")).ok());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "cache"), fs::directory_iterator()), 1);
  // An entry missing a file it should have is a miss, and leaves nothing behind: no file, no
  // temporary file, not even the output directory.
  fs::remove(cache->entryDir(key) / "executable.popef");
  EXPECT_FALSE(cache->restore(key, {dir_ / "miss/m.onnx", dir_ / "miss/executable.popef"}).has_value());
  EXPECT_FALSE(fs::exists(dir_ / "miss"));
}

TEST_F(TempDir, ConcurrentStoresOfOneKeyLeaveOneWholeEntry) {
  auto cache = CompileCache::open(dir_ / "cache", 0);
  ASSERT_TRUE(cache.ok());
  CacheEntry written{"", std::string(1 << 20, 'o'), std::string(1 << 20, 'p')};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] { failures += !cache->store(fakeKey('b'), summarized(written, "{}")).ok(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "cache"), fs::directory_iterator()), 1);
  EXPECT_EQ(read(cache->entryDir(fakeKey('b')) / "executable.popef"), std::string(1 << 20, 'p'));
}

TEST_F(TempDir, EvictionDropsTheLeastRecentlyUsedEntries) {
  CacheEntry written{"", std::string(1000, 'o'), ""};
  const uint64_t entry_bytes = 1000 + 2 + 10;  // model.onnx, summary "{}", key.txt "material X"
  auto unlimited = CompileCache::open(dir_ / "cache", 0);
  ASSERT_TRUE(unlimited.ok());
  ASSERT_TRUE(unlimited->store(fakeKey('a'), summarized(written, "{}")).ok());
  ASSERT_TRUE(unlimited->store(fakeKey('b'), summarized(written, "{}")).ok());
  EXPECT_EQ(unlimited->totalBytes(), 2 * entry_bytes);
  // Entries' last use is their directory's mtime: make a older than b, then use a.
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(unlimited->entryDir(fakeKey('a')), now - std::chrono::seconds(20));
  fs::last_write_time(unlimited->entryDir(fakeKey('b')), now - std::chrono::seconds(10));
  ASSERT_TRUE(unlimited->restore(fakeKey('a'), {dir_ / "hit.onnx", fs::path()}).has_value());
  // Room for two entries: storing c evicts b, the least recently used.
  auto limited = CompileCache::open(dir_ / "cache", 2 * entry_bytes);
  ASSERT_TRUE(limited.ok());
  ASSERT_TRUE(limited->store(fakeKey('c'), summarized(written, "{}")).ok());
  EXPECT_TRUE(fs::exists(limited->entryDir(fakeKey('a'))));
  EXPECT_FALSE(fs::exists(limited->entryDir(fakeKey('b'))));
  EXPECT_TRUE(fs::exists(limited->entryDir(fakeKey('c'))));
  EXPECT_EQ(limited->totalBytes(), 2 * entry_bytes);
  // An entry bigger than the limit stays while it is the one just stored.
  auto tiny = CompileCache::open(dir_ / "cache", 1);
  ASSERT_TRUE(tiny.ok());
  ASSERT_TRUE(tiny->store(fakeKey('d'), summarized(written, "{}")).ok());
  EXPECT_EQ(tiny->totalBytes(), entry_bytes);
  EXPECT_TRUE(fs::exists(tiny->entryDir(fakeKey('d'))));
}

TEST_F(TempDir, StaleTemporaryEntriesAreRemoved) {
  auto cache = CompileCache::open(dir_ / "cache", 1);
  ASSERT_TRUE(cache.ok());
  fs::create_directories(dir_ / "cache/.tmp-dead-1");
  fs::create_directories(dir_ / "cache/.tmp-live-1");
  fs::last_write_time(dir_ / "cache/.tmp-dead-1", fs::file_time_type::clock::now() - std::chrono::hours(2));
  CacheEntry written{"", "m", ""};
  ASSERT_TRUE(cache->store(fakeKey('e'), summarized(written, "{}")).ok());
  EXPECT_FALSE(fs::exists(dir_ / "cache/.tmp-dead-1"));
  EXPECT_TRUE(fs::exists(dir_ / "cache/.tmp-live-1"));  // maybe another process's store in progress
}

TEST(CacheDir, FlagWinsOverTheEnvironment) {
  ::setenv("POPRT_CACHE_DIR", "/from/env", 1);
  EXPECT_EQ(effectiveCacheDir(""), "/from/env");
  EXPECT_EQ(effectiveCacheDir("/from/flag"), "/from/flag");
  ::unsetenv("POPRT_CACHE_DIR");
  EXPECT_EQ(effectiveCacheDir(""), "");
}

// ------------------------------------------------------------------------------------- batches

TEST(PlanConversions, OneModelConvertsAsGiven) {
  ConvertOptions o;
  o.input_models = {"dir/m.onnx"};
  o.output_dir = "out";
  o.summary_json = "s.json";
  bool batch = true;
  auto plan = planConversions(o, batch);
  EXPECT_FALSE(batch);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].input_model, "dir/m.onnx");
  EXPECT_EQ(plan[0].output_dir, "out");
  EXPECT_EQ(plan[0].summary_json, "s.json");
}

TEST(PlanConversions, SeveralModelsGetASubdirectoryEachAndClashesAreUsageErrors) {
  ConvertOptions o;
  o.input_models = {"a/resnet.onnx", "b/yolo.v2.onnx"};
  o.output_dir = "out";
  bool batch = false;
  auto plan = planConversions(o, batch);
  EXPECT_TRUE(batch);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].input_model, "a/resnet.onnx");
  EXPECT_EQ(plan[0].output_dir, "out/resnet");
  EXPECT_EQ(plan[0].summary_json, "out/resnet/summary.json");
  EXPECT_EQ(plan[1].output_dir, "out/yolo.v2");

  o.input_models = {"a/m.onnx", "b/m.onnx"};
  try {
    planConversions(o, batch);
    FAIL() << "a stem clash was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a/m.onnx"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("b/m.onnx"), std::string::npos) << e.what();
  }
  o.input_models.clear();
  EXPECT_THROW(planConversions(o, batch), UsageError);
}

class ConfigModels : public TempDir {
 protected:
  Status parse(std::vector<std::string> args, ConvertOptions& o) {
    CLI::App app;
    addConvertFlags(app, o);
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
    return applyConfigYaml(givenOptions(app), o);
  }
};

TEST_F(ConfigModels, EntriesOverrideTheTopLevelAndFlagsOverrideBoth) {
  fs::path cfg = write("c.yaml",
                       "export_popef: true\nprecision: fp16\noutput_dir: out\n"
                       "models:\n"
                       "  - a.onnx\n"
                       "  - {input_model: b.onnx, input_shape: {x: [2, 3]}, precision: fp32, output_dir: other}\n");
  ConvertOptions o;
  ASSERT_TRUE(parse({"--config_yaml", cfg.string(), "--batch_size", "4"}, o).ok());
  ASSERT_EQ(o.models.size(), 2u);
  EXPECT_EQ(o.models[0].input_models, (std::vector<std::string>{"a.onnx"}));
  EXPECT_EQ(o.models[0].precision, "fp16");
  EXPECT_TRUE(o.models[0].export_popef);
  EXPECT_EQ(o.models[1].precision, "fp32");
  EXPECT_EQ(o.models[1].input_shapes, (std::vector<std::string>{"x=2,3"}));
  EXPECT_EQ(o.models[1].batch_size, 4);
  bool batch = false;
  auto plan = planConversions(o, batch);
  EXPECT_TRUE(batch);
  EXPECT_EQ(plan[0].output_dir, "out/a");
  EXPECT_EQ(plan[1].output_dir, "other/b");

  // The command line wins over an entry too.
  ConvertOptions flagged;
  ASSERT_TRUE(parse({"--config_yaml", cfg.string(), "--precision", "fp32"}, flagged).ok());
  EXPECT_EQ(flagged.models[0].precision, "fp32");
  // A list under input_model is the same as repeating the flag.
  ConvertOptions listed;
  ASSERT_TRUE(parse({"--config_yaml", write("l.yaml", "input_model: [a.onnx, b.onnx]\n").string()}, listed).ok());
  EXPECT_EQ(listed.input_models, (std::vector<std::string>{"a.onnx", "b.onnx"}));
}

TEST_F(ConfigModels, EntriesHoldNoCopiesOfTheEntriesBeforeThem) {
  // Each entry once carried the list so far, which doubled with every entry (a fuzzer's 30-entry
  // file asked for gigabytes).
  std::string text = "models:\n";
  for (int i = 0; i < 40; ++i) text += "  - m" + std::to_string(i) + ".onnx\n";
  ConvertOptions o;
  ASSERT_TRUE(parse({"--config_yaml", write("many.yaml", text).string()}, o).ok());
  ASSERT_EQ(o.models.size(), 40u);
  for (const ConvertOptions& m : o.models) EXPECT_TRUE(m.models.empty());
  EXPECT_EQ(o.models[39].input_models, (std::vector<std::string>{"m39.onnx"}));
}

TEST_F(ConfigModels, BadListsNameTheEntry) {
  struct Case {
    std::string text, mention;
  };
  for (const Case& c :
       {Case{"models: a.onnx\n", "models"}, Case{"models: []\n", "models"}, Case{"models: [{precision: fp16}]\n", "models[0]"},
        Case{"models: [a.onnx, {input_model: b.onnx, bogus: 1}]\n", "models[1]: unknown key 'bogus'"},
        Case{"models: [{input_model: b.onnx, summary_json: s.json}]\n", "summary_json"},
        Case{"input_model: a.onnx\nmodels: [b.onnx]\n", "input_model"}}) {
    ConvertOptions o;
    fs::path cfg = write("bad.yaml", c.text);
    auto st = parse({"--config_yaml", cfg.string()}, o);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_NE(st.error().message().find(c.mention), std::string::npos) << st.error().message();
    EXPECT_NE(st.error().message().find(cfg.string()), std::string::npos) << st.error().message();
  }
  ConvertOptions o;
  auto st = parse({"--config_yaml", write("m.yaml", "models: [b.onnx]\n").string(), "--input_model", "a.onnx"}, o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("--input_model"), std::string::npos) << st.error().message();
}

TEST_F(TempDir, BatchTriesEveryModelAndWritesASummary) {
  ConvertOptions o;
  o.input_models = {"a.onnx", "b.onnx", "c.onnx"};
  o.output_dir = (dir_ / "out").string();
  o.summary_json = (dir_ / "batch.json").string();
  bool batch = false;
  auto plan = planConversions(o, batch);
  std::vector<std::string> seen;
  std::ostringstream out;
  setJsonErrors(true);
  testing::internal::CaptureStderr();
  Status st = runBatch(
      o, plan,
      [&](const ConvertOptions& c, ConvertOutcome& outcome) -> Status {
        seen.push_back(c.input_model);
        outcome.cache = "miss";
        if (c.input_model == "b.onnx") return Error("b.onnx: node 'n1' (Foo): unknown op");
        return okStatus();
      },
      out);
  std::string err = testing::internal::GetCapturedStderr();
  setJsonErrors(false);
  EXPECT_EQ(seen, (std::vector<std::string>{"a.onnx", "b.onnx", "c.onnx"}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("1 of 3 models failed: b.onnx"), std::string::npos) << st.error().message();
  auto line = nlohmann::json::parse(err);
  EXPECT_EQ(line["model"], "b.onnx");
  EXPECT_EQ(line["node"], "n1");
  EXPECT_EQ(line["file"], "b.onnx");
  auto summary = nlohmann::json::parse(read(dir_ / "batch.json"));
  ASSERT_EQ(summary["models"].size(), 3u);
  EXPECT_EQ(summary["models"][0]["status"], "ok");
  EXPECT_EQ(summary["models"][0]["summary_json"], (dir_ / "out/a/summary.json").string());
  EXPECT_EQ(summary["models"][1]["status"], "failed");
  EXPECT_EQ(summary["models"][1]["exit_code"], 1);
  EXPECT_EQ(summary["models"][1]["error"]["node"], "n1");
  EXPECT_EQ(summary["converted"], 2);
  EXPECT_EQ(summary["failed"], 1);
}

// ---------------------------------------------------------------------------------- JSON errors

TEST_F(TempDir, ErrorJsonNamesTheFlagFileAndNode) {
  auto json = [](const std::string& message, ErrorKind kind = ErrorKind::Error) {
    return errorJson({"poprt-convert", kind, message, kind == ErrorKind::Usage ? 2 : 1, ""});
  };
  auto j = json("m.onnx: node 'conv_1' (Conv): X, W and group do not match");
  EXPECT_EQ(j["error"], "m.onnx: node 'conv_1' (Conv): X, W and group do not match");
  EXPECT_EQ(j["code"], 1);
  EXPECT_EQ(j["kind"], "error");
  EXPECT_EQ(j["file"], "m.onnx");
  EXPECT_EQ(j["node"], "conv_1");
  EXPECT_FALSE(j.contains("flag"));

  j = json("--summary_json /no/such/dir/s.json: '/no/such' is not a directory");
  EXPECT_EQ(j["flag"], "--summary_json");
  EXPECT_EQ(j["file"], "/no/such/dir/s.json");

  j = json("--precision: expected fp32 or fp16, got 'fp8'");
  EXPECT_EQ(j["flag"], "--precision");
  EXPECT_FALSE(j.contains("file"));

  j = json("The following argument was not expected: --bogus", ErrorKind::Usage);
  EXPECT_EQ(j["flag"], "--bogus");
  EXPECT_EQ(j["kind"], "usage");
  EXPECT_EQ(j["code"], 2);

  j = json("cfg.yaml:3:7: not valid YAML: end of map not found");
  EXPECT_EQ(j["file"], "cfg.yaml");
  // An existing file with spaces in its name still counts; a phrase does not.
  fs::path spaced = write("my model.onnx", "x");
  EXPECT_EQ(json(spaced.string() + ": not a model")["file"], spaced.string());
  EXPECT_FALSE(json("input 'x' has shape [N,64]: give --input_shape")["file"].is_string());

  // One line of valid JSON, even for bytes that are not UTF-8.
  setJsonErrors(true);
  std::ostringstream out;
  printError(out, {"popef-run", ErrorKind::Error, "bad \xff name", 1, ""});
  setJsonErrors(false);
  EXPECT_EQ(out.str().back(), '\n');
  EXPECT_EQ(out.str().find('\n'), out.str().size() - 1);
  EXPECT_TRUE(nlohmann::json::accept(out.str()));
}

}  // namespace
}  // namespace poprt::tools
