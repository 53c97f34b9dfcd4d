// Marks the classes and functions the shared runtime library (libpoprt_runtime.so) exports; the
// library hides everything else, the simulator's internals included.
#pragma once

#define POPRT_RUNTIME_API __attribute__((visibility("default")))
