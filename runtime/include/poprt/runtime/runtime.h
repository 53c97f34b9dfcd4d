// The poprt runtime API in one include: find_package(poprt) and link poprt::runtime.
#pragma once

#include "custom_ops.h"
#include "device_manager.h"
#include "errors.h"
#include "model_runner.h"
#include "queue_manager.h"
#include "ring_buffer.h"
#include "session.h"
#include "tensor_memory.h"
