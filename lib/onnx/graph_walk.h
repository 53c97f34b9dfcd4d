// Walking a GraphProto and the subgraphs below it (If/Loop/Scan bodies), and what that tells.
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "lib/support/status.h"

namespace poprt::onnxio {

// Calls fn(graph, where) for the graph and every subgraph below it; `where` names the node and
// attribute a subgraph hangs from, after the caller's `where`.
template <class Fn>
Status forEachGraph(const onnx::GraphProto& g, const std::string& where, const Fn& fn) {
  POPRT_TRY(fn(g, where));
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      const std::string sub = where + ": node '" + n.name() + "' (" + n.op_type() + ") attribute '" + a.name() + "'";
      if (a.has_g()) POPRT_TRY(forEachGraph(a.g(), sub, fn));
      for (const auto& g2 : a.graphs()) POPRT_TRY(forEachGraph(g2, sub, fn));
    }
  return okStatus();
}

// The bytes of the tensors a graph holds, subgraphs included: its initializers and its Constant
// nodes' values (elements x element size; a tensor of unknown dtype or strings counts its raw
// bytes). What a host program carries as weights.
uint64_t weightBytes(const onnx::GraphProto& g);

}  // namespace poprt::onnxio
