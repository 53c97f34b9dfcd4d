/* The custom-op plugin ABI, version 1: a shared library that adds ops of its own domain to poprt.
 *
 * poprt-convert, popef-run, popef-serve, the runtime API and the Python package load such a library
 * with --custom_library_so_paths LIB.so (poprt::runtime::loadCustomOpLibrary, poprt.load_custom_ops).
 * They look up the one symbol POPRT_PLUGIN_ENTRY, call it once with poprt's host API and keep the
 * plugin it returns for the life of the process. Its ops are then known everywhere ONNX ops are:
 * the importer and ONNX shape inference (through `infer`), constant folding, --check and the host
 * programs (through `compute`). A PopEF compiled with a plugin op records the plugin's name, and
 * loading it without that plugin is an error naming the plugin.
 *
 * The ABI is plain C, so a plugin needs only this header (find_package(poprt) -> poprt::custom_op)
 * and links nothing of poprt's. Everything a plugin returns (names, tables) must stay valid while
 * the library is loaded. Calls may come from several threads at once: `infer` and `compute` must
 * be reentrant. A function that fails returns non-zero and writes a one-line reason, NUL
 * terminated, into its `error` buffer of `error_size` bytes; poprt adds the node's name.
 * examples/custom_op/ is a complete plugin built against the installed package.
 */
#ifndef POPRT_CUSTOM_OP_H
#define POPRT_CUSTOM_OP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POPRT_CUSTOM_OP_ABI_VERSION 1u
/* The symbol a plugin exports, of type poprt_plugin_entry_fn. */
#define POPRT_PLUGIN_ENTRY "poprt_plugin_v1"
#define POPRT_MAX_RANK 8

/* Element types, numbered as ONNX's TensorProto.DataType. */
enum {
  POPRT_DTYPE_UNDEFINED = 0,
  POPRT_DTYPE_FLOAT = 1,
  POPRT_DTYPE_UINT8 = 2,
  POPRT_DTYPE_INT8 = 3,
  POPRT_DTYPE_INT32 = 6,
  POPRT_DTYPE_INT64 = 7,
  POPRT_DTYPE_BOOL = 9,
  POPRT_DTYPE_FLOAT16 = 10,
  POPRT_DTYPE_DOUBLE = 11
};

/* A tensor's type. In `infer`, what is known so far: dtype POPRT_DTYPE_UNDEFINED, rank -1 or a dim
 * -1 stand for "not known yet"; an op that cannot tell its outputs' shapes from that leaves them
 * unknown (rank -1) rather than failing. In `compute` every input type is fully known. */
typedef struct poprt_tensor_type {
  int32_t dtype;
  int32_t rank;
  int64_t dims[POPRT_MAX_RANK];
} poprt_tensor_type;

/* A tensor's elements, dense and row-major. Inputs are read-only; outputs are allocated by poprt
 * with the types `infer` gave for these inputs, and `compute` fills them. */
typedef struct poprt_tensor {
  poprt_tensor_type type;
  void* data;
} poprt_tensor;

/* The node being inferred or run (opaque): read its attributes through poprt_host_api. */
typedef struct poprt_node poprt_node;

/* What poprt offers a plugin. Each attribute reader returns 1 and sets its outputs when the node
 * has the attribute with that type, and 0 otherwise (absent, or of another type). Pointers it
 * returns stay valid until the call of `infer` or `compute` they were read in returns. */
typedef struct poprt_host_api {
  uint32_t abi_version; /* POPRT_CUSTOM_OP_ABI_VERSION */
  int (*attr_int)(const poprt_node* node, const char* name, int64_t* value);
  int (*attr_float)(const poprt_node* node, const char* name, float* value);
  int (*attr_string)(const poprt_node* node, const char* name, const char** data, size_t* size);
  int (*attr_ints)(const poprt_node* node, const char* name, const int64_t** values, size_t* count);
  int (*attr_floats)(const poprt_node* node, const char* name, const float** values, size_t* count);
} poprt_host_api;

/* Shape and type inference: sets outputs[0..num_outputs) from the inputs (absent optional inputs
 * have dtype POPRT_DTYPE_UNDEFINED and rank -1) and the node's attributes. */
typedef int (*poprt_infer_fn)(const poprt_node* node, int32_t num_inputs, const poprt_tensor_type* inputs, int32_t num_outputs,
                              poprt_tensor_type* outputs, char* error, size_t error_size);
/* The host kernel. */
typedef int (*poprt_compute_fn)(const poprt_node* node, int32_t num_inputs, const poprt_tensor* inputs, int32_t num_outputs,
                                poprt_tensor* outputs, char* error, size_t error_size);

/* Op flags. */
enum {
  /* The op computes in float16 when its float inputs are float16: --precision fp16 leaves it in
   * float16. Without the flag it keeps float32, with casts around it. */
  POPRT_OP_FLOAT16 = 1u
};

typedef struct poprt_custom_op {
  const char* domain; /* the plugin's own domain: not "", "ai.onnx", "ai.onnx.ml" nor "ai.graphcore" */
  const char* op_type;
  int32_t min_inputs; /* inputs beyond min_inputs are optional */
  int32_t max_inputs;
  int32_t num_outputs; /* 1 to 64 */
  uint32_t flags;      /* POPRT_OP_* */
  poprt_infer_fn infer;
  poprt_compute_fn compute;
} poprt_custom_op;

typedef struct poprt_plugin {
  uint32_t abi_version; /* POPRT_CUSTOM_OP_ABI_VERSION: the version the plugin was built for */
  const char* name;     /* recorded in PopEFs and named when a PopEF needs the plugin */
  const char* version;
  int32_t num_ops;
  const poprt_custom_op* ops;
} poprt_plugin;

/* The entry point. Returns the plugin, or NULL when it cannot work with this host (it may check
 * host->abi_version). */
typedef const poprt_plugin* (*poprt_plugin_entry_fn)(const poprt_host_api* host);

#ifdef __cplusplus
}
#endif

#endif /* POPRT_CUSTOM_OP_H */
