// The streaming CBOR writer against nlohmann::json's CBOR encoder (a separate implementation):
// same bytes for the same data; the reader reads nlohmann's output and refuses damaged input.
#include "lib/support/cbor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace poprt::cbor {
namespace {

using nlohmann::json;

const std::vector<int64_t> kInts = {0,
                                    1,
                                    23,
                                    24,
                                    255,
                                    256,
                                    65535,
                                    65536,
                                    int64_t{1} << 32,
                                    -1,
                                    -24,
                                    -25,
                                    -256,
                                    -257,
                                    std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max()};
const std::vector<double> kReals = {0.0,
                                    1.5,
                                    -2.25,
                                    1.33e9,
                                    0.1,
                                    1e300,
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    3.4028234663852886e38};

TEST(Cbor, WriterMatchesNlohmann) {
  std::vector<uint8_t> mine;
  Writer w(mine);
  w.map(4);
  w.text("a_ints"), w.array(kInts.size());
  for (int64_t v : kInts) w.sint(v);
  w.text("b_reals"), w.array(kReals.size());
  for (double v : kReals) w.real(v);
  w.text("c_text"), w.text(std::string(300, 'x'));
  const std::vector<uint8_t> blob = {1, 2, 3};
  w.text("d_bytes"), w.bytes(blob);
  json j;
  j["a_ints"] = kInts;
  j["b_reals"] = kReals;
  j["c_text"] = std::string(300, 'x');
  j["d_bytes"] = json::binary(blob);
  EXPECT_EQ(mine, json::to_cbor(j));
}

TEST(Cbor, ReaderReadsWhatNlohmannWrites) {
  json j;
  j["ints"] = kInts;
  j["reals"] = kReals;
  j["name"] = "tile";
  j["nan"] = std::numeric_limits<double>::quiet_NaN();
  const std::vector<uint8_t> bytes = json::to_cbor(j);
  Reader r(bytes);
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::string name;
  double nan = 0;
  Status st = r.map({"ints", "reals", "name", "nan"}, [&](std::string_view k) -> Status {
    if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(name, r.text());
      return okStatus();
    }
    if (k == "nan") {
      POPRT_ASSIGN_OR_RETURN(nan, r.real());
      return okStatus();
    }
    POPRT_ASSIGN_OR_RETURN(uint64_t n, r.array());
    for (uint64_t i = 0; i < n; ++i) {
      if (k == "ints") {
        POPRT_ASSIGN_OR_RETURN(int64_t v, r.sint());
        ints.push_back(v);
      } else {
        POPRT_ASSIGN_OR_RETURN(double v, r.real());
        reals.push_back(v);
      }
    }
    return okStatus();
  });
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_TRUE(r.atEnd());
  EXPECT_EQ(ints, kInts);
  EXPECT_EQ(reals, kReals);
  EXPECT_EQ(name, "tile");
  EXPECT_TRUE(std::isnan(nan));
}

TEST(Cbor, ReaderRefusesDamagedInput) {
  const std::vector<uint8_t> good = json::to_cbor(json{{"k", std::vector<int>{1, 2, 3}}});
  auto read = [](std::span<const uint8_t> bytes) {
    Reader r(bytes);
    return r.map({"k"}, [&](std::string_view) -> Status {
      POPRT_ASSIGN_OR_RETURN(uint64_t n, r.array());
      for (uint64_t i = 0; i < n; ++i) POPRT_TRY(r.uint());
      return okStatus();
    });
  };
  ASSERT_TRUE(read(good).ok());
  for (size_t cut = 0; cut < good.size(); ++cut)  // every truncation
    EXPECT_FALSE(read(std::span(good).first(cut)).ok()) << "cut at " << cut;
  // An array claiming 2^32 elements in a few bytes, a repeated key, an unknown key, a wrong type.
  EXPECT_FALSE(read(std::vector<uint8_t>{0xa1, 0x61, 'k', 0x9a, 0xff, 0xff, 0xff, 0xff}).ok());
  EXPECT_FALSE(read(json::to_cbor(json{{"x", 1}})).ok());
  EXPECT_FALSE(read(std::vector<uint8_t>{0xa2, 0x61, 'k', 0x80, 0x61, 'k', 0x80}).ok());
  EXPECT_FALSE(read(json::to_cbor(json{{"k", "text"}})).ok());
  std::vector<uint8_t> negative = json::to_cbor(json{{"k", std::vector<int>{-1}}});
  EXPECT_FALSE(read(negative).ok());  // uint() refuses a negative integer
}

}  // namespace
}  // namespace poprt::cbor
