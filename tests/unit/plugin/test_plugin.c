/* Plugins for plugin_test.cpp, one library per variant (tests/CMakeLists.txt):
 *   TEST_PLUGIN_OK:       test.plugin::ScaleShift (y = x * scale + shift), ::SplitHalves (x[2n] -> x[:n], x[n:]),
 *                         ::Fail (its kernel fails)
 *   TEST_PLUGIN_BAD_ABI:  built for ABI version 99
 *   TEST_PLUGIN_RESERVED: an op in ONNX's domain
 *   TEST_PLUGIN_DUPLICATE: test.plugin::ScaleShift again
 *   TEST_PLUGIN_BAD_INFER: test.bad::Rank9, whose inference gives rank 9
 *   TEST_PLUGIN_NO_ENTRY: no entry point
 */
#include <poprt/custom_op.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#if defined(TEST_PLUGIN_NO_ENTRY)
EXPORT int not_a_plugin(void) { return 0; }
#else

static const poprt_host_api* host;

static size_t count(const poprt_tensor_type* t) {
  size_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d) n *= (size_t)t->dims[d];
  return n;
}

static int same_infer(const poprt_node* node, int32_t ni, const poprt_tensor_type* in, int32_t no, poprt_tensor_type* out,
                      char* error, size_t error_size) {
  (void)node, (void)ni, (void)no, (void)error, (void)error_size;
  out[0] = in[0];
  return 0;
}

static int scale_shift(const poprt_node* node, int32_t ni, const poprt_tensor* in, int32_t no, poprt_tensor* out, char* error,
                       size_t error_size) {
  (void)ni, (void)no;
  float scale = 1.0f, shift = 0.0f;
  host->attr_float(node, "scale", &scale);
  host->attr_float(node, "shift", &shift);
  if (in[0].type.dtype != POPRT_DTYPE_FLOAT) {
    snprintf(error, error_size, "float32 only");
    return 1;
  }
  const float* x = in[0].data;
  float* y = out[0].data;
  for (size_t i = 0, n = count(&in[0].type); i < n; ++i) y[i] = x[i] * scale + shift;
  return 0;
}

static int halves_infer(const poprt_node* node, int32_t ni, const poprt_tensor_type* in, int32_t no, poprt_tensor_type* out,
                        char* error, size_t error_size) {
  (void)node, (void)ni, (void)no;
  if (in[0].rank != -1 && in[0].rank != 1) {
    snprintf(error, error_size, "SplitHalves takes a vector, got rank %d", (int)in[0].rank);
    return 1;
  }
  for (int o = 0; o < 2; ++o) {
    out[o] = in[0];
    if (in[0].rank == 1 && in[0].dims[0] >= 0) out[o].dims[0] = in[0].dims[0] / 2;
  }
  return 0;
}

static int halves(const poprt_node* node, int32_t ni, const poprt_tensor* in, int32_t no, poprt_tensor* out, char* error,
                  size_t error_size) {
  (void)node, (void)ni, (void)no, (void)error, (void)error_size;
  const size_t half = (size_t)out[0].type.dims[0] * 4; /* float32 bytes */
  memcpy(out[0].data, in[0].data, half);
  memcpy(out[1].data, (const char*)in[0].data + half, half);
  return 0;
}

static int fail(const poprt_node* node, int32_t ni, const poprt_tensor* in, int32_t no, poprt_tensor* out, char* error,
                size_t error_size) {
  (void)node, (void)ni, (void)in, (void)no, (void)out;
  snprintf(error, error_size, "kernel failed on purpose\nsecond line");
  return 1;
}

static int rank9(const poprt_node* node, int32_t ni, const poprt_tensor_type* in, int32_t no, poprt_tensor_type* out, char* error,
                 size_t error_size) {
  (void)node, (void)ni, (void)in, (void)no, (void)error, (void)error_size;
  out[0].dtype = POPRT_DTYPE_FLOAT;
  out[0].rank = 9;
  return 0;
}

#if defined(TEST_PLUGIN_OK)
static const poprt_custom_op ops[] = {
    {"test.plugin", "ScaleShift", 1, 1, 1, 0, same_infer, scale_shift},
    {"test.plugin", "SplitHalves", 1, 1, 2, 0, halves_infer, halves},
    {"test.plugin", "Fail", 1, 1, 1, 0, same_infer, fail},
};
#define NAME "test_ok"
#define ABI POPRT_CUSTOM_OP_ABI_VERSION
#elif defined(TEST_PLUGIN_BAD_ABI)
static const poprt_custom_op ops[] = {{"test.abi", "Op", 1, 1, 1, 0, same_infer, scale_shift}};
#define NAME "test_bad_abi"
#define ABI 99
#elif defined(TEST_PLUGIN_RESERVED)
static const poprt_custom_op ops[] = {{"ai.onnx", "Relu", 1, 1, 1, 0, same_infer, scale_shift}};
#define NAME "test_reserved"
#define ABI POPRT_CUSTOM_OP_ABI_VERSION
#elif defined(TEST_PLUGIN_DUPLICATE)
static const poprt_custom_op ops[] = {{"test.plugin", "ScaleShift", 1, 1, 1, 0, same_infer, scale_shift}};
#define NAME "test_duplicate"
#define ABI POPRT_CUSTOM_OP_ABI_VERSION
#elif defined(TEST_PLUGIN_BAD_INFER)
static const poprt_custom_op ops[] = {{"test.bad", "Rank9", 1, 1, 1, 0, rank9, scale_shift}};
#define NAME "test_bad_infer"
#define ABI POPRT_CUSTOM_OP_ABI_VERSION
#endif

static const poprt_plugin plugin = {ABI, NAME, "0.1", (int32_t)(sizeof ops / sizeof ops[0]), ops};

EXPORT const poprt_plugin* poprt_plugin_v1(const poprt_host_api* api) {
  host = api;
  return &plugin;
}
#endif
