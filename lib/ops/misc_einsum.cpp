// Einsum (opset 12): numpy semantics — explicit or implicit output, ellipsis with broadcasting,
// repeated labels (diagonals), size-1 broadcasting of labelled dimensions. Operands are folded
// left to right, summing each label as soon as no later operand and not the output needs it, so
// the work stays near that of the pairwise contractions. Floats accumulate in double, integers
// in wrapping 64-bit arithmetic.
#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include "lib/ops/misc_internal.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::misc {
namespace {

// Cap on the iterations of one combination step (its output times its summed labels).
constexpr int64_t kMaxWork = int64_t{1} << 34;
constexpr int kEllipsisBase = 1000;  // labels of ellipsis dimensions: 1000 + k (letters are < 128)

struct ParsedTerm {
  std::vector<int> letters_before, letters_after;  // around the ellipsis
  bool has_ellipsis = false;
};

Expected<ParsedTerm> parseTerm(const std::string& s) {
  ParsedTerm t;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      (t.has_ellipsis ? t.letters_after : t.letters_before).push_back(c);
      ++i;
    } else if (s.compare(i, 3, "...") == 0) {
      if (t.has_ellipsis) return Error("more than one ellipsis in term '" + s + "'");
      t.has_ellipsis = true;
      i += 3;
    } else {
      return Error("invalid character '" + std::string(1, c) + "' in einsum term '" + s + "'");
    }
  }
  return t;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

// A dense tensor over distinct labels; a dimension of 1 broadcasts against a larger label size.
template <class A>
struct Term {
  std::vector<int> labels;
  Shape dims;
  std::vector<A> data;
};

// out[labels = out_labels] = Σ over the other labels of the terms of Π terms. Label sizes are
// `sizes`; a term whose dim is 1 (or that lacks the label) is read with stride 0 along it.
template <class A>
Expected<Term<A>> combine(const std::vector<const Term<A>*>& terms, const std::vector<int>& out_labels,
                          const std::map<int, int64_t>& sizes) {
  std::vector<int> all = out_labels;
  for (const Term<A>* t : terms)
    for (int l : t->labels)
      if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
  Term<A> out;
  out.labels = out_labels;
  for (int l : out_labels) out.dims.push_back(sizes.at(l));
  POPRT_TRY(checkedElementCount(out.dims));
  int64_t out_count = 1, work = 1;
  for (int64_t d : out.dims) out_count *= d;
  std::vector<int64_t> all_dims;
  for (int l : all) {
    const int64_t d = sizes.at(l);
    all_dims.push_back(d);
    if (d != 0 && work > kMaxWork / d) return Error("einsum needs more than 2^34 steps");
    work *= d;
  }
  out.data.assign(static_cast<size_t>(out_count), A{0});
  if (work == 0) return out;
  // strides[k][j]: stride of term k along label all[j].
  std::vector<std::vector<int64_t>> strides(terms.size(), std::vector<int64_t>(all.size(), 0));
  for (size_t k = 0; k < terms.size(); ++k) {
    const Term<A>& t = *terms[k];
    int64_t stride = 1;
    for (size_t i = t.labels.size(); i-- > 0;) {
      const size_t j = static_cast<size_t>(std::find(all.begin(), all.end(), t.labels[i]) - all.begin());
      strides[k][j] = t.dims[i] == 1 ? 0 : stride;
      stride *= t.dims[i];
    }
  }
  const int64_t inner = work / out_count;  // the summed labels come last in `all`
  std::vector<int64_t> idx(all.size(), 0), off(terms.size(), 0);
  for (int64_t step = 0; step < work; ++step) {
    A prod = A{1};
    for (size_t k = 0; k < terms.size(); ++k) prod *= terms[k]->data[static_cast<size_t>(off[k])];
    out.data[static_cast<size_t>(step / inner)] += prod;
    for (size_t j = all.size(); j-- > 0;) {
      for (size_t k = 0; k < terms.size(); ++k) off[k] += strides[k][j];
      if (++idx[j] < all_dims[j]) break;
      for (size_t k = 0; k < terms.size(); ++k) off[k] -= strides[k][j] * all_dims[j];
      idx[j] = 0;
    }
  }
  return out;
}

template <class T>
using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class T>
Acc<T> toAcc(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<double>(toCompute(v));
}

// An equation applied to its inputs: each operand's labels (its ellipsis dims right-aligned to the
// common ellipsis rank), every label's size, and the output's labels.
struct EinsumPlan {
  std::vector<std::vector<int>> labels;
  std::map<int, int64_t> sizes;
  std::vector<int> out_labels;
};

// The operands' labels from the equation's left side; E: the common ellipsis rank.
Expected<std::vector<std::vector<int>>> operandLabels(const std::string& lhs, const std::vector<const Tensor*>& in, int64_t& E) {
  std::vector<std::string> term_strs = split(lhs, ',');
  if (term_strs.size() != in.size())
    return Error("equation has " + std::to_string(term_strs.size()) + " terms for " + std::to_string(in.size()) + " inputs");
  std::vector<ParsedTerm> parsed;
  std::vector<int64_t> ell_rank(in.size(), 0);
  E = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    POPRT_ASSIGN_OR_RETURN(ParsedTerm t, parseTerm(term_strs[i]));
    const int64_t rank = static_cast<int64_t>(in[i]->shape().size());
    const int64_t letters = static_cast<int64_t>(t.letters_before.size() + t.letters_after.size());
    if (t.has_ellipsis ? letters > rank : letters != rank)
      return Error("term '" + term_strs[i] + "' does not match input " + std::to_string(i) + " of shape " +
                   shapeToString(in[i]->shape()));
    ell_rank[i] = rank - letters;
    E = std::max(E, ell_rank[i]);
    parsed.push_back(std::move(t));
  }
  std::vector<std::vector<int>> labels(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    labels[i] = parsed[i].letters_before;
    for (int64_t k = E - ell_rank[i]; k < E; ++k) labels[i].push_back(kEllipsisBase + static_cast<int>(k));
    labels[i].insert(labels[i].end(), parsed[i].letters_after.begin(), parsed[i].letters_after.end());
  }
  return labels;
}

// Label sizes: equal across operands, or 1 (broadcast); equal within an operand (diagonal).
// `counts`: how many times each label appears.
Expected<std::map<int, int64_t>> labelSizes(const std::vector<std::vector<int>>& labels, const std::vector<const Tensor*>& in,
                                            std::map<int, int>& counts) {
  std::map<int, int64_t> sizes;
  for (size_t i = 0; i < in.size(); ++i) {
    std::map<int, int64_t> local;
    for (size_t p = 0; p < labels[i].size(); ++p) {
      const int l = labels[i][p];
      const int64_t d = in[i]->shape()[p];
      ++counts[l];
      if (auto it = local.find(l); it != local.end() && it->second != d)
        return Error("repeated label in input " + std::to_string(i) + " has differing dimensions");
      local[l] = d;
      auto [it, fresh] = sizes.emplace(l, d);
      if (!fresh && it->second != d) {
        if (it->second != 1 && d != 1)
          return Error("dimensions of a label differ: " + std::to_string(it->second) + " and " + std::to_string(d));
        it->second = std::max(it->second, d);
      }
    }
  }
  return sizes;
}

Expected<EinsumPlan> planEinsum(const std::string& eq, const std::vector<const Tensor*>& in) {
  EinsumPlan plan;
  const size_t arrow = eq.find("->");
  int64_t E = 0;
  POPRT_ASSIGN_OR_RETURN(plan.labels, operandLabels(eq.substr(0, arrow), in, E));
  std::map<int, int> counts;
  POPRT_ASSIGN_OR_RETURN(plan.sizes, labelSizes(plan.labels, in, counts));
  std::vector<int>& out_labels = plan.out_labels;
  if (arrow != std::string::npos) {
    POPRT_ASSIGN_OR_RETURN(ParsedTerm o, parseTerm(eq.substr(arrow + 2)));
    out_labels = o.letters_before;
    if (o.has_ellipsis) {
      for (int64_t k = 0; k < E; ++k) out_labels.push_back(kEllipsisBase + static_cast<int>(k));
      out_labels.insert(out_labels.end(), o.letters_after.begin(), o.letters_after.end());
    } else if (E > 0) {
      return Error("the output has no ellipsis but the inputs have ellipsis dimensions");
    }
    std::set<int> seen;
    for (int l : out_labels) {
      if (!seen.insert(l).second) return Error("output label '" + std::string(1, static_cast<char>(l)) + "' is repeated");
      if (!plan.sizes.count(l)) return Error("output label '" + std::string(1, static_cast<char>(l)) + "' is not in any input");
    }
  } else {  // implicit: the ellipsis dims, then the letters used once, in ASCII order
    for (int64_t k = 0; k < E; ++k) out_labels.push_back(kEllipsisBase + static_cast<int>(k));
    for (const auto& [l, n] : counts)
      if (l < kEllipsisBase && n == 1) out_labels.push_back(l);
  }
  return plan;
}

// An operand as a term over its distinct labels (taking diagonals of repeated ones).
template <class T>
Term<Acc<T>> termOf(const Tensor& x, const std::vector<int>& labels) {
  Term<Acc<T>> t;
  const Shape& s = x.shape();
  std::vector<int64_t> in_strides(s.size(), 1);
  for (size_t p = s.size(); p-- > 1;) in_strides[p - 1] = in_strides[p] * s[p];
  std::vector<int64_t> stride_of;  // per distinct label: sum of the input strides
  for (size_t p = 0; p < labels.size(); ++p) {
    auto pos = std::find(t.labels.begin(), t.labels.end(), labels[p]);
    if (pos == t.labels.end()) {
      t.labels.push_back(labels[p]);
      t.dims.push_back(s[p]);
      stride_of.push_back(in_strides[p]);
    } else {
      stride_of[static_cast<size_t>(pos - t.labels.begin())] += in_strides[p];
    }
  }
  auto src = x.data<T>();
  int64_t n = 1;
  for (int64_t d : t.dims) n *= d;
  t.data.resize(static_cast<size_t>(n));
  std::vector<int64_t> idx(t.dims.size(), 0);
  int64_t off = 0;
  for (int64_t e = 0; e < n; ++e) {
    t.data[static_cast<size_t>(e)] = toAcc<T>(src[static_cast<size_t>(off)]);
    for (size_t j = t.dims.size(); j-- > 0;) {
      off += stride_of[j];
      if (++idx[j] < t.dims[j]) break;
      off -= stride_of[j] * t.dims[j];
      idx[j] = 0;
    }
  }
  return t;
}

// The operands contracted left to right: each first sums the labels only it has, then joins the
// running product, keeping the labels the output or a later operand needs.
template <class T>
Expected<Tensor> contract(const EinsumPlan& plan, const std::vector<const Tensor*>& in, DType dtype) {
  using A = Acc<T>;
  std::vector<Term<A>> terms;
  for (size_t i = 0; i < in.size(); ++i) terms.push_back(termOf<T>(*in[i], plan.labels[i]));
  auto neededAfter = [&](size_t i) {
    std::set<int> need(plan.out_labels.begin(), plan.out_labels.end());
    for (size_t j = i + 1; j < terms.size(); ++j) need.insert(terms[j].labels.begin(), terms[j].labels.end());
    return need;
  };
  auto keepOf = [](const std::vector<const Term<A>*>& ts, const std::set<int>& need) {
    std::vector<int> keep;
    for (const Term<A>* t : ts)
      for (int l : t->labels)
        if (need.count(l) && std::find(keep.begin(), keep.end(), l) == keep.end()) keep.push_back(l);
    return keep;
  };
  Term<A> acc;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::set<int> need = neededAfter(i);
    std::set<int> need_i = need;
    if (i > 0) need_i.insert(acc.labels.begin(), acc.labels.end());
    POPRT_ASSIGN_OR_RETURN(Term<A> reduced, combine<A>({&terms[i]}, keepOf({&terms[i]}, need_i), plan.sizes));
    if (i == 0) {
      acc = std::move(reduced);
      continue;
    }
    POPRT_ASSIGN_OR_RETURN(acc, combine<A>({&acc, &reduced}, keepOf({&acc, &reduced}, need), plan.sizes));
  }
  POPRT_ASSIGN_OR_RETURN(const Term<A> final_term, combine<A>({&acc}, plan.out_labels, plan.sizes));
  Tensor y(dtype, final_term.dims);
  auto dst = y.data<T>();
  for (size_t e = 0; e < dst.size(); ++e) {
    if constexpr (std::is_integral_v<T>)
      dst[e] = static_cast<T>(final_term.data[e]);
    else
      dst[e] = fromCompute<T>(static_cast<typename ComputeType<T>::type>(final_term.data[e]));
  }
  return y;
}

Expected<std::vector<Tensor>> evalEinsum(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  std::string eq;
  for (char c : node.attrString("equation", ""))
    if (c != ' ' && c != '\t' && c != '\n') eq += c;
  if (eq.empty()) return Error("attribute 'equation' is required");
  if (in.empty()) return Error("expects at least one input");
  for (size_t i = 0; i < in.size(); ++i) {
    POPRT_TRY(requireInput(in, i));
    if (in[i]->dtype() != in[0]->dtype()) return Error("input dtypes differ");
  }
  const DType dtype = in[0]->dtype();
  if (dtype == DType::Bool || dtype == DType::String || (!isInteger(dtype) && !isFloatingPoint(dtype)))
    return Error("dtype " + std::string(dtypeName(dtype)) + " is not supported");
  POPRT_ASSIGN_OR_RETURN(const EinsumPlan plan, planEinsum(eq, in));
  Expected<Tensor> result = Error("bool is not supported");
  POPRT_TRY(dispatchNumeric(dtype, [&](auto tag) -> void {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) result = contract<T>(plan, in, dtype);
  }));
  POPRT_ASSIGN_OR_RETURN(Tensor y, std::move(result));
  return single(std::move(y));
}

}  // namespace

void registerEinsumOps(std::vector<OpDef>& ops) {
  ops.push_back({"Einsum", Fp16Policy::AccumulateFp32, LoweringFamily::None, evalEinsum, {}, ""});
}

}  // namespace poprt::ops::misc
