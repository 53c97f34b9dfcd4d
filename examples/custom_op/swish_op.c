/* A custom-op plugin: com.example::Swish, y = x * sigmoid(beta * x), beta a float attribute
 * (default 1), on float32 tensors of any shape. Plain C against poprt/custom_op.h only.
 *
 *   poprt-convert --input_model swish_mlp.onnx --custom_library_so_paths libswish_op.so --export_popef
 *   popef-run executable.popef --custom_library_so_paths libswish_op.so --fill random
 */
#include <math.h>
#include <poprt/custom_op.h>
#include <stdio.h>

static const poprt_host_api* host;

static float beta_of(const poprt_node* node) {
  float beta = 1.0f;
  host->attr_float(node, "beta", &beta); /* absent: the default */
  return beta;
}

static int swish_infer(const poprt_node* node, int32_t num_inputs, const poprt_tensor_type* inputs, int32_t num_outputs,
                       poprt_tensor_type* outputs, char* error, size_t error_size) {
  (void)node, (void)num_inputs, (void)num_outputs;
  if (inputs[0].dtype != POPRT_DTYPE_UNDEFINED && inputs[0].dtype != POPRT_DTYPE_FLOAT) {
    snprintf(error, error_size, "Swish takes float32, got element type %d", (int)inputs[0].dtype);
    return 1;
  }
  outputs[0] = inputs[0]; /* same type and shape, as far as they are known */
  outputs[0].dtype = POPRT_DTYPE_FLOAT;
  return 0;
}

static int swish_compute(const poprt_node* node, int32_t num_inputs, const poprt_tensor* inputs, int32_t num_outputs,
                         poprt_tensor* outputs, char* error, size_t error_size) {
  (void)num_inputs, (void)num_outputs, (void)error, (void)error_size;
  const float beta = beta_of(node);
  size_t n = 1;
  for (int32_t d = 0; d < inputs[0].type.rank; ++d) n *= (size_t)inputs[0].type.dims[d];
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  for (size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + expf(-beta * x[i]));
  return 0;
}

static const poprt_custom_op ops[] = {
    {"com.example", "Swish", 1, 1, 1, 0, swish_infer, swish_compute},
};

static const poprt_plugin plugin = {POPRT_CUSTOM_OP_ABI_VERSION, "swish_op", "1.0", 1, ops};

__attribute__((visibility("default"))) const poprt_plugin* poprt_plugin_v1(const poprt_host_api* api) {
  if (api->abi_version != POPRT_CUSTOM_OP_ABI_VERSION) return NULL;
  host = api;
  return &plugin;
}
