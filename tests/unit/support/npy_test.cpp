// Tests for npy.h. Reads are checked against files crafted byte by byte from the .npy format
// spec and against files written by the real numpy; writes are checked by numpy loading them.
#include "lib/support/npy.h"

#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "lib/support/file_io.h"

namespace poprt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Builds a .npy file by hand: magic, version, little-endian header length, the dict padded with
// spaces and ended by '\n' so the data starts at a multiple of 64, then `data`.
std::vector<uint8_t> craft(const std::string& dict, const std::vector<uint8_t>& data = {}, uint8_t major = 1) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  size_t len_size = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((8 + len_size + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  for (size_t i = 0; i < len_size; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string dictFor(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

template <class T>
std::vector<uint8_t> leBytes(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.begin(), out.size());  // the test host is little-endian
  return out;
}

std::string parseError(const std::vector<uint8_t>& bytes) {
  auto r = parseNpy(bytes, "x.npy");
  return r.ok() ? std::string("(parsed fine)") : r.error().message();
}

Tensor mustParse(const std::vector<uint8_t>& bytes) {
  auto r = parseNpy(bytes, "x.npy");
  if (!r.ok()) ADD_FAILURE() << r.error().message();
  return r.ok() ? std::move(r).value() : Tensor();
}

template <class T>
std::vector<T> values(const Tensor& t) {
  auto d = t.data<T>();
  return {d.begin(), d.end()};
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "poprt_npy_test_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool havePythonNumpy() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

int runPython(const fs::path& dir, const std::string& script) {
  fs::path file = dir / "script.py";
  std::ofstream(file) << script;
  std::string cmd = "/usr/bin/python3 '" + file.string() + "' '" + dir.string() + "'";
  return std::system(cmd.c_str());
}

// ---------------------------------------------------------------------------------------------
// Round trips through our own writer and reader.

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const DType dtypes[] = {DType::Float16, DType::Float, DType::Double,    DType::Int8,      DType::Int16,
                          DType::Int32,   DType::Int64, DType::UInt8,     DType::UInt16,    DType::UInt32,
                          DType::UInt64,  DType::Bool,  DType::Complex64, DType::Complex128};
  const Shape shapes[] = {{}, {0}, {5}, {2, 3}, {2, 0, 3}, {1, 2, 3, 4}};
  for (DType dt : dtypes) {
    for (const Shape& shape : shapes) {
      Tensor t(dt, shape);
      auto bytes = t.bytes();
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = dt == DType::Bool ? (i % 3 == 0) : static_cast<uint8_t>(i * 37 + 11);
      auto file = serializeNpy(t);
      ASSERT_TRUE(file.ok()) << file.error().message();
      auto back = parseNpy(*file, "x.npy");
      ASSERT_TRUE(back.ok()) << dtypeName(dt) << " " << shapeToString(shape) << ": " << back.error().message();
      EXPECT_EQ(*back, t) << dtypeName(dt) << " " << shapeToString(shape);
      EXPECT_EQ(back->shape(), shape);
    }
  }
}

TEST(Npy, WriterFollowsTheSpec) {
  Tensor t(DType::Float, {3});
  auto v = t.data<float>();
  v[0] = 1.0f;
  v[1] = -2.5f;
  v[2] = 0.0f;
  auto file = serializeNpy(t);
  ASSERT_TRUE(file.ok());
  const auto& b = *file;
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 6), "\x93NUMPY");
  EXPECT_EQ(b[6], 1);
  EXPECT_EQ(b[7], 0);
  size_t header_len = b[8] | (b[9] << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);  // data is 64-byte aligned
  std::string header(b.begin() + 10, b.begin() + 10 + static_cast<ptrdiff_t>(header_len));
  EXPECT_THAT(header, StartsWith("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(b.size(), 10 + header_len + 12);
  EXPECT_EQ(std::vector<uint8_t>(b.end() - 12, b.end()), (std::vector<uint8_t>{0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0, 0, 0, 0, 0}));
}

TEST(Npy, WriterUsesVersion2WhenTheHeaderIsTooLongForVersion1) {
  Tensor t(DType::Int32, Shape(22000, 1));  // "(1, 1, ..." needs > 65535 header bytes
  t.data<int32_t>()[0] = -7;
  auto file = serializeNpy(t);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)[6], 2);
  auto back = parseNpy(*file, "x.npy");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, t);
}

TEST(Npy, WriteAndReadFile) {
  TempDir dir;
  Tensor t(DType::Int64, {2, 2});
  auto v = t.data<int64_t>();
  v[0] = -1;
  v[1] = int64_t{1} << 40;
  v[2] = INT64_MIN;
  v[3] = 3;
  fs::path p = dir.path() / "t.npy";
  ASSERT_TRUE(writeNpy(p, t).ok());
  auto back = readNpy(p);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // no temp left
}

TEST(Npy, RefusesToWriteTypesWithoutANumpyDtype) {
  auto bf = serializeNpy(Tensor(DType::BFloat16, {2}));
  ASSERT_FALSE(bf.ok());
  EXPECT_THAT(bf.error().message(), HasSubstr("bfloat16 has no NumPy dtype; cast"));
  EXPECT_FALSE(serializeNpy(Tensor()).ok());

  TempDir dir;
  auto st = writeNpy(dir.path() / "b.npy", Tensor(DType::BFloat16, {2}));
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().message(), HasSubstr("b.npy: bfloat16"));
  EXPECT_FALSE(fs::exists(dir.path() / "b.npy"));
}

// ---------------------------------------------------------------------------------------------
// Reading files crafted by hand from the format spec.

TEST(Npy, ReadsHandCraftedLittleEndian) {
  Tensor t = mustParse(craft(dictFor("<f4", "(2,)"), leBytes<float>({1.0f, -2.5f})));
  EXPECT_EQ(t.dtype(), DType::Float);
  EXPECT_EQ(t.shape(), (Shape{2}));
  EXPECT_EQ(values<float>(t), (std::vector<float>{1.0f, -2.5f}));

  // IEEE half bit patterns 0x3c00 = 1.0 and 0xc000 = -2.0.
  Tensor h = mustParse(craft(dictFor("<f2", "(2,)"), {0x00, 0x3c, 0x00, 0xc0}));
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(values<uint16_t>(h), (std::vector<uint16_t>{0x3c00, 0xc000}));

  Tensor c = mustParse(craft(dictFor("<c16", "(1,)"), leBytes<double>({1.5, -4.0})));
  EXPECT_EQ(c.dtype(), DType::Complex128);
  EXPECT_EQ(values<std::complex<double>>(c), (std::vector<std::complex<double>>{{1.5, -4.0}}));
}

TEST(Npy, ByteSwapsBigEndian) {
  Tensor i = mustParse(craft(dictFor(">i4", "(2,)"), {0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe}));
  EXPECT_EQ(i.dtype(), DType::Int32);
  EXPECT_EQ(values<int32_t>(i), (std::vector<int32_t>{258, -2}));

  Tensor u = mustParse(craft(dictFor(">u2", "(1,)"), {0x01, 0x02}));
  EXPECT_EQ(values<uint16_t>(u), (std::vector<uint16_t>{0x0102}));

  Tensor d = mustParse(craft(dictFor(">f8", "()"), {0x3f, 0xf0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(d.shape(), Shape{});
  EXPECT_EQ(values<double>(d), (std::vector<double>{1.0}));

  // Complex numbers swap each 4-byte component: 1.0 = 3f800000, -2.0 = c0000000.
  Tensor c = mustParse(craft(dictFor(">c8", "(1,)"), {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0}));
  EXPECT_EQ(c.dtype(), DType::Complex64);
  EXPECT_EQ(values<float>(c), (std::vector<float>{1.0f, -2.0f}));

  Tensor h = mustParse(craft(dictFor(">f2", "(1,)"), {0x3c, 0x00}));
  EXPECT_EQ(values<uint16_t>(h), (std::vector<uint16_t>{0x3c00}));
}

TEST(Npy, AcceptsOneByteTypesWithAnyByteOrderAndBoolSpellings) {
  EXPECT_EQ(values<uint8_t>(mustParse(craft(dictFor("<u1", "(1,)"), {200}))), std::vector<uint8_t>{200});
  EXPECT_EQ(values<int8_t>(mustParse(craft(dictFor("<i1", "(1,)"), {0xfd}))), std::vector<int8_t>{-3});
  EXPECT_EQ(values<int8_t>(mustParse(craft(dictFor(">i1", "(1,)"), {0xfd}))), std::vector<int8_t>{-3});
  Tensor b = mustParse(craft(dictFor("?", "(3,)"), {1, 0, 1}));
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(values<uint8_t>(b), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(mustParse(craft(dictFor("|b1", "(1,)"), {1})).dtype(), DType::Bool);
  EXPECT_EQ(mustParse(craft(dictFor("<u8", "(1,)"), leBytes<uint64_t>({~uint64_t{0}}))).dtype(), DType::UInt64);
}

TEST(Npy, TransposesFortranOrder) {
  // C array [[0,1,2],[3,4,5]] stored column by column.
  Tensor t = mustParse(craft(dictFor("<i4", "(2, 3)", true), leBytes<int32_t>({0, 3, 1, 4, 2, 5})));
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int32_t>(t), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));

  // 3-D: write element (i,j,k) = its C-order index with i varying fastest.
  std::vector<int16_t> fortran;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) fortran.push_back(static_cast<int16_t>(i * 12 + j * 4 + k));
  std::vector<uint8_t> data(fortran.size() * 2);
  std::memcpy(data.data(), fortran.data(), data.size());
  Tensor t3 = mustParse(craft(dictFor(">i2", "(2, 3, 4)", true), [&] {
    std::vector<uint8_t> be = data;  // also big-endian, so swap and transpose compose
    for (size_t i = 0; i < be.size(); i += 2) std::swap(be[i], be[i + 1]);
    return be;
  }()));
  std::vector<int16_t> expected(24);
  for (int i = 0; i < 24; ++i) expected[static_cast<size_t>(i)] = static_cast<int16_t>(i);
  EXPECT_EQ(values<int16_t>(t3), expected);

  Tensor one = mustParse(craft(dictFor("<f4", "(2,)", true), leBytes<float>({1.0f, 2.0f})));
  EXPECT_EQ(values<float>(one), (std::vector<float>{1.0f, 2.0f}));
  Tensor empty = mustParse(craft(dictFor("<f4", "(0, 3)", true)));
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
}

TEST(Npy, ReadsVersions2And3AndLooseButValidDicts) {
  EXPECT_EQ(values<float>(mustParse(craft(dictFor("<f4", "(1,)"), leBytes<float>({7.0f}), 2))), std::vector<float>{7.0f});
  EXPECT_EQ(values<float>(mustParse(craft(dictFor("<f4", "(1,)"), leBytes<float>({8.0f}), 3))), std::vector<float>{8.0f});
  // Double quotes, any key order, no trailing comma, Python 2 longs, spaces, no padding needed.
  Tensor t = mustParse(craft("{ \"shape\" : (2L, 1L) , \"fortran_order\":False,\"descr\":\"<i8\"}", leBytes<int64_t>({5, -6})));
  EXPECT_EQ(t.shape(), (Shape{2, 1}));
  EXPECT_EQ(values<int64_t>(t), (std::vector<int64_t>{5, -6}));
  EXPECT_EQ(mustParse(craft(dictFor("<f8", "(2, 3, )"), std::vector<uint8_t>(48))).shape(), (Shape{2, 3}));
}

// ---------------------------------------------------------------------------------------------
// Rejections: every one is an error naming the file, never a crash or a huge allocation.

TEST(Npy, RejectsTruncatedEmptyAndRandomFiles) {
  EXPECT_EQ(parseError({}), "x.npy: empty file, not a .npy file");
  EXPECT_EQ(parseError({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}),
            "x.npy: not a .npy file (missing \\x93NUMPY magic)");
  EXPECT_THAT(parseError({0x93, 'N', 'U'}), HasSubstr("not a .npy file"));
  EXPECT_THAT(parseError({0x93, 'N', 'U', 'M', 'P', 'Y', 1}), HasSubstr("x.npy: truncated"));
  EXPECT_THAT(parseError({0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 100, 0, '{'}),
              HasSubstr("x.npy: truncated: header says its text is 100 bytes, file has 1"));
  EXPECT_EQ(parseError(craft(dictFor("<f4", "(150,)"), std::vector<uint8_t>(12))),
            "x.npy: truncated: header says 600 bytes of data, file has 12");
  EXPECT_EQ(parseError(craft(dictFor("<f4", "(1,)"), std::vector<uint8_t>(6))),
            "x.npy: 2 unexpected bytes after the data (header says 4 bytes of data)");
  // Deterministic pseudo-random junk after a valid magic and a junk-only file.
  std::vector<uint8_t> junk(300);
  uint32_t s = 12345;
  for (auto& b : junk) b = static_cast<uint8_t>((s = s * 1103515245u + 12345u) >> 24);
  EXPECT_THAT(parseError(junk), HasSubstr("x.npy: not a .npy file"));
  std::vector<uint8_t> junk_after_magic = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 200, 0};
  junk_after_magic.insert(junk_after_magic.end(), junk.begin(), junk.end());
  EXPECT_THAT(parseError(junk_after_magic), HasSubstr("x.npy: bad header"));
}

TEST(Npy, RejectsHugeShapesBeforeAllocating) {
  EXPECT_EQ(parseError(craft(dictFor("<f4", "(1099511627776, 1099511627776)"))),
            "x.npy: shape [1099511627776,1099511627776] has more than 17179869184 elements");
  EXPECT_THAT(parseError(craft(dictFor("<f4", "(99999999999999999999,)"))), HasSubstr("dimension does not fit in 64 bits"));
  // Under the element cap but far more data than the file has: refused by the size check.
  EXPECT_EQ(parseError(craft(dictFor("<c16", "(4000000000,)"))),
            "x.npy: truncated: header says 64000000000 bytes of data, file has 0");
  // A header length beyond our limit (version 2 allows 4 GiB).
  EXPECT_THAT(parseError({0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0, 0x40}),
              HasSubstr("x.npy: header is 1073741824 bytes, above the limit"));
}

TEST(Npy, RejectsBadVersions) {
  auto b = craft(dictFor("<f4", "(0,)"));
  b[6] = 4;
  EXPECT_EQ(parseError(b), "x.npy: unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)");
  b[6] = 1;
  b[7] = 1;
  EXPECT_THAT(parseError(b), HasSubstr("unsupported .npy format version 1.1"));
}

TEST(Npy, RejectsBadHeaderDicts) {
  struct Case {
    std::string dict;
    std::string error;
  };
  const Case cases[] = {
      {"{'descr': '<f4', 'fortran_order': False}", "x.npy: bad header: missing key 'shape'"},
      {"{'fortran_order': False, 'shape': ()}", "x.npy: bad header: missing key 'descr'"},
      {"{'descr': '<f4', 'shape': ()}", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': 'yes', 'shape': ()}", "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': ()}", "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", "'shape' must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", "is not a tuple, expected (n,)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}", "negative dimension -3"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3.5,)}", "expected ',' or ')' in 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}", "expected an integer in 'shape'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': ()}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ()} junk", "unexpected text after the dict"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': ()}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ()", "expected ',' or '}'"},
      {"{'descr': '<f\\4', 'fortran_order': False, 'shape': ()}", "escape sequences"},
      {"{'descr: '<f4'}", "expected ':' after key 'descr: '"},
      {"{descr: '<f4'}", "expected a quoted key"},
      {"('descr', '<f4')", "bad header: expected '{'"},
      {"", "bad header: expected '{'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", "structured dtypes are not supported"},
      {"{'descr': '<U5', 'fortran_order': False, 'shape': ()}", "truncated: header says 1 strings of 5 characters"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': ()}", "unsupported dtype '|O'"},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': ()}", "unsupported dtype '|f4'"},
      {"{'descr': '<f3', 'fortran_order': False, 'shape': ()}", "unsupported dtype '<f3'"},
      {"{'descr': '<V2', 'fortran_order': False, 'shape': ()}", "unsupported dtype '<V2'"},
  };
  for (const auto& c : cases) {
    std::string err = parseError(craft(c.dict, std::vector<uint8_t>(4)));
    EXPECT_THAT(err, HasSubstr(c.error)) << c.dict;
    EXPECT_THAT(err, StartsWith("x.npy: ")) << c.dict;
    EXPECT_EQ(err.find('\n'), std::string::npos) << c.dict;
  }
}

TEST(Npy, ReadNpyReportsMissingFiles) {
  auto r = readNpy("/nonexistent/dir/y.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("/nonexistent/dir/y.npy"));
}

// ---------------------------------------------------------------------------------------------
// Interoperability with the real numpy (skipped if it is not installed).

TEST(Npy, ReadsFilesWrittenByNumpy) {
  if (!havePythonNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  TempDir dir;
  ASSERT_EQ(runPython(dir.path(), R"(
import sys, numpy as np
d = sys.argv[1]
np.save(d + '/f32.npy', np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5)
np.save(d + '/fortran.npy', np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4)))
np.save(d + '/be_f8.npy', np.arange(5, dtype='>f8') - 2)
np.save(d + '/be_i2.npy', np.array([1, -2, 300], dtype='>i2'))
np.save(d + '/bool.npy', np.array([True, False, True]))
np.save(d + '/c64.npy', np.array([1 + 2j, -3.5 + 0.25j], dtype=np.complex64))
np.save(d + '/be_c16.npy', np.array([1 + 2j], dtype='>c16'))
np.save(d + '/f16.npy', np.array([1.0, 0.5, -2.0, 65504], dtype=np.float16))
np.save(d + '/scalar.npy', np.float64(3.25))
np.save(d + '/empty.npy', np.zeros((2, 0, 3), dtype=np.uint16))
np.save(d + '/u64.npy', np.array([2**64 - 1, 0], dtype=np.uint64))
np.save(d + '/i8.npy', np.array([-128, 127], dtype=np.int8))
np.save(d + '/str.npy', np.array([['monday', ''], ['caf\u00e9', '\u4e2d\u6587']]))
np.save(d + '/str_f.npy', np.asfortranarray(np.array([['a', 'bb'], ['ccc', 'dddd']])))
)"),
            0);
  auto read = [&](const char* name) {
    auto r = readNpy(dir.path() / name);
    if (!r.ok()) ADD_FAILURE() << r.error().message();
    return r.ok() ? std::move(r).value() : Tensor();
  };

  Tensor str = read("str.npy");  // numpy writes '<U6' (UTF-32LE, NUL-padded)
  EXPECT_EQ(str.dtype(), DType::String);
  EXPECT_EQ(str.shape(), (Shape{2, 2}));
  EXPECT_EQ(str.strings(), (std::vector<std::string>{"monday", "", "caf\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87"}));
  EXPECT_EQ(read("str_f.npy").strings(), (std::vector<std::string>{"a", "bb", "ccc", "dddd"}));

  Tensor f32 = read("f32.npy");
  EXPECT_EQ(f32.dtype(), DType::Float);
  EXPECT_EQ(f32.shape(), (Shape{2, 3, 4}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(f32.data<float>()[static_cast<size_t>(i)], i * 0.5f);

  // numpy stores an F-contiguous array with fortran_order True; check it really did.
  auto raw = readFileBytes(dir.path() / "fortran.npy");
  ASSERT_TRUE(raw.ok());
  EXPECT_NE(std::string(raw->begin(), raw->begin() + 128).find("'fortran_order': True"), std::string::npos);
  Tensor fortran = read("fortran.npy");
  EXPECT_EQ(fortran.shape(), (Shape{2, 3, 4}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(fortran.data<int32_t>()[static_cast<size_t>(i)], i);

  EXPECT_EQ(values<double>(read("be_f8.npy")), (std::vector<double>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(values<int16_t>(read("be_i2.npy")), (std::vector<int16_t>{1, -2, 300}));
  Tensor b = read("bool.npy");
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(values<uint8_t>(b), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(values<std::complex<float>>(read("c64.npy")), (std::vector<std::complex<float>>{{1, 2}, {-3.5f, 0.25f}}));
  EXPECT_EQ(values<std::complex<double>>(read("be_c16.npy")), (std::vector<std::complex<double>>{{1, 2}}));
  Tensor f16 = read("f16.npy");
  EXPECT_EQ(f16.dtype(), DType::Float16);
  EXPECT_EQ(values<uint16_t>(f16), (std::vector<uint16_t>{0x3c00, 0x3800, 0xc000, 0x7bff}));
  Tensor scalar = read("scalar.npy");
  EXPECT_EQ(scalar.shape(), Shape{});
  EXPECT_EQ(values<double>(scalar), std::vector<double>{3.25});
  Tensor empty = read("empty.npy");
  EXPECT_EQ(empty.dtype(), DType::UInt16);
  EXPECT_EQ(empty.shape(), (Shape{2, 0, 3}));
  EXPECT_EQ(empty.byteSize(), 0u);
  EXPECT_EQ(values<uint64_t>(read("u64.npy")), (std::vector<uint64_t>{~uint64_t{0}, 0}));
  EXPECT_EQ(values<int8_t>(read("i8.npy")), (std::vector<int8_t>{-128, 127}));
}

TEST(Npy, NumpyLoadsFilesWeWrite) {
  if (!havePythonNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  TempDir dir;
  auto write = [&](const char* name, const Tensor& t) { ASSERT_TRUE(writeNpy(dir.path() / name, t).ok()); };

  Tensor f32(DType::Float, {2, 3});
  for (int i = 0; i < 6; ++i) f32.data<float>()[static_cast<size_t>(i)] = i * 1.5f - 2;
  write("f32.npy", f32);
  Tensor i64(DType::Int64, {4});
  std::vector<int64_t> iv = {-1, 0, int64_t{1} << 40, INT64_MIN};
  std::copy(iv.begin(), iv.end(), i64.data<int64_t>().begin());
  write("i64.npy", i64);
  Tensor b(DType::Bool, {3});
  b.data<uint8_t>()[0] = 1;
  b.data<uint8_t>()[2] = 1;
  write("bool.npy", b);
  Tensor f16(DType::Float16, {2});
  f16.data<uint16_t>()[0] = 0x3c00;
  f16.data<uint16_t>()[1] = 0xc000;
  write("f16.npy", f16);
  Tensor c(DType::Complex128, {2});
  c.data<std::complex<double>>()[0] = {1, 2};
  c.data<std::complex<double>>()[1] = {3, -4};
  write("c128.npy", c);
  Tensor s(DType::Int32, {});
  s.data<int32_t>()[0] = 42;
  write("scalar.npy", s);
  write("empty.npy", Tensor(DType::UInt8, {0, 4}));
  Tensor u32(DType::UInt32, {2});
  u32.data<uint32_t>()[0] = 0xffffffffu;
  u32.data<uint32_t>()[1] = 7;
  write("u32.npy", u32);
  Tensor i8(DType::Int8, {2});
  i8.data<int8_t>()[0] = -128;
  i8.data<int8_t>()[1] = 5;
  write("i8.npy", i8);
  Tensor str(DType::String, {3});
  str.strings() = {"monday", "", "caf\xc3\xa9"};
  write("str.npy", str);

  EXPECT_EQ(runPython(dir.path(), R"(
import sys, numpy as np
d = sys.argv[1]
def check(name, expected):
    a = np.load(d + '/' + name)
    assert a.dtype == expected.dtype, (name, a.dtype, expected.dtype)
    assert a.shape == expected.shape, (name, a.shape, expected.shape)
    assert np.array_equal(a, expected), (name, a, expected)
check('f32.npy', np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5 - 2)
check('i64.npy', np.array([-1, 0, 2**40, -2**63], dtype=np.int64))
check('bool.npy', np.array([True, False, True]))
check('f16.npy', np.array([1.0, -2.0], dtype=np.float16))
check('c128.npy', np.array([1 + 2j, 3 - 4j], dtype=np.complex128))
check('scalar.npy', np.array(42, dtype=np.int32))
check('empty.npy', np.zeros((0, 4), dtype=np.uint8))
check('u32.npy', np.array([2**32 - 1, 7], dtype=np.uint32))
check('i8.npy', np.array([-128, 5], dtype=np.int8))
check('str.npy', np.array(['monday', '', 'caf\u00e9']))
)"),
            0);
}

}  // namespace
}  // namespace poprt
