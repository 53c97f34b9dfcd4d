// String ops: StringNormalizer (10) and TfIdfVectorizer (9).
// Case changes cover ASCII, Latin-1, Latin Extended-A, basic Greek and Cyrillic in UTF-8 (the
// `locale` attribute is accepted and ignored); bytes that are not valid UTF-8 pass unchanged.
#include <map>
#include <set>

#include "lib/ops/misc_internal.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::misc {
namespace {

// ---------------------------------------------------------------------------------------------
// Case mapping of one code point.

uint32_t upperOf(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 0x20;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
  if (c == 0xFF) return 0x178;
  if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c % 2 == 1) ? c - 1 : c;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
  if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 0x20;
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}

uint32_t lowerOf(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 0x20;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
  if (c == 0x178) return 0xFF;
  if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c % 2 == 0) ? c + 1 : c;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  return c;
}

void appendUtf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Maps each UTF-8 code point through `f`; invalid sequences are copied byte by byte.
template <class F>
std::string mapCase(const std::string& s, F f) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    uint32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
    for (size_t k = 1; valid && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) valid = false;
      c = (c << 6) | (b & 0x3Fu);
    }
    // Overlong forms and out-of-range values are not valid either.
    if (valid && ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF))))
      valid = false;
    if (!valid) {
      out += s[i];
      ++i;
      continue;
    }
    appendUtf8(out, f(c));
    i += len;
  }
  return out;
}

std::string toLower(const std::string& s) { return mapCase(s, lowerOf); }
std::string toUpper(const std::string& s) { return mapCase(s, upperOf); }

// ---------------------------------------------------------------------------------------------
// StringNormalizer: X [C] or [1, C]; drops stopwords, then changes case. An empty result is a
// single empty string ([1] or [1, 1]).

Expected<std::vector<Tensor>> evalStringNormalizer(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  if (x.dtype() != DType::String) return Error("input must be a string tensor");
  const Shape& s = x.shape();
  if (!(s.size() == 1 || (s.size() == 2 && s[0] == 1)))
    return Error("input must have shape [C] or [1, C], got " + shapeToString(s));
  const std::string action = node.attrString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") return Error("unknown case_change_action '" + action + "'");
  const bool case_sensitive = node.attrInt("is_case_sensitive", 0) != 0;
  std::set<std::string> stop;
  for (const std::string& w : attrStrings(node, "stopwords")) stop.insert(case_sensitive ? w : toLower(w));
  std::vector<std::string> kept;
  for (const std::string& v : x.strings()) {
    if (stop.count(case_sensitive ? v : toLower(v))) continue;
    kept.push_back(action == "LOWER" ? toLower(v) : action == "UPPER" ? toUpper(v) : v);
  }
  if (kept.empty()) kept.emplace_back();
  const int64_t c = static_cast<int64_t>(kept.size());
  Tensor y(DType::String, s.size() == 1 ? Shape{c} : Shape{1, c});
  y.strings() = std::move(kept);
  return single(std::move(y));
}

// ---------------------------------------------------------------------------------------------
// TfIdfVectorizer: counts the pool's n-grams (n in [min_gram_length, max_gram_length], items
// up to max_skip_count apart) in each row of X ([C] or [N, C], ints or strings). Unigrams are
// counted once, not once per skip distance. Output [max(ngram_indexes) + 1] (or [N, ...]).

template <class K>
void countRow(const std::vector<K>& row, const std::vector<std::map<std::vector<K>, int64_t>>& pools, int64_t min_n,
              int64_t max_n, int64_t max_skip, std::vector<double>& counts) {
  const int64_t c = static_cast<int64_t>(row.size());
  std::vector<K> key;
  for (int64_t start = 0; start < c; ++start)
    for (int64_t dist = 1; dist <= max_skip + 1; ++dist)
      for (int64_t n = std::max<int64_t>(min_n, dist > 1 ? 2 : 1); n <= max_n; ++n) {
        if (start + (n - 1) * dist >= c) break;
        const auto& pool = pools[static_cast<size_t>(n - 1)];
        if (pool.empty()) continue;
        key.clear();
        for (int64_t k = 0; k < n; ++k) key.push_back(row[static_cast<size_t>(start + k * dist)]);
        if (auto it = pool.find(key); it != pool.end()) counts[static_cast<size_t>(it->second)] += 1;
      }
}

Expected<std::vector<Tensor>> evalTfIdf(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  const bool strings = x.dtype() == DType::String;
  if (!strings && x.dtype() != DType::Int32 && x.dtype() != DType::Int64) return Error("input must be int32, int64 or string");
  const Shape& s = x.shape();
  if (s.size() != 1 && s.size() != 2) return Error("input must have shape [C] or [N, C], got " + shapeToString(s));
  const int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.back();

  const std::string mode = node.attrString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return Error("unknown mode '" + mode + "'");
  const int64_t min_n = node.attrInt("min_gram_length", 0), max_n = node.attrInt("max_gram_length", 0);
  const int64_t max_skip = node.attrInt("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n) return Error("need 1 <= min_gram_length <= max_gram_length");
  if (max_skip < 0) return Error("max_skip_count must be non-negative");
  const std::vector<int64_t> ngram_counts = node.attrInts("ngram_counts");
  const std::vector<int64_t> ngram_indexes = node.attrInts("ngram_indexes");
  const std::vector<float> weights = node.attrFloats("weights");
  const std::vector<int64_t> pool_ints = node.attrInts("pool_int64s");
  const std::vector<std::string> pool_strs = attrStrings(node, "pool_strings");
  if (strings && !pool_ints.empty()) return Error("string input needs pool_strings");
  if (!strings && !pool_strs.empty()) return Error("integer input needs pool_int64s");
  const int64_t pool_size = static_cast<int64_t>(strings ? pool_strs.size() : pool_ints.size());

  int64_t out_size = 0;
  for (int64_t idx : ngram_indexes) {
    if (idx < 0 || idx >= kMaxElements) return Error("ngram index " + std::to_string(idx) + " is out of range");
    out_size = std::max(out_size, idx + 1);
  }
  if (!weights.empty() && weights.size() != ngram_indexes.size()) return Error("weights and ngram_indexes differ in length");
  Shape out_shape = s.size() == 2 ? Shape{rows, out_size} : Shape{out_size};
  POPRT_TRY(checkedElementCount(out_shape));

  // pools[n-1]: the n-grams of the pool -> their output index. ngram_counts[i] is where the
  // (i+1)-grams start in the pool.
  const int64_t levels = std::min<int64_t>(static_cast<int64_t>(ngram_counts.size()), max_n);
  std::vector<std::map<std::vector<int64_t>, int64_t>> int_pools(static_cast<size_t>(levels));
  std::vector<std::map<std::vector<std::string>, int64_t>> str_pools(static_cast<size_t>(levels));
  std::vector<double> weight_of(static_cast<size_t>(out_size), 1.0);
  int64_t gram = 0;  // ordinal of the n-gram in the pool (indexes ngram_indexes)
  for (size_t i = 0; i < ngram_counts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i) + 1;
    const int64_t begin = ngram_counts[i];
    const int64_t end = i + 1 < ngram_counts.size() ? ngram_counts[i + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size) return Error("ngram_counts do not fit the pool");
    if ((end - begin) % n != 0)
      return Error("the pool's " + std::to_string(n) + "-grams are not a multiple of " + std::to_string(n) + " items");
    for (int64_t at = begin; at < end; at += n, ++gram) {
      if (gram >= static_cast<int64_t>(ngram_indexes.size())) return Error("ngram_indexes is shorter than the pool");
      const int64_t idx = ngram_indexes[static_cast<size_t>(gram)];
      if (!weights.empty()) weight_of[static_cast<size_t>(idx)] = weights[static_cast<size_t>(gram)];
      if (n > levels) continue;
      if (strings)
        str_pools[static_cast<size_t>(n - 1)][std::vector<std::string>(pool_strs.begin() + at, pool_strs.begin() + at + n)] = idx;
      else
        int_pools[static_cast<size_t>(n - 1)][std::vector<int64_t>(pool_ints.begin() + at, pool_ints.begin() + at + n)] = idx;
    }
  }

  std::vector<double> ys(static_cast<size_t>(rows * out_size), 0.0);
  const int64_t skip = std::min(max_skip, cols);  // larger skips cannot fit in a row
  const int64_t top = std::min(max_n, levels);
  std::vector<int64_t> ints;
  if (!strings) { POPRT_ASSIGN_OR_RETURN(ints, toInt64s(x)); }
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> counts(static_cast<size_t>(out_size), 0.0);
    if (strings) {
      std::vector<std::string> row(x.strings().begin() + r * cols, x.strings().begin() + (r + 1) * cols);
      countRow(row, str_pools, min_n, top, skip, counts);
    } else {
      std::vector<int64_t> row(ints.begin() + r * cols, ints.begin() + (r + 1) * cols);
      countRow(row, int_pools, min_n, top, skip, counts);
    }
    for (int64_t j = 0; j < out_size; ++j) {
      const double cnt = counts[static_cast<size_t>(j)], w = weight_of[static_cast<size_t>(j)];
      ys[static_cast<size_t>(r * out_size + j)] = mode == "TF" ? cnt : mode == "IDF" ? (cnt > 0 ? w : 0.0) : cnt * w;
    }
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(DType::Float, out_shape, ys));
  return single(std::move(y));
}

}  // namespace

void registerStringOps(std::vector<OpDef>& ops) {
  ops.push_back({"StringNormalizer", Fp16Policy::TypeAgnostic, LoweringFamily::None, evalStringNormalizer, {}, ""});
  ops.push_back({"TfIdfVectorizer", Fp16Policy::KeepFp32, LoweringFamily::None, evalTfIdf, {}, ""});
}

}  // namespace poprt::ops::misc
