// The sharded data directory of optim/data_dir.hpp.

#include "optim/data_dir.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

#include "optim/detail/gz_file.hpp"
#include "optim/param_hash.hpp"

namespace troupe::optim {

namespace fs = std::filesystem;

namespace {

bool csv_name(const std::string& name) {
  auto ends = [&](const std::string& tail) {
    if (name.size() <= tail.size())
      return false;
    auto a = name.substr(name.size() - tail.size());
    std::transform(a.begin(), a.end(), a.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return a == tail;
  };
  return ends(".csv") || ends(".csv.gz");
}

/// The files of DIR/`part`, sorted by name; refuses an empty folder and a
/// file that is not CSV.
std::vector<data_file> list(const std::string& dir, const std::string& part) {
  auto folder = fs::path{dir} / part;
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw data_error(dir + ": no " + part
                     + "/ folder (a data directory holds train/ and test/, "
                       "each with CSV files)");
  std::vector<data_file> out;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    auto name = e.path().filename().string();
    if (name.empty() || name[0] == '.')
      continue; // hidden files, editors' backups
    if (!e.is_regular_file(ec))
      throw data_error(e.path().string() + ": not a regular file");
    if (!csv_name(name))
      throw data_error(e.path().string()
                       + ": not a CSV file (a data directory's files end in "
                         ".csv or .csv.gz)");
    out.push_back({e.path().string(), e.file_size(ec), 0});
  }
  if (ec)
    throw data_error(folder.string() + ": " + ec.message());
  if (out.empty())
    throw data_error(folder.string() + ": no CSV files");
  std::sort(out.begin(), out.end(),
            [](auto& a, auto& b) { return a.path < b.path; });
  return out;
}

/// The first line of a file (its header), without its end.
std::string header_of(const std::string& path) {
  detail::gz_file f{path};
  std::string line;
  char c = 0;
  while (f.read(&c, 1) == 1 && c != '\n') {
    line.push_back(c);
    if (line.size() > csv_max_line_bytes)
      throw data_error(path + ":1: line longer than "
                       + std::to_string(csv_max_line_bytes) + " bytes");
  }
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  return line;
}

/// One file read, its header checked against the first training file's.
dataset read_one(const data_file& f, const std::string& label_column,
                 const std::string& header, const std::string& first) {
  if (header_of(f.path) != header)
    throw data_error(f.path + ":1: its header differs from " + first
                     + "'s (the files of a data directory have the same "
                       "columns in the same order)");
  return read_csv(f.path, label_column, f.examples);
}

/// Whether a file's labels were all integers (read_csv then maps them).
bool integral(const dataset& d) {
  return !d.labels.empty() || d.size() == 0;
}

/// The class of label `t` of file `path`: its index in s.classes.
std::int32_t class_of(const data_dir_summary& s, float t,
                      const std::string& path) {
  auto v = static_cast<double>(t);
  auto it = std::lower_bound(s.classes.begin(), s.classes.end(), v);
  if (it == s.classes.end() || *it != v)
    throw data_error(path + ": label " + std::to_string(t)
                     + " occurs in no training file");
  return static_cast<std::int32_t>(it - s.classes.begin());
}

} // namespace

std::size_t data_dir_summary::train_examples() const noexcept {
  std::size_t n = 0;
  for (const auto& f : train)
    n += f.examples;
  return n;
}

std::size_t data_dir_summary::test_examples() const noexcept {
  std::size_t n = 0;
  for (const auto& f : test)
    n += f.examples;
  return n;
}

bool is_data_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec)
         && fs::is_directory(fs::path{path} / "train", ec);
}

data_dir_summary summarize_data_dir(const std::string& dir,
                                    const std::string& label_column) {
  data_dir_summary s;
  s.dir = dir;
  s.label_column = label_column;
  s.train = list(dir, "train");
  s.test = list(dir, "test");
  const auto& first = s.train.front().path;
  auto header = header_of(first);
  std::set<double> labels;
  bool any_integral = false, any_other = false;
  std::vector<double> mean;
  double n = 0;
  // Pass 1: counts, labels, sums.
  for (auto& f : s.train) {
    auto d = read_one(f, label_column, header, first);
    f.examples = d.size();
    if (mean.empty()) {
      s.features = static_cast<std::size_t>(d.x.rows());
      mean.assign(s.features, 0.0);
    }
    (integral(d) ? any_integral : any_other) = true;
    if (integral(d))
      for (auto t : d.targets) {
        labels.insert(t);
        if (labels.size() > data_dir_max_classes)
          throw data_error(f.path + ": more than "
                           + std::to_string(data_dir_max_classes)
                           + " distinct labels in " + dir
                           + "/train (regression targets? give them a "
                             "fractional part)");
      }
    for (Eigen::Index j = 0; j < d.x.cols(); ++j)
      for (std::size_t i = 0; i < s.features; ++i)
        mean[i] += d.x(static_cast<Eigen::Index>(i), j);
    n += static_cast<double>(d.size());
  }
  if (any_integral && any_other)
    throw data_error(dir
                     + "/train: some files have integer labels (classes) "
                       "and some not (targets); the files of a data "
                       "directory hold one kind");
  if (n == 0)
    throw data_error(dir + "/train: no examples");
  if (!any_other)
    s.classes.assign(labels.begin(), labels.end());
  for (auto& m : mean)
    m /= n;
  // Pass 2: deviations, as standardize_features takes them.
  std::vector<double> var(s.features, 0.0);
  for (const auto& f : s.train) {
    auto d = read_one(f, label_column, header, first);
    for (Eigen::Index j = 0; j < d.x.cols(); ++j)
      for (std::size_t i = 0; i < s.features; ++i) {
        double dev = d.x(static_cast<Eigen::Index>(i), j) - mean[i];
        var[i] += dev * dev;
      }
  }
  s.columns.means.assign(s.features, 0.0f);
  s.columns.stddevs.assign(s.features, 1.0f);
  for (std::size_t i = 0; i < s.features; ++i) {
    s.columns.means[i] = static_cast<float>(mean[i]);
    auto sd = static_cast<float>(std::sqrt(var[i] / n));
    s.columns.stddevs[i] = sd > 0 && std::isfinite(sd) ? sd : 1.0f;
  }
  // The test files: counts, and labels the training files know.
  for (auto& f : s.test) {
    auto d = read_one(f, label_column, header, first);
    f.examples = d.size();
    if (!s.classes.empty() && !integral(d))
      throw data_error(f.path
                       + ": labels that are not integers, but the "
                         "training files' are classes");
    if (!s.classes.empty())
      for (auto t : d.targets)
        class_of(s, t, f.path);
  }
  return s;
}

std::vector<std::size_t> worker_files(const data_dir_summary& s, std::size_t w,
                                      std::size_t workers) {
  std::vector<std::size_t> out;
  for (std::size_t i = w; workers > 0 && i < s.train.size(); i += workers)
    out.push_back(i);
  return out;
}

namespace {

/// Examples [from, from + count) of file `file`.
struct file_slice {
  std::size_t file = 0, from = 0, count = 0;
};

/// The slices as one data set, each file read once (one at a time) and the
/// first training file's header read once.
dataset load_slices(const data_dir_summary& s,
                    const std::vector<file_slice>& parts, bool test,
                    bool standardize) {
  const auto& files = test ? s.test : s.train;
  const auto& first = s.train.front().path;
  auto header = parts.empty() ? std::string{} : header_of(first);
  dataset out;
  out.name = s.dir + (test ? "/test" : "/train");
  out.sample_shape = shape{static_cast<int>(s.features), 1, 1};
  out.classes = static_cast<int>(s.classes.size());
  std::size_t total = 0;
  for (const auto& p : parts)
    total += p.count;
  out.x.resize(static_cast<Eigen::Index>(s.features),
               static_cast<Eigen::Index>(total));
  Eigen::Index col = 0;
  for (const auto& p : parts) {
    const auto& f = files.at(p.file);
    auto d = read_one(f, s.label_column, header, first);
    if (d.size() != f.examples
        || static_cast<std::size_t>(d.x.rows()) != s.features)
      throw data_error(f.path + ": changed since the data directory was read ("
                       + std::to_string(d.size()) + " examples, "
                       + std::to_string(f.examples) + " before)");
    auto from = static_cast<Eigen::Index>(p.from);
    auto count = static_cast<Eigen::Index>(p.count);
    out.x.middleCols(col, count) = d.x.middleCols(from, count);
    col += count;
    auto t0 = d.targets.begin() + from;
    out.targets.insert(out.targets.end(), t0, t0 + count);
    if (!s.classes.empty())
      for (auto t = t0; t != t0 + count; ++t)
        out.labels.push_back(class_of(s, *t, f.path));
  }
  if (standardize)
    apply_scaling(s.columns, out.x);
  return out;
}

} // namespace

dataset load_data_files(const data_dir_summary& s,
                        const std::vector<std::size_t>& which, bool test,
                        bool standardize) {
  const auto& files = test ? s.test : s.train;
  std::vector<file_slice> parts;
  for (auto i : which)
    parts.push_back({i, 0, files.at(i).examples});
  return load_slices(s, parts, test, standardize);
}

dataset load_all_files(const data_dir_summary& s, bool test, bool standardize) {
  std::vector<std::size_t> all((test ? s.test : s.train).size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  return load_data_files(s, all, test, standardize);
}

dataset load_data_range(const data_dir_summary& s,
                        const std::vector<std::size_t>& which,
                        std::size_t first, std::size_t last, bool standardize) {
  std::vector<file_slice> parts;
  std::size_t at = 0; // the position of file i's first example
  for (auto i : which) {
    auto n = s.train.at(i).examples;
    auto lo = std::max(first, at), hi = std::min(last, at + n);
    if (lo < hi)
      parts.push_back({i, lo - at, hi - lo});
    at += n;
  }
  return load_slices(s, parts, false, standardize);
}

std::string data_dir_fingerprint(const data_dir_summary& s) {
  std::string text;
  for (const auto* files : {&s.train, &s.test})
    for (const auto& f : *files)
      text += fs::path{f.path}.filename().string() + " "
              + std::to_string(f.bytes) + " " + std::to_string(f.examples)
              + "\n";
  std::vector<double> values = s.classes;
  values.insert(values.end(), s.columns.means.begin(), s.columns.means.end());
  values.insert(values.end(), s.columns.stddevs.begin(),
                s.columns.stddevs.end());
  text.append(reinterpret_cast<const char*>(values.data()),
              values.size() * sizeof(double));
  return s.dir + ": " + std::to_string(s.train.size()) + "+"
         + std::to_string(s.test.size()) + " files, "
         + std::to_string(s.train_examples()) + " examples, "
         + hash_bytes(text.data(), text.size());
}

} // namespace troupe::optim
