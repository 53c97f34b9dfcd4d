// The skeleton of every fusion pass (passes/fuse_*.cpp): a rewrite rule is its root op types, a
// match that finds the pattern ending (or centred) at a root or says why not, and a rewrite. The
// driver (run) is written once here: it visits the nodes of the root op types present when the
// pass starts, in graph order, skips a root an earlier rewrite deleted, reports near misses,
// removes each rewrite's dead interior at once (so matches never overlap), and restores
// topological order when anything changed.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "passes/fusion_util.h"
#include "passes/pass.h"

namespace poprt::passes {

// What match() found at a root: a match, a near miss (why, reported at `at`, the root when
// null), or nothing worth a report (an empty `why`: the root is not a candidate at all).
template <class Match>
struct Found {
  std::optional<Match> match;
  std::string why;
  const ir::Node* at = nullptr;

  Found(Match m) : match(std::move(m)) {}  // NOLINT: a match converts, as Expected's value does
  static Found nearMiss(std::string why, const ir::Node* at = nullptr) { return Found(std::move(why), at); }
  static Found none() { return Found(std::string(), nullptr); }

 private:
  Found(std::string why, const ir::Node* at) : why(std::move(why)), at(at) {}
};

template <class Match>
class RewriteRule : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) final {
    // Dead leftovers of earlier passes would count as uses and hide single-use patterns.
    bool changed = fusion::removeDeadNodes(graph) > 0;
    opset_ = ctx.opsets()[""];
    const std::vector<std::string> types = rootOpTypes();
    auto isRoot = [&](const ir::Node* n) {
      return std::any_of(types.begin(), types.end(), [&](const std::string& t) { return fusion::isOp(n, t.c_str()); });
    };
    std::vector<ir::Node*> roots;
    std::unordered_set<const ir::Node*> live;  // the graph's nodes: a rewrite may delete later roots
    for (const auto& n : graph.nodes()) {
      live.insert(n.get());
      if (isRoot(n.get())) roots.push_back(n.get());
    }
    for (ir::Node* root : roots) {
      if (!live.count(root) || !isRoot(root)) continue;
      Found<Match> found = match(graph, *root, ctx);
      if (!found.match) {
        if (!found.why.empty()) ctx.nearMiss(found.at ? *found.at : *root, found.why);
        continue;
      }
      POPRT_TRY(rewrite(graph, *found.match, ctx));
      changed = true;
      // The matched interior goes at once, so no later match can take a node this one replaced.
      fusion::removeDeadNodes(graph);
      live.clear();
      for (const auto& n : graph.nodes()) live.insert(n.get());
    }
    if (changed) POPRT_TRY(fusion::finishRewrites(graph));
    return changed;
  }

 protected:
  // Default-domain op types a pattern is rooted at.
  virtual std::vector<std::string> rootOpTypes() const = 0;
  // The model's default-domain opset, for match and rewrite.
  int64_t opset() const { return opset_; }
  virtual Found<Match> match(ir::Graph& graph, ir::Node& root, PassContext& ctx) = 0;
  // Replaces the match's nodes; may leave dead nodes and the graph out of order (run finishes it).
  virtual Status rewrite(ir::Graph& graph, Match& m, PassContext& ctx) = 0;

 private:
  int64_t opset_ = 0;
};

}  // namespace poprt::passes
