#pragma once

#include <cstdint>
#include <string>

#include "optim/dataset.hpp"

namespace troupe::apps {

/// Names the data sources `--data` accepts, for help and error messages.
const char* data_source_help();

/// Whether `spec` names a CSV file: its name ends in .csv or .csv.gz (in
/// any case).
bool is_csv_spec(const std::string& spec);

/// Loads what `--data=spec` names: "fashion-mnist" (Debian's
/// dataset-fashion-mnist), a data directory of CSV files (optim/data_dir.hpp,
/// loaded whole), a directory of IDX files, a CSV file (its label
/// the column `label_column`, optim::read_csv's rule if empty), a libsvm
/// file, or "synthetic-logreg" (the last three with every tenth example
/// held out as the test set). Throws optim::data_error naming the file and
/// the problem, std::invalid_argument for a `label_column` with data that
/// is not CSV.
optim::train_test load_data(const std::string& spec, std::uint64_t seed,
                            const std::string& label_column = "");

/// Whether `spec` names tabular data: a CSV file or a data directory of
/// CSV files (a label column, columns standardized each on its own).
bool is_tabular(const std::string& spec);

/// The test set of load_data(spec, seed, label_column), without loading the
/// training set of a data directory (troupe eval).
optim::dataset load_test_data(const std::string& spec, std::uint64_t seed,
                              const std::string& label_column = "");

/// Standardizes `data` as --standardize does: each feature on its own for
/// CSV data (`spec`, is_csv_spec, or a data directory: tabular columns have
/// unrelated scales),
/// one mean and standard deviation over all features otherwise. Statistics
/// from the training set only; returns the map applied (a saved model
/// keeps it for troupe eval and troupe predict).
optim::scaling standardize_data(const std::string& spec,
                                optim::train_test& data);

} // namespace troupe::apps
