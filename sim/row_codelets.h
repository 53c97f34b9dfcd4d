// The codelets that work along rows (layouts in lib/exec/codelets.h): Reduce, Softmax, Norm,
// BatchNorm (per-channel) and Attention (one head's rows). Internal to sim/codelets.cpp, which
// dispatches on the codelet id.
#pragma once

#include <cstdint>

#include "lib/exec/executable.h"

namespace poprt::sim {

Status checkReduce(const exec::Vertex& v);
void runReduce(const exec::Vertex& v, uint8_t* mem);
uint64_t reduceCycles(const exec::Vertex& v, const exec::Target& t);

Status checkSoftmax(const exec::Vertex& v);
void runSoftmax(const exec::Vertex& v, uint8_t* mem);
uint64_t softmaxCycles(const exec::Vertex& v, const exec::Target& t);

Status checkNorm(const exec::Vertex& v);
void runNorm(const exec::Vertex& v, uint8_t* mem);
uint64_t normCycles(const exec::Vertex& v, const exec::Target& t);

Status checkBatchNorm(const exec::Vertex& v);
void runBatchNorm(const exec::Vertex& v, uint8_t* mem);
uint64_t batchNormCycles(const exec::Vertex& v, const exec::Target& t);

Status checkAttention(const exec::Vertex& v);
void runAttention(const exec::Vertex& v, uint8_t* mem);
uint64_t attentionCycles(const exec::Vertex& v, const exec::Target& t);

}  // namespace poprt::sim
