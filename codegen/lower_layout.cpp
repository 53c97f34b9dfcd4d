// View ops reuse their input's tile mapping; rearranging ops become exchange copies (plus Fill
// vertices for Pad's constant), with no compute on the moved elements.
#include "codegen/lowering.h"
#include "codegen/rearrange.h"
#include "lib/exec/vertex_params.h"

namespace poprt::codegen {

Status lowerView(Lowering& l, const ir::Node& node) {
  l.setMapping(node.output(0), l.mapping(node.input(0)));
  return okStatus();
}

Status lowerRearrange(Lowering& l, const ir::Node& node, const RearrangeMap& map) {
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    const ir::Value* y = node.output(o);
    if (!y) continue;
    const size_t esize = dtypeSize(y->type.dtype);
    const auto& sources = map.outputs.at(o);
    TileMapping out = l.spreadLinear(static_cast<int64_t>(sources.size()), esize);
    auto& copies = l.exchange().copies;
    for (const Region& r : out.regions) {
      // Runs of output elements whose sources are consecutive elements of one input (or fills).
      int64_t i = r.begin;
      const int64_t end = r.begin + r.count;
      while (i < end) {
        const auto& s = sources[static_cast<size_t>(i)];
        int64_t j = i + 1;
        while (j < end) {
          const auto& t = sources[static_cast<size_t>(j)];
          bool continues = s.input < 0 ? t.input < 0 : (t.input == s.input && t.element == s.element + (j - i));
          if (!continues) break;
          ++j;
        }
        uint64_t offset = r.offset + static_cast<uint64_t>(i - r.begin) * esize;
        if (s.input < 0) {
          l.computeSet().vertices.push_back(exec::makeVertex(r.tile, y->type.dtype,
                                                             {{offset, static_cast<uint64_t>(j - i) * esize}},
                                                             exec::FillParams{j - i, static_cast<float>(map.fill_value)}));
        } else {
          gatherElements(l.mapping(node.input(static_cast<size_t>(s.input))), s.element, j - i, esize, r.tile, offset, copies);
        }
        i = j;
      }
    }
    l.setMapping(y, std::move(out));
  }
  return okStatus();
}

}  // namespace poprt::codegen
