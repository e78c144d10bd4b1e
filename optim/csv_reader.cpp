// read_csv of optim/dataset.hpp: a header row of column names, one example
// per line, read one line at a time (at most csv_max_line_bytes of it).

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/detail/gz_file.hpp"
#include "optim/quote.hpp"

namespace troupe::optim {

namespace {

/// Yields the lines of a file without their end ("\n" or "\r\n"), refusing
/// one longer than csv_max_line_bytes before it is all in memory.
class line_reader {
public:
  explicit line_reader(detail::gz_file& f) : file_(f) {}

  /// The next line into `line`; false at the end of the file.
  bool next(std::string& line) {
    line.clear();
    for (;;) {
      if (pos_ == end_) {
        end_ = file_.read(buf_.data(), buf_.size());
        pos_ = 0;
        if (end_ == 0) {
          if (line.empty() && !partial_)
            return false;
          partial_ = false;
          ++number_;
          trim_cr(line);
          return true;
        }
      }
      const char* start = buf_.data() + pos_;
      auto* nl
          = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
      auto take
          = nl != nullptr ? static_cast<std::size_t>(nl - start) : end_ - pos_;
      if (line.size() + take > csv_max_line_bytes)
        throw data_error(file_.path() + ":" + std::to_string(number_ + 1)
                         + ": line longer than "
                         + std::to_string(csv_max_line_bytes) + " bytes");
      line.append(start, take);
      pos_ += take;
      partial_ = true;
      if (nl != nullptr) {
        ++pos_;
        partial_ = false;
        ++number_;
        trim_cr(line);
        return true;
      }
    }
  }

  /// The 1-based number of the line last returned.
  std::size_t number() const noexcept {
    return number_;
  }

private:
  static void trim_cr(std::string& line) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
  }

  detail::gz_file& file_;
  std::vector<char> buf_ = std::vector<char>(std::size_t{64} << 10);
  std::size_t pos_ = 0, end_ = 0, number_ = 0;
  bool partial_ = false; ///< bytes of a line without its '\n' read
};

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

/// Splits `line` at commas into `fields` (trimmed of spaces and tabs; a
/// field in double quotes may hold commas and "" for a quote). Returns ""
/// or what is wrong.
std::string split(const std::string& line, std::vector<std::string>& fields) {
  fields.clear();
  std::size_t i = 0, n = line.size();
  for (;;) {
    while (i < n && is_blank(line[i]))
      ++i;
    std::string field;
    if (i < n && line[i] == '"') {
      auto open = i++;
      for (;;) {
        if (i == n)
          return "quoted field at byte " + std::to_string(open + 1)
                 + " has no closing quote";
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      while (i < n && is_blank(line[i]))
        ++i;
      if (i < n && line[i] != ',')
        return "text after the closing quote at byte " + std::to_string(i + 1);
    } else {
      auto start = i;
      while (i < n && line[i] != ',')
        ++i;
      auto stop = i;
      while (stop > start && is_blank(line[stop - 1]))
        --stop;
      field.assign(line, start, stop - start);
    }
    if (fields.size() == csv_max_columns)
      return "more than " + std::to_string(csv_max_columns) + " fields";
    fields.push_back(std::move(field));
    if (i == n)
      return "";
    ++i; // the comma
  }
}

bool line_is_blank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), is_blank);
}

enum class number { ok, not_a_number, not_finite, beyond_float };

/// Parses the whole of `s` as a finite double that fits a float (an
/// underflow to a denormal or zero is fine).
number parse_number(const std::string& s, double& out) {
  if (s.empty())
    return number::not_a_number;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || end == s.c_str())
    return number::not_a_number;
  if (errno == ERANGE && std::isinf(out))
    return number::beyond_float; // beyond double's range too
  if (!std::isfinite(out))
    return number::not_finite; // "nan", "inf" as such
  if (std::abs(out) > std::numeric_limits<float>::max())
    return number::beyond_float;
  return number::ok;
}

/// The header's names quoted and listed ("'a', 'b'"), at most 20 of them.
std::string listed(const std::vector<std::string>& names) {
  std::string out;
  std::size_t shown = std::min<std::size_t>(names.size(), 20);
  for (std::size_t i = 0; i < shown; ++i)
    out += (i > 0 ? ", " : "") + quote(names[i]);
  if (names.size() > shown)
    out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

/// The index of the label's column in `names` by read_csv's rule.
std::size_t label_index(const std::vector<std::string>& names,
                        const std::string& wanted, const std::string& where) {
  auto find = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(names.begin(), names.end(), name)
                                    - names.begin());
  };
  if (!wanted.empty()) {
    auto at = find(wanted);
    if (at == names.size())
      throw data_error(where + ": no label column " + quote(wanted)
                       + " in the header (its columns: " + listed(names) + ")");
    return at;
  }
  for (const char* name : {"label", "target"})
    if (auto at = find(name); at < names.size())
      return at;
  return names.size() - 1;
}

/// The header's column names; throws data_error on an empty or duplicate
/// name, a header of numbers or of one column.
std::vector<std::string> header_names(const std::string& line,
                                      const std::string& where) {
  std::vector<std::string> names;
  if (auto why = split(line, names); !why.empty())
    throw data_error(where + ": header: " + why);
  double scratch = 0;
  if (std::all_of(names.begin(), names.end(), [&](const std::string& f) {
        return parse_number(f, scratch) != number::not_a_number;
      }))
    throw data_error(where
                     + ": no header: the first line holds numbers, "
                       "not column names (a CSV needs a header row)");
  if (names.size() < 2)
    throw data_error(where + ": the header names one column (" + listed(names)
                     + "): a CSV needs at least one feature and a label");
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty())
      throw data_error(where + ": column " + std::to_string(i + 1)
                       + " of the header has no name");
    auto [it, fresh] = seen.emplace(names[i], i);
    if (!fresh)
      throw data_error(where + ": duplicate column name " + quote(names[i])
                       + " (columns " + std::to_string(it->second + 1) + " and "
                       + std::to_string(i + 1) + ")");
  }
  return names;
}

/// Throws data_error for the field of column `name` (the label's if
/// `is_label`) that parse_number refused.
[[noreturn]] void refuse_field(const std::string& where, number why,
                               const std::string& name, bool is_label,
                               const std::string& field) {
  auto column = (is_label ? "label column " : "column ") + quote(name);
  switch (why) {
  case number::not_finite:
    throw data_error(where + ": " + column + " holds " + quote(field)
                     + ": values must be finite");
  case number::beyond_float:
    throw data_error(where + ": " + column + " holds " + quote(field)
                     + ", beyond the float range");
  default:
    throw data_error(where + ": " + column
                     + (field.empty()
                            ? std::string{" is empty"}
                            : " holds " + quote(field) + ", not a number"));
  }
}

} // namespace

dataset read_csv(const std::string& path, const std::string& label_column,
                 std::size_t expected_rows) {
  detail::gz_file f{path};
  line_reader lines{f};
  std::string line;
  auto at = [&] { return path + ":" + std::to_string(lines.number()); };
  bool any = false, header = false;
  while (!header && lines.next(line)) {
    // A byte order mark (as spreadsheets write UTF-8) before the header.
    if (!any && line.rfind("\xEF\xBB\xBF", 0) == 0)
      line.erase(0, 3);
    any = true;
    header = !line_is_blank(line);
  }
  if (!header)
    throw data_error(path + ": no header ("
                     + (any ? std::string{"only blank lines"} : "empty file")
                     + ")");
  auto names = header_names(line, at());
  auto label = label_index(names, label_column, at());
  auto columns = names.size();
  auto features = columns - 1;
  std::vector<float> values; // example after example: x's column-major order
  std::vector<double> raw_labels;
  std::vector<std::string> fields;
  if (expected_rows > 0) {
    auto rows = std::min<std::uint64_t>(expected_rows,
                                        libsvm_max_elements / columns + 1);
    values.reserve(static_cast<std::size_t>(rows) * features);
    raw_labels.reserve(static_cast<std::size_t>(rows));
  }
  while (lines.next(line)) {
    if (line_is_blank(line))
      continue;
    if (auto why = split(line, fields); !why.empty())
      throw data_error(at() + ": " + why);
    if (fields.size() != columns)
      throw data_error(at() + ": " + std::to_string(fields.size())
                       + " fields, the header has " + std::to_string(columns)
                       + " columns");
    // The features and labels read so far within the cap (as floats, 1
    // GiB), before they grow.
    auto rows = static_cast<std::uint64_t>(raw_labels.size()) + 1;
    if (rows * columns > libsvm_max_elements)
      throw data_error(at() + ": " + std::to_string(rows) + " examples of "
                       + std::to_string(columns) + " columns would exceed "
                       + std::to_string(libsvm_max_elements)
                       + " values (1 GiB as floats)");
    for (std::size_t c = 0; c < columns; ++c) {
      double v = 0;
      if (auto why = parse_number(fields[c], v); why != number::ok)
        refuse_field(at(), why, names[c], c == label, fields[c]);
      if (c == label)
        raw_labels.push_back(v);
      else
        values.push_back(static_cast<float>(v));
    }
  }
  auto m = raw_labels.size();
  if (m == 0)
    throw data_error(path + ": no examples (only a header)");
  dataset result;
  result.name = path;
  result.sample_shape = shape{static_cast<int>(features), 1, 1};
  result.x = const_matrix_map<float>(values.data(),
                                     static_cast<Eigen::Index>(features),
                                     static_cast<Eigen::Index>(m));
  // The raw labels serve a regression model; integers are classes too.
  assign_labels(result, raw_labels, true);
  return result;
}

} // namespace troupe::optim
