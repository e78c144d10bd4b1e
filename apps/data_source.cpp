#include "apps/data_source.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include "optim/data_dir.hpp"
#include "optim/synthetic.hpp"

namespace troupe::apps {

namespace {

/// Copies the examples `first, first + step, ...` (or all others) of `data`.
optim::dataset every_nth(const optim::dataset& data, std::size_t step,
                         bool take, const std::string& name) {
  std::vector<Eigen::Index> keep;
  for (std::size_t i = 0; i < data.size(); ++i)
    if ((i % step == step - 1) == take)
      keep.push_back(static_cast<Eigen::Index>(i));
  optim::dataset out;
  out.name = name;
  out.sample_shape = data.sample_shape;
  out.classes = data.classes;
  out.x.resize(data.x.rows(), static_cast<Eigen::Index>(keep.size()));
  for (std::size_t j = 0; j < keep.size(); ++j) {
    out.x.col(static_cast<Eigen::Index>(j)) = data.x.col(keep[j]);
    if (!data.labels.empty())
      out.labels.push_back(data.labels[static_cast<std::size_t>(keep[j])]);
    if (!data.targets.empty())
      out.targets.push_back(data.targets[static_cast<std::size_t>(keep[j])]);
  }
  return out;
}

} // namespace

const char* data_source_help() {
  return "fashion-mnist | DIR (IDX files) | FILE.csv[.gz] (CSV with a header "
         "row) | DIR with train/ and test/ of CSV files | FILE (libsvm) | "
         "synthetic-logreg";
}

bool is_csv_spec(const std::string& spec) {
  auto ends_with = [&](const std::string& tail) {
    return spec.size() > tail.size()
           && std::equal(
               tail.rbegin(), tail.rend(), spec.rbegin(), [](char a, char b) {
                 return a == std::tolower(static_cast<unsigned char>(b));
               });
  };
  return ends_with(".csv") || ends_with(".csv.gz");
}

optim::train_test load_data(const std::string& spec, std::uint64_t seed,
                            const std::string& label_column) {
  namespace fs = std::filesystem;
  if (is_csv_spec(spec)) {
    // As a libsvm file: every tenth example is held out.
    auto all = optim::read_csv(spec, label_column);
    return {every_nth(all, 10, false, spec + "/train"),
            every_nth(all, 10, true, spec + "/test")};
  }
  if (optim::is_data_dir(spec)) {
    // Loaded whole (a job whose workers read their own files: job_data.hpp).
    auto s = optim::summarize_data_dir(spec, label_column);
    return {optim::load_all_files(s, false, false),
            optim::load_all_files(s, true, false)};
  }
  if (!label_column.empty())
    throw std::invalid_argument("--label-column=" + label_column
                                + " names a column of CSV data (--data=FILE.csv"
                                  " or FILE.csv.gz), not of --data="
                                + spec);
  if (spec == "fashion-mnist") {
    auto result = optim::load_mnist_dir(optim::fashion_mnist_dir);
    result.train.name = "fashion-mnist/train";
    result.test.name = "fashion-mnist/test";
    return result;
  }
  if (spec == "synthetic-logreg") {
    // Algorithms.md's LOGREG problem (labels 0/1), seeded by --seed.
    optim::logreg_options opts;
    opts.seed = seed;
    auto all = optim::to_dataset(optim::make_logreg(opts));
    return {every_nth(all, 10, false, "synthetic-logreg/train"),
            every_nth(all, 10, true, "synthetic-logreg/test")};
  }
  if (spec == "synthetic-lsq")
    throw optim::data_error(
        "synthetic-lsq: a least-squares regression problem, but troupe train's "
        "models are softmax classifiers; use synthetic-logreg (the LSQ problem "
        "serves the algorithm tests through optim/synthetic.hpp)");
  std::error_code ec;
  if (fs::is_directory(spec, ec))
    return optim::load_mnist_dir(spec);
  if (fs::is_regular_file(spec, ec)) {
    // A libsvm file has no separate test set: every tenth example is held out.
    auto all = optim::read_libsvm(spec);
    return {every_nth(all, 10, false, spec + "/train"),
            every_nth(all, 10, true, spec + "/test")};
  }
  throw optim::data_error(spec + ": no such data set, directory or file ("
                          + std::string{data_source_help()} + ")");
}

optim::dataset load_test_data(const std::string& spec, std::uint64_t seed,
                              const std::string& label_column) {
  if (!optim::is_data_dir(spec))
    return std::move(load_data(spec, seed, label_column).test);
  // The training files are read (one at a time) for their label values only.
  return optim::load_all_files(optim::summarize_data_dir(spec, label_column),
                               true, false);
}

bool is_tabular(const std::string& spec) {
  return is_csv_spec(spec) || optim::is_data_dir(spec);
}

optim::scaling standardize_data(const std::string& spec,
                                optim::train_test& data) {
  return is_tabular(spec) ? optim::standardize_features(data)
                          : optim::standardize(data);
}

} // namespace troupe::apps
