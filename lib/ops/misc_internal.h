// Internal to the misc op family: the registration functions of its files (called from
// registerMiscOps in misc_ops.cpp) and the helpers they share beyond op_util.h's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::misc {

// A string-list attribute, or empty.
inline std::vector<std::string> attrStrings(const ir::Node& node, const std::string& name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end()) return {};
  if (auto* v = std::get_if<std::vector<std::string>>(&it->second.value)) return *v;
  return {};
}

void registerEinsumOps(std::vector<OpDef>& ops);
void registerStringOps(std::vector<OpDef>& ops);
void registerRandomOps(std::vector<OpDef>& ops);

}  // namespace poprt::ops::misc
