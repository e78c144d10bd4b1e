// read_libsvm of optim/dataset.hpp.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/detail/gz_file.hpp"
#include "optim/quote.hpp"

namespace troupe::optim {

namespace {

struct entry {
  std::size_t row;
  std::size_t col; // 0-based
  float value;
};

std::string read_all(detail::gz_file& f) {
  std::string text;
  std::size_t got = 0;
  for (;;) {
    text.resize(std::max<std::size_t>(std::size_t{64} << 10, 2 * got));
    auto k = f.read(text.data() + got, text.size() - got);
    got += k;
    if (got < text.size())
      break;
  }
  text.resize(got);
  return text;
}

/// Parses the whole of `s` as a double; false on junk or an empty string.
bool parse_double(const char* s, double& out) {
  if (*s == '\0')
    return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s, &end);
  return *end == '\0' && errno != ERANGE;
}

/// Parses the whole of `s` as a decimal integer.
bool parse_integer(const char* s, long long& out) {
  if (*s == '\0')
    return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(s, &end, 10);
  return *end == '\0' && errno != ERANGE;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/// The 1-based index given twice among entries[first..], or 0. Indices in
/// ascending order (the usual layout) are checked without sorting.
std::size_t duplicate_column(const std::vector<entry>& entries,
                             std::size_t first) {
  bool ascending = true;
  for (auto i = first + 1; i < entries.size() && ascending; ++i)
    ascending = entries[i - 1].col < entries[i].col;
  if (ascending)
    return 0;
  std::vector<std::size_t> cols;
  cols.reserve(entries.size() - first);
  for (auto i = first; i < entries.size(); ++i)
    cols.push_back(entries[i].col);
  std::sort(cols.begin(), cols.end());
  auto at = std::adjacent_find(cols.begin(), cols.end());
  return at == cols.end() ? 0 : *at + 1;
}

} // namespace

dataset read_libsvm(const std::string& path, std::size_t dim) {
  detail::gz_file f{path};
  auto text = read_all(f);
  std::vector<double> raw_labels;
  std::vector<entry> entries;
  std::size_t max_index = 0, max_index_line = 0;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    auto eol = text.find('\n', pos);
    if (eol == std::string::npos)
      eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    auto hash = line.find('#');
    if (hash != std::string::npos)
      line.resize(hash);
    auto fail = [&](const std::string& what) {
      throw data_error(path + ":" + std::to_string(line_no) + ": " + what);
    };
    // Splits the line in place into NUL-terminated tokens.
    std::vector<char*> tokens;
    for (std::size_t i = 0; i < line.size();) {
      while (i < line.size() && is_space(line[i]))
        ++i;
      if (i == line.size())
        break;
      tokens.push_back(&line[i]);
      while (i < line.size() && !is_space(line[i]))
        ++i;
      if (i < line.size())
        line[i++] = '\0';
    }
    if (tokens.empty())
      continue; // blank or comment-only line
    double label = 0;
    if (!parse_double(tokens[0], label) || !std::isfinite(label))
      fail("non-numeric label " + quote(tokens[0]));
    // Labels become float targets (or classes): beyond float's range a
    // finite double would turn into an infinity.
    if (std::abs(label) > std::numeric_limits<float>::max())
      fail("label " + quote(tokens[0]) + " is beyond the float range");
    auto row = raw_labels.size();
    raw_labels.push_back(label);
    auto first_entry = entries.size();
    for (std::size_t t = 1; t < tokens.size(); ++t) {
      // The token quoted for an error (computed only then: a large file
      // has millions of tokens).
      std::string raw = tokens[t];
      auto tok = [&raw] { return quote(raw); };
      char* tp = tokens[t];
      char* colon = std::strchr(tp, ':');
      if (colon == nullptr)
        fail("bad token " + tok() + " (expected index:value)");
      *colon = '\0';
      long long index = 0;
      if (!parse_integer(tp, index))
        fail("bad token " + tok() + " (index is not an integer)");
      if (index <= 0)
        fail("bad token " + tok() + " (index " + std::to_string(index)
             + " is invalid: indices start at 1)");
      double value = 0;
      if (!parse_double(colon + 1, value))
        fail("non-numeric value in " + tok());
      if (!std::isfinite(value))
        fail("value in " + tok() + " is not finite");
      if (std::abs(value) > std::numeric_limits<float>::max())
        fail("value in " + tok() + " is beyond the float range");
      auto col = static_cast<std::size_t>(index);
      if (dim > 0 && col > dim)
        fail("index " + std::to_string(index) + " exceeds the dimension "
             + std::to_string(dim));
      if (col > max_index) {
        max_index = col;
        max_index_line = line_no;
      }
      entries.push_back({row, col - 1, static_cast<float>(value)});
    }
    if (auto dup = duplicate_column(entries, first_entry); dup > 0)
      fail("duplicate feature index " + std::to_string(dup)
           + " (each index may appear once per line)");
  }
  auto m = raw_labels.size();
  if (m == 0)
    throw data_error(
        path + ": no examples ("
        + (text.empty() ? "empty file" : "only comments and blank lines")
        + ")");
  auto d = dim > 0 ? dim : std::max<std::size_t>(max_index, 1);
  if (static_cast<std::uint64_t>(d) > libsvm_max_elements / m)
    throw data_error(path
                     + (dim > 0 ? std::string{}
                                : ":" + std::to_string(max_index_line)
                                      + ": index " + std::to_string(max_index))
                     + ": a dense " + std::to_string(d) + " x "
                     + std::to_string(m) + " feature matrix would exceed "
                     + std::to_string(libsvm_max_elements)
                     + " elements (1 GiB)");
  dataset result;
  result.name = path;
  result.sample_shape = shape{static_cast<int>(d), 1, 1};
  result.x.setZero(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(m));
  for (auto& e : entries)
    result.x(static_cast<Eigen::Index>(e.col), static_cast<Eigen::Index>(e.row))
        = e.value;
  assign_labels(result, raw_labels, false);
  return result;
}

} // namespace troupe::optim
