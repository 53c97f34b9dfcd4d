// Tests for tensor_proto.h: every data type through its typed field and raw_data, count and
// type mismatches, external data confinement, and real ONNX test files checked against the onnx
// Python package (onnx.numpy_helper) as an independent oracle.
#include "lib/support/tensor_proto.h"

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

#include "lib/support/npy.h"

namespace poprt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "poprt_proto_test_XXXXXX").string();
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

onnx::TensorProto makeProto(DType dtype, Shape dims, const std::string& name = "w") {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(dtype));
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

Tensor mustConvert(const onnx::TensorProto& p, const fs::path& dir = {}) {
  auto r = tensorFromProto(p, dir);
  if (!r.ok()) ADD_FAILURE() << r.error().message();
  return r.ok() ? std::move(r).value() : Tensor();
}

std::string convertError(const onnx::TensorProto& p, const fs::path& dir = {}) {
  auto r = tensorFromProto(p, dir);
  return r.ok() ? std::string("(converted fine)") : r.error().message();
}

template <class T>
std::vector<T> values(const Tensor& t) {
  auto d = t.data<T>();
  return {d.begin(), d.end()};
}

void writeBytes(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
std::vector<uint8_t> leBytes(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.begin(), out.size());  // the test host is little-endian
  return out;
}

// ---------------------------------------------------------------------------------------------
// Typed fields.

TEST(TensorProto, ReadsEveryTypeFromItsTypedField) {
  {
    auto p = makeProto(DType::Float, {2});
    p.add_float_data(1.5f);
    p.add_float_data(-2.0f);
    Tensor t = mustConvert(p);
    EXPECT_EQ(t.dtype(), DType::Float);
    EXPECT_EQ(t.shape(), (Shape{2}));
    EXPECT_EQ(values<float>(t), (std::vector<float>{1.5f, -2.0f}));
  }
  {
    auto p = makeProto(DType::UInt8, {2});
    for (int v : {0, 255}) p.add_int32_data(v);
    EXPECT_EQ(values<uint8_t>(mustConvert(p)), (std::vector<uint8_t>{0, 255}));
  }
  {
    auto p = makeProto(DType::Int8, {2});
    for (int v : {-128, 127}) p.add_int32_data(v);
    EXPECT_EQ(values<int8_t>(mustConvert(p)), (std::vector<int8_t>{-128, 127}));
  }
  {
    auto p = makeProto(DType::UInt16, {2});
    for (int v : {0, 65535}) p.add_int32_data(v);
    EXPECT_EQ(values<uint16_t>(mustConvert(p)), (std::vector<uint16_t>{0, 65535}));
  }
  {
    auto p = makeProto(DType::Int16, {2});
    for (int v : {-32768, 32767}) p.add_int32_data(v);
    EXPECT_EQ(values<int16_t>(mustConvert(p)), (std::vector<int16_t>{-32768, 32767}));
  }
  {
    auto p = makeProto(DType::Int32, {2});
    for (int v : {INT32_MIN, 7}) p.add_int32_data(v);
    EXPECT_EQ(values<int32_t>(mustConvert(p)), (std::vector<int32_t>{INT32_MIN, 7}));
  }
  {
    auto p = makeProto(DType::Int64, {2});
    p.add_int64_data(INT64_MIN);
    p.add_int64_data(int64_t{1} << 40);
    EXPECT_EQ(values<int64_t>(mustConvert(p)), (std::vector<int64_t>{INT64_MIN, int64_t{1} << 40}));
  }
  {
    auto p = makeProto(DType::String, {2});
    p.add_string_data("a");
    p.add_string_data(std::string("he\0llo", 6));  // strings are bytes, NULs included
    Tensor t = mustConvert(p);
    EXPECT_EQ(t.dtype(), DType::String);
    EXPECT_EQ(t.strings(), (std::vector<std::string>{"a", std::string("he\0llo", 6)}));
  }
  {
    auto p = makeProto(DType::Bool, {3});
    for (int v : {0, 1, 5}) p.add_int32_data(v);
    EXPECT_EQ(values<uint8_t>(mustConvert(p)), (std::vector<uint8_t>{0, 1, 1}));
  }
  {
    auto p = makeProto(DType::Float16, {2});
    for (int v : {0x3c00, 0xc000}) p.add_int32_data(v);  // 1.0, -2.0 as bit patterns
    Tensor t = mustConvert(p);
    EXPECT_EQ(t.dtype(), DType::Float16);
    EXPECT_EQ(values<uint16_t>(t), (std::vector<uint16_t>{0x3c00, 0xc000}));
  }
  {
    auto p = makeProto(DType::Double, {1});
    p.add_double_data(-0.125);
    EXPECT_EQ(values<double>(mustConvert(p)), std::vector<double>{-0.125});
  }
  {
    auto p = makeProto(DType::UInt32, {2});
    p.add_uint64_data(0xffffffffu);
    p.add_uint64_data(3);
    EXPECT_EQ(values<uint32_t>(mustConvert(p)), (std::vector<uint32_t>{0xffffffffu, 3}));
  }
  {
    auto p = makeProto(DType::UInt64, {1});
    p.add_uint64_data(~uint64_t{0});
    EXPECT_EQ(values<uint64_t>(mustConvert(p)), std::vector<uint64_t>{~uint64_t{0}});
  }
  {
    auto p = makeProto(DType::Complex64, {2});
    for (float v : {1.0f, 2.0f, 3.0f, -4.0f}) p.add_float_data(v);
    EXPECT_EQ(values<std::complex<float>>(mustConvert(p)), (std::vector<std::complex<float>>{{1, 2}, {3, -4}}));
  }
  {
    auto p = makeProto(DType::Complex128, {1});
    p.add_double_data(0.5);
    p.add_double_data(-1.0);
    EXPECT_EQ(values<std::complex<double>>(mustConvert(p)), (std::vector<std::complex<double>>{{0.5, -1}}));
  }
  {
    auto p = makeProto(DType::BFloat16, {1});
    p.add_int32_data(0x3f80);  // 1.0
    Tensor t = mustConvert(p);
    EXPECT_EQ(t.dtype(), DType::BFloat16);
    EXPECT_EQ(values<uint16_t>(t), std::vector<uint16_t>{0x3f80});
  }
  {
    auto p = makeProto(DType::Float, {});  // scalar
    p.add_float_data(3.0f);
    Tensor t = mustConvert(p);
    EXPECT_EQ(t.shape(), Shape{});
    EXPECT_EQ(values<float>(t), std::vector<float>{3.0f});
  }
  {
    auto p = makeProto(DType::Int32, {2, 0});  // empty: no data needed
    Tensor t = mustConvert(p);
    EXPECT_EQ(t.shape(), (Shape{2, 0}));
    EXPECT_EQ(t.byteSize(), 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// raw_data.

TEST(TensorProto, ReadsRawDataLittleEndian) {
  auto p = makeProto(DType::Float, {2});
  p.set_raw_data(std::string("\x00\x00\x80\x3f\x00\x00\x20\xc0", 8));  // 1.0f, -2.5f
  EXPECT_EQ(values<float>(mustConvert(p)), (std::vector<float>{1.0f, -2.5f}));

  auto q = makeProto(DType::Int16, {2});
  q.set_raw_data(std::string("\x34\x12\xfe\xff", 4));
  EXPECT_EQ(values<int16_t>(mustConvert(q)), (std::vector<int16_t>{0x1234, -2}));

  auto c = makeProto(DType::Complex64, {1});
  c.set_raw_data(std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));  // 1 - 2i
  EXPECT_EQ(values<std::complex<float>>(mustConvert(c)), (std::vector<std::complex<float>>{{1, -2}}));

  auto e = makeProto(DType::Double, {0});
  e.set_raw_data("");
  EXPECT_EQ(mustConvert(e).shape(), Shape{0});
}

TEST(TensorProto, RoundTripsEveryTypeThroughTensorToProto) {
  for (int code = 1; code <= 16; ++code) {
    auto dtype = static_cast<DType>(code);
    for (const Shape& shape : {Shape{}, Shape{3}, Shape{2, 2}, Shape{0, 5}}) {
      Tensor t(dtype, shape);
      if (dtype == DType::String) {
        // (std::string("s") += ... rather than "s" + ...: avoids a GCC 12 -Wrestrict false positive)
        for (size_t i = 0; i < t.strings().size(); ++i) t.strings()[i] = std::string("s") += std::to_string(i * 7);
      } else {
        auto b = t.bytes();
        for (size_t i = 0; i < b.size(); ++i) b[i] = dtype == DType::Bool ? (i & 1) : static_cast<uint8_t>(i * 29 + 3);
      }
      onnx::TensorProto p;
      p.add_float_data(9.0f);  // must be cleared by tensorToProto
      std::string name = std::string("t") += std::to_string(code);
      tensorToProto(t, name, &p);
      EXPECT_EQ(p.name(), name);
      EXPECT_EQ(p.data_type(), code);
      EXPECT_EQ(Shape(p.dims().begin(), p.dims().end()), shape);
      EXPECT_EQ(p.float_data_size(), 0);
      if (dtype == DType::String) {
        EXPECT_FALSE(p.has_raw_data());
        EXPECT_EQ(p.string_data_size(), t.numElements());
      } else {
        EXPECT_TRUE(p.has_raw_data());
        EXPECT_EQ(p.raw_data().size(), t.byteSize());
      }
      auto back = tensorFromProto(p, {});
      ASSERT_TRUE(back.ok()) << back.error().message();
      EXPECT_EQ(*back, t) << dtypeName(dtype) << " " << shapeToString(shape);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed protos.

TEST(TensorProto, RejectsMismatchedCounts) {
  auto p = makeProto(DType::Float, {2, 3});
  for (int i = 0; i < 5; ++i) p.add_float_data(1.0f);
  EXPECT_EQ(convertError(p), "tensor 'w': float_data has 5 values, shape [2,3] of float32 needs 6");
  p.add_float_data(1.0f);
  p.add_float_data(1.0f);
  EXPECT_THAT(convertError(p), HasSubstr("float_data has 7 values"));

  auto none = makeProto(DType::Int64, {2});
  EXPECT_EQ(convertError(none), "tensor 'w': int64_data has 0 values, shape [2] of int64 needs 2");

  auto c = makeProto(DType::Complex64, {2});
  for (int i = 0; i < 3; ++i) c.add_float_data(1.0f);
  EXPECT_THAT(convertError(c), HasSubstr("float_data has 3 values, shape [2] of complex64 needs 4"));

  auto s = makeProto(DType::String, {3}, "");
  s.add_string_data("x");
  EXPECT_EQ(convertError(s), "unnamed tensor: string_data has 1 values, shape [3] of string needs 3");

  auto raw = makeProto(DType::Float, {2, 3});
  raw.set_raw_data(std::string(23, '\0'));
  EXPECT_EQ(convertError(raw), "tensor 'w': raw_data has 23 bytes, shape [2,3] of float32 needs 24");
  raw.set_raw_data(std::string(25, '\0'));
  EXPECT_THAT(convertError(raw), HasSubstr("raw_data has 25 bytes"));
  auto empty_raw = makeProto(DType::Float, {1});
  empty_raw.set_raw_data("");
  EXPECT_THAT(convertError(empty_raw), HasSubstr("raw_data has 0 bytes"));
}

TEST(TensorProto, RejectsDataInTheWrongPlace) {
  auto p = makeProto(DType::Float, {1});
  p.add_int64_data(1);
  EXPECT_EQ(convertError(p), "tensor 'w': has int64_data, but float32 values belong in float_data");

  auto both = makeProto(DType::Float, {1});
  both.add_float_data(1.0f);
  both.set_raw_data(std::string(4, '\0'));
  EXPECT_EQ(convertError(both), "tensor 'w': has both raw_data and float_data");

  auto str_raw = makeProto(DType::String, {1});
  str_raw.set_raw_data("abc");
  EXPECT_EQ(convertError(str_raw), "tensor 'w': string tensors cannot use raw_data");
}

TEST(TensorProto, RejectsOutOfRangeValues) {
  auto p = makeProto(DType::Int8, {2});
  p.add_int32_data(1);
  p.add_int32_data(300);
  EXPECT_EQ(convertError(p), "tensor 'w': int32_data value 300 is out of range for int8");
  auto u = makeProto(DType::UInt8, {1});
  u.add_int32_data(-1);
  EXPECT_THAT(convertError(u), HasSubstr("value -1 is out of range for uint8"));
  auto h = makeProto(DType::Float16, {1});
  h.add_int32_data(70000);
  EXPECT_THAT(convertError(h), HasSubstr("value 70000 is out of range for float16"));
  auto u32 = makeProto(DType::UInt32, {1});
  u32.add_uint64_data(uint64_t{1} << 32);
  EXPECT_THAT(convertError(u32), HasSubstr("uint64_data value 4294967296 is out of range for uint32"));
}

TEST(TensorProto, RejectsBadTypesShapesAndSegments) {
  EXPECT_EQ(convertError(makeProto(DType::Undefined, {1})), "tensor 'w': unsupported data_type 0");
  auto p = makeProto(DType::Float, {1});
  p.set_data_type(99);
  EXPECT_EQ(convertError(p), "tensor 'w': unsupported data_type 99");

  EXPECT_THAT(convertError(makeProto(DType::Float, {2, -1})), HasSubstr("tensor 'w': negative dimension -1"));
  EXPECT_EQ(convertError(makeProto(DType::Float, {int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20})),
            "tensor 'w': shape [1048576,1048576,1048576] has more than 17179869184 elements");

  auto seg = makeProto(DType::Float, {1});
  seg.add_float_data(1.0f);
  seg.mutable_segment()->set_begin(0);
  seg.mutable_segment()->set_end(1);
  EXPECT_EQ(convertError(seg), "tensor 'w': segmented tensors are not supported");
}

// ---------------------------------------------------------------------------------------------
// External data.

void setExternal(onnx::TensorProto* p, std::vector<std::pair<std::string, std::string>> kv) {
  p->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto& [k, v] : kv) {
    auto* e = p->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
}

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = tmp_.path() / "model";
    fs::create_directories(model_ / "sub");
    fs::create_directories(tmp_.path() / "model2");
    // 8 junk bytes, then six floats 0.5, 1.5, ... 5.5.
    std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6, 7, 8};
    auto floats = leBytes<float>({0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f});
    bytes.insert(bytes.end(), floats.begin(), floats.end());
    writeBytes(model_ / "weights.bin", bytes);
    writeBytes(model_ / "sub" / "w.bin", leBytes<int64_t>({-9, 10}));
    writeBytes(tmp_.path() / "outside.bin", floats);
    writeBytes(tmp_.path() / "model2" / "x.bin", floats);
  }

  Tensor load(std::vector<std::pair<std::string, std::string>> kv, DType dtype = DType::Float, Shape dims = {2, 3}) {
    auto p = makeProto(dtype, dims);
    setExternal(&p, std::move(kv));
    return mustConvert(p, model_);
  }
  std::string error(std::vector<std::pair<std::string, std::string>> kv, DType dtype = DType::Float, Shape dims = {2, 3}) {
    auto p = makeProto(dtype, dims);
    setExternal(&p, std::move(kv));
    return convertError(p, model_);
  }

  TempDir tmp_;
  fs::path model_;
  const std::vector<float> expected_ = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};
};

TEST_F(ExternalData, ReadsFilesInsideTheModelDirectory) {
  EXPECT_EQ(values<float>(load({{"location", "weights.bin"}, {"offset", "8"}, {"length", "24"}})), expected_);
  EXPECT_EQ(values<float>(load({{"location", "./weights.bin"}, {"offset", "8"}, {"checksum", "ignored"}})), expected_);
  EXPECT_EQ(values<int64_t>(load({{"location", "sub/w.bin"}}, DType::Int64, {2})), (std::vector<int64_t>{-9, 10}));
  // A symlink that stays inside the directory is fine.
  fs::create_symlink("weights.bin", model_ / "inlink.bin");
  EXPECT_EQ(values<float>(load({{"location", "inlink.bin"}, {"offset", "8"}})), expected_);
  // Offset 0 and fewer bytes than the file holds: only what the shape needs is read.
  EXPECT_EQ(values<float>(load({{"location", "weights.bin"}, {"offset", "12"}}, DType::Float, {2})),
            (std::vector<float>{1.5f, 2.5f}));
}

TEST_F(ExternalData, RejectsPathsLeavingTheModelDirectory) {
  EXPECT_THAT(error({{"location", "../outside.bin"}}), HasSubstr("external data location '../outside.bin' contains '..'"));
  EXPECT_THAT(error({{"location", "sub/../weights.bin"}, {"offset", "8"}}), HasSubstr("contains '..'"));
  std::string abs = (tmp_.path() / "outside.bin").string();
  EXPECT_THAT(error({{"location", abs}}), HasSubstr("'" + abs + "' is an absolute path"));

  fs::create_symlink("../outside.bin", model_ / "link.bin");
  EXPECT_THAT(error({{"location", "link.bin"}}), HasSubstr("outside the model directory"));
  fs::create_directory_symlink(tmp_.path(), model_ / "linkdir");
  EXPECT_THAT(error({{"location", "linkdir/outside.bin"}}), HasSubstr("outside the model directory"));
  // "model2" shares the prefix "model": the containment check must compare whole components.
  fs::create_symlink("../model2/x.bin", model_ / "sibling.bin");
  EXPECT_THAT(error({{"location", "sibling.bin"}}), HasSubstr("outside the model directory"));
}

TEST_F(ExternalData, RejectsBadRangesAndKeys) {
  EXPECT_EQ(error({{"location", "weights.bin"}, {"offset", "40"}}),
            "tensor 'w': external data 'weights.bin' is 32 bytes, too short for 24 bytes at offset 40");
  EXPECT_THAT(error({{"location", "weights.bin"}, {"offset", "9"}}), HasSubstr("too short for 24 bytes at offset 9"));
  EXPECT_THAT(error({{"location", "weights.bin"}, {"offset", "18446744073709551615"}}), HasSubstr("too short"));
  EXPECT_EQ(error({{"location", "weights.bin"}, {"offset", "8"}, {"length", "20"}}),
            "tensor 'w': external data length 20 does not match shape [2,3] of float32 (needs 24 bytes)");
  EXPECT_THAT(error({{"location", "weights.bin"}, {"offset", "-1"}}),
              HasSubstr("external data offset '-1' is not a non-negative integer"));
  EXPECT_THAT(error({{"location", "weights.bin"}, {"length", "12abc"}}),
              HasSubstr("external data length '12abc' is not a non-negative integer"));
  EXPECT_THAT(error({{"location", "weights.bin"}, {"location", "weights.bin"}}), HasSubstr("appears twice"));
  EXPECT_EQ(error({{"offset", "0"}}), "tensor 'w': external data has no 'location'");
  EXPECT_THAT(error({{"location", "missing.bin"}}), HasSubstr("external data file 'missing.bin' not found"));
  EXPECT_THAT(error({{"location", "sub"}}), HasSubstr("is not a regular file"));
  EXPECT_THAT(error({{"location", "x"}}, DType::String, {1}), HasSubstr("string tensors cannot use external data"));

  auto p = makeProto(DType::Float, {2, 3});
  setExternal(&p, {{"location", "weights.bin"}, {"offset", "8"}});
  EXPECT_THAT(convertError(p, {}), HasSubstr("the model's directory is unknown"));
  p.set_raw_data(std::string(24, '\0'));
  EXPECT_EQ(convertError(p, model_), "tensor 'w': has both external data and raw_data");
}

// ---------------------------------------------------------------------------------------------
// Files.

TEST(TensorProtoFile, ReadsWhatTensorToProtoWrote) {
  TempDir dir;
  Tensor t(DType::Int32, {2});
  t.data<int32_t>()[0] = -5;
  t.data<int32_t>()[1] = 6;
  onnx::TensorProto p;
  tensorToProto(t, "input", &p);
  std::string bytes = p.SerializeAsString();
  writeBytes(dir.path() / "in.pb", std::vector<uint8_t>(bytes.begin(), bytes.end()));
  auto r = readTensorProtoFile(dir.path() / "in.pb");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->name, "input");
  EXPECT_EQ(r->tensor, t);
}

TEST(TensorProtoFile, ResolvesExternalDataNextToTheFile) {
  TempDir dir;
  writeBytes(dir.path() / "data.bin", leBytes<float>({7.0f, 8.0f}));
  auto p = makeProto(DType::Float, {2}, "e");
  setExternal(&p, {{"location", "data.bin"}});
  std::string bytes = p.SerializeAsString();
  writeBytes(dir.path() / "e.pb", std::vector<uint8_t>(bytes.begin(), bytes.end()));
  auto r = readTensorProtoFile(dir.path() / "e.pb");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<float>(r->tensor), (std::vector<float>{7.0f, 8.0f}));
}

TEST(TensorProtoFile, RejectsInvalidFiles) {
  TempDir dir;
  fs::path bad = dir.path() / "bad.pb";
  writeBytes(bad, {0x07, 0x01, 0x02});  // field number 0 is invalid protobuf
  auto r = readTensorProtoFile(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), bad.string() + ": not a valid ONNX TensorProto");

  // Valid protobuf, but the tensor in it is inconsistent: the error names file and tensor.
  auto p = makeProto(DType::Float, {3});
  p.add_float_data(1.0f);
  std::string bytes = p.SerializeAsString();
  fs::path short_pb = dir.path() / "short.pb";
  writeBytes(short_pb, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  auto s = readTensorProtoFile(short_pb);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), short_pb.string() + ": tensor 'w': float_data has 1 values, shape [3] of float32 needs 3");

  EXPECT_THAT(readTensorProtoFile(dir.path() / "nope.pb").error().message(), HasSubstr("nope.pb"));
}

// The ONNX backend test data, checked against onnx.numpy_helper via a .npy written by Python.
const char* kTestData = "/usr/share/libonnx-testdata/data/node";

bool havePythonOnnx() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import onnx, onnx.numpy_helper, numpy' >/dev/null 2>&1") == 0;
  return ok;
}

TEST(TensorProtoFile, ReadsTheOnnxBackendTestDataLikeOnnxNumpyHelper) {
  fs::path add = fs::path(kTestData) / "test_add/test_data_set_0/input_0.pb";
  if (!fs::exists(add)) GTEST_SKIP() << add << " not installed";
  auto r = readTensorProtoFile(add);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->name, "x");
  EXPECT_EQ(r->tensor.dtype(), DType::Float);
  EXPECT_EQ(r->tensor.shape(), (Shape{3, 4, 5}));

  if (!havePythonOnnx()) GTEST_SKIP() << "/usr/bin/python3 with onnx not available";
  const char* files[] = {
      "test_add/test_data_set_0/input_0.pb",  // float32, raw_data
      "test_add/test_data_set_0/input_1.pb",
      "test_cast_FLOAT_to_FLOAT16/test_data_set_0/output_0.pb",        // float16
      "test_cast_FLOAT_to_DOUBLE/test_data_set_0/output_0.pb",         // float64
      "test_and2d/test_data_set_0/output_0.pb",                        // bool
      "test_argmax_default_axis_example/test_data_set_0/output_0.pb",  // int64
  };
  TempDir dir;
  std::string script =
      "import sys, onnx, onnx.numpy_helper, numpy as np\n"
      "for i, f in enumerate(sys.argv[2:]):\n"
      "    t = onnx.load_tensor(f)\n"
      "    np.save(sys.argv[1] + '/%d.npy' % i, onnx.numpy_helper.to_array(t))\n"
      "    open(sys.argv[1] + '/%d.name' % i, 'w').write(t.name)\n";
  std::ofstream(dir.path() / "oracle.py") << script;
  std::string cmd = "/usr/bin/python3 '" + (dir.path() / "oracle.py").string() + "' '" + dir.path().string() + "'";
  std::vector<fs::path> present;
  for (const char* f : files)
    if (fs::exists(fs::path(kTestData) / f)) {
      present.push_back(fs::path(kTestData) / f);
      cmd += " '" + present.back().string() + "'";
    }
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (size_t i = 0; i < present.size(); ++i) {
    auto ours = readTensorProtoFile(present[i]);
    ASSERT_TRUE(ours.ok()) << ours.error().message();
    auto oracle = readNpy(dir.path() / (std::to_string(i) + ".npy"));
    ASSERT_TRUE(oracle.ok()) << oracle.error().message();
    EXPECT_EQ(ours->tensor, *oracle) << present[i];
    EXPECT_GT(oracle->numElements(), 0) << present[i];
    std::ifstream name_file(dir.path() / (std::to_string(i) + ".name"));
    std::string name((std::istreambuf_iterator<char>(name_file)), std::istreambuf_iterator<char>());
    EXPECT_EQ(ours->name, name) << present[i];
  }
}

TEST(TensorProtoFile, ReadsStringTensorsLikeOnnx) {
  fs::path f = fs::path(kTestData) / "test_cast_FLOAT_to_STRING/test_data_set_0/output_0.pb";
  if (!fs::exists(f) || !havePythonOnnx()) GTEST_SKIP() << "test data or python onnx not available";
  TempDir dir;
  std::string cmd =
      "/usr/bin/python3 -c 'import sys, onnx; t = onnx.load_tensor(sys.argv[1]); "
      "open(sys.argv[2], \"wb\").write(b\"\\n\".join(t.string_data))' '" +
      f.string() + "' '" + (dir.path() / "strings.txt").string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(dir.path() / "strings.txt");
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);) expected.push_back(line);
  auto r = readTensorProtoFile(f);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tensor.dtype(), DType::String);
  EXPECT_EQ(r->tensor.shape(), (Shape{3, 4}));
  EXPECT_EQ(r->tensor.strings(), expected);
}

}  // namespace
}  // namespace poprt
