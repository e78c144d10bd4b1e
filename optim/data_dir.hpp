// A sharded data directory (issue [13]): a data set kept as many CSV files,
// `DIR/train/*.csv[.gz]` and `DIR/test/*.csv[.gz]`, so that no process need
// hold all of it. One streaming pass (one file in memory at a time) gives
// the summary every process agrees on: the files and their example counts,
// the label values and the column statistics. A worker then loads only its
// own files, with the labels mapped and the columns scaled as they would be
// had the files been one.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "optim/dataset.hpp"

namespace troupe::optim {

/// One file of a data directory.
struct data_file {
  std::string path;         ///< DIR/train/NAME
  std::uint64_t bytes = 0;  ///< its size on disk
  std::size_t examples = 0; ///< its data lines
};

/// What every process of a job knows of a data directory.
struct data_dir_summary {
  std::string dir;
  std::string label_column;     ///< as given (empty: read_csv's rule)
  std::vector<data_file> train; ///< sorted by name
  std::vector<data_file> test;  ///< sorted by name
  std::size_t features = 0;
  /// The distinct labels of the training files, sorted, when every label of
  /// every file is an integer (class i is the i-th value); empty for
  /// regression data.
  std::vector<double> classes;
  /// Each feature's mean and standard deviation over all training files,
  /// as optim::standardize_features computes them over the files taken as
  /// one (the same two passes in double, file by file in name order).
  scaling columns;

  std::size_t train_examples() const noexcept;
  std::size_t test_examples() const noexcept;
};

/// Distinct label values a data directory may have, at most (a regression
/// target read as integers would otherwise make millions of classes).
inline constexpr std::size_t data_dir_max_classes = 65536;

/// Whether `path` is a data directory: a directory with a `train`
/// subdirectory.
bool is_data_dir(const std::string& path);

/// Reads every file of `dir` once (the training files twice: means, then
/// deviations), holding one at a time. Throws data_error naming the
/// directory or the file and the problem: no train/ or test/ files, a file
/// whose name does not end in .csv or .csv.gz, files whose columns differ
/// from the first training file's, labels of which some are integers and
/// some not, more than data_dir_max_classes classes, a test label absent
/// from the training files, and whatever read_csv refuses.
data_dir_summary summarize_data_dir(const std::string& dir,
                                    const std::string& label_column = "");

/// The training files of worker `w` of `workers`: those whose index i in
/// name order has i % workers == w (none if the files are fewer).
std::vector<std::size_t> worker_files(const data_dir_summary& s, std::size_t w,
                                      std::size_t workers);

/// Loads the training files `which` (indices into s.train) or, with
/// `test`, the test files, as one data set: labels mapped through
/// s.classes, targets kept for regression, and with `standardize` the
/// columns scaled by s.columns. Named "DIR/train" or "DIR/test". Throws
/// data_error as summarize_data_dir does if a file changed since (its
/// example count or columns).
dataset load_data_files(const data_dir_summary& s,
                        const std::vector<std::size_t>& which, bool test,
                        bool standardize);

/// load_data_files of every training file (or, with `test`, every test
/// file).
dataset load_all_files(const data_dir_summary& s, bool test, bool standardize);

/// Of the training files `which` taken in that order as one sequence of
/// examples, the examples [first, last) (`last` at most their count), as
/// load_data_files gives them; reads only the files that hold one of them,
/// one at a time. A lost worker's part, adopted, and the first examples
/// that calibrate a model's buffers come from here.
dataset load_data_range(const data_dir_summary& s,
                        const std::vector<std::size_t>& which,
                        std::size_t first, std::size_t last, bool standardize);

/// A fingerprint of the summary: every file's name, size and example
/// count, the label values and the column statistics, hashed. Processes
/// that read the same directory agree on it.
std::string data_dir_fingerprint(const data_dir_summary& s);

} // namespace troupe::optim
