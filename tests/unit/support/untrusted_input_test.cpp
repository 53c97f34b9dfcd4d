// The readers' defences that fuzzing and the malformed corpus asked for: sizes checked against the
// caps of limits.h before anything is allocated, and counts a file cannot bound refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "lib/support/limits.h"
#include "lib/support/npy.h"
#include "lib/support/tensor_proto.h"

namespace poprt {
namespace {

std::vector<uint8_t> npyWithHeader(const std::string& dict, size_t data_bytes = 0) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  out.push_back(static_cast<uint8_t>(header.size()));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes);
  return out;
}

// '<U0' strings take no bytes, so an empty file could declare 2^33 of them: refused before the
// strings are allocated (this used to try to allocate 256 GiB).
TEST(UntrustedInput, NpyZeroWidthStringsAreRefused) {
  auto t = parseNpy(npyWithHeader("{'descr': '<U0', 'fortran_order': False, 'shape': (8589934592,), }"), "u0.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), "u0.npy: dtype '<U0' (zero-width strings) is not supported");
  // and an overflowing string shape names the file (it used not to)
  t = parseNpy(npyWithHeader("{'descr': '<U1', 'fortran_order': False, 'shape': (4611686018427387904, 8), }"), "big.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message().rfind("big.npy: ", 0), 0u) << t.error().message();
}

TEST(UntrustedInput, NpyDataAboveTheCapIsRefusedBeforeReading) {
  ::setenv("POPRT_MAX_TENSOR_BYTES", "64", 1);
  auto ok = parseNpy(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }", 64), "ok.npy");
  EXPECT_TRUE(ok.ok()) << ok.error().message();
  auto big = parseNpy(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (17,), }", 68), "big.npy");
  ::unsetenv("POPRT_MAX_TENSOR_BYTES");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("above the limit of 64 (POPRT_MAX_TENSOR_BYTES)"), std::string::npos)
      << big.error().message();
}

TEST(UntrustedInput, TensorProtoAboveTheCapIsRefusedBeforeReading) {
  onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(1024);
  p.set_data_location(onnx::TensorProto::EXTERNAL);  // never opened: the cap comes first
  auto* e = p.add_external_data();
  e->set_key("location");
  e->set_value("weights.bin");
  ::setenv("POPRT_MAX_TENSOR_BYTES", "1024", 1);
  auto t = tensorFromProto(p, "/nonexistent");
  ::unsetenv("POPRT_MAX_TENSOR_BYTES");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(),
            "tensor 'w': shape [1024] of float32 is 4096 bytes, above the limit of 1024 (POPRT_MAX_TENSOR_BYTES)");
}

TEST(UntrustedInput, ExternalLocationsWithNulBytesAreRefused) {
  onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(1);
  p.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = p.add_external_data();
  e->set_key("location");
  e->set_value(std::string("w.bin\0/../../etc/passwd", 23));
  auto file = externalDataFile(p, ".");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message().find("NUL byte"), std::string::npos) << file.error().message();
}

TEST(LimitsTest, DefaultsAndEnvironment) {
  ::unsetenv("POPRT_MAX_TENSOR_BYTES");
  ASSERT_TRUE(maxTensorBytes().ok());
  EXPECT_EQ(*maxTensorBytes(), kDefaultMaxTensorBytes);
  ::setenv("POPRT_MAX_TENSOR_BYTES", "1024", 1);
  EXPECT_EQ(*maxTensorBytes(), 1024u);
  for (const char* bad : {"0", "-5", "12kb", "99999999999999999999999"}) {
    ::setenv("POPRT_MAX_TENSOR_BYTES", bad, 1);
    auto v = maxTensorBytes();
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.error().message().find("POPRT_MAX_TENSOR_BYTES"), std::string::npos);
  }
  ::unsetenv("POPRT_MAX_TENSOR_BYTES");
  ::setenv("POPRT_MAX_DEVICE_BYTES", "4096", 1);
  EXPECT_EQ(*maxDeviceBytes(), 4096u);
  ::unsetenv("POPRT_MAX_DEVICE_BYTES");
  EXPECT_EQ(*maxDeviceBytes(), kDefaultMaxDeviceBytes);
}

}  // namespace
}  // namespace poprt
