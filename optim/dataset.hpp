#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "optim/detail/index_lists.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

class state_writer;
class state_reader;

/// Thrown for unusable data files; the message names the file and the
/// problem (e.g. "train-images-idx3-ubyte.gz: wrong magic number 0x00000802,
/// expected 0x00000803 (idx3 ubyte images)").
class data_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// An in-memory data set: one column per example.
struct dataset {
  std::string name;                 ///< e.g. "fashion-mnist/train"
  matrix<float> x;                  ///< features x examples
  std::vector<std::int32_t> labels; ///< class labels (classification), or empty
  std::vector<float> targets;       ///< regression targets, or empty
  shape sample_shape;               ///< shape of one example
  int classes = 0;                  ///< number of classes (0: regression)

  /// Number of examples.
  std::size_t size() const noexcept {
    return static_cast<std::size_t>(x.cols());
  }
};

/// A train / test pair.
struct train_test {
  dataset train;
  dataset test;
};

/// Reads an IDX image file (magic 0x00000803: n x h x w unsigned bytes) and an
/// IDX label file (magic 0x00000801: n unsigned bytes), gzip-compressed or not
/// (detected by content). Pixels are scaled to [0, 1]; the sample shape is
/// {1, h, w}. With `classes` = 0 the number of classes is the largest label
/// plus one; with `classes` > 0 every label must be below it (the error
/// names the index of the first label that is not). Throws
/// data_error whose message starts with the offending file's path on a
/// missing file, wrong magic, truncated header or data (bytes expected and
/// found), trailing bytes, a zero dimension, more than 2^31 - 1 elements,
/// a label out of range or mismatched image and label counts.
dataset read_idx(const std::string& images_path, const std::string& labels_path,
                 int classes = 0);

/// Loads Fashion-MNIST (or MNIST) from a directory holding
/// {train,t10k}-{images-idx3,labels-idx1}-ubyte, each with or without a .gz
/// suffix. Both sets have `classes` classes; with 0 (the default) the count
/// is inferred from the training labels, each of which must then occur: a
/// label above a class that has no training example is refused as out of
/// range (one corrupt byte of 255 would otherwise make 256 classes). The
/// test labels must lie below the count. Throws data_error naming the
/// missing directory or file, or the problem of a file as read_idx does (a
/// label out of range with the file and the index of the first such label).
train_test load_mnist_dir(const std::string& dir, int classes = 0);

/// Default location of Debian's dataset-fashion-mnist package.
inline constexpr const char* fashion_mnist_dir
    = "/usr/share/datasets/fashion-mnist";

/// The largest dense feature matrix read_libsvm builds: 2^28 floats, 1 GiB.
inline constexpr std::uint64_t libsvm_max_elements = std::uint64_t{1} << 28;

/// Gives `data` the labels a text file's rows carry: if every one is an
/// integer they become classes, mapped to 0..C-1 in sorted order; the raw
/// values become `targets` if they are not all integers, and always with
/// `keep_targets`.
void assign_labels(dataset& data, const std::vector<double>& raw,
                   bool keep_targets);

/// Reads a libsvm / svmlight text file ("label idx:val idx:val ...", 1-based
/// indices). `dim` = 0 infers the dimension from the largest index. Labels
/// that are all integers become classes (mapped to 0..C-1 in sorted order;
/// -1/+1 become 0/1); otherwise they become regression targets. Throws
/// data_error naming the file and line on malformed input, and on a dense
/// feature matrix (dimension x examples) over libsvm_max_elements: troupe
/// stores features densely, and a 16-byte file naming index 2^31 - 1 would
/// otherwise ask for 8 GiB.
dataset read_libsvm(const std::string& path, std::size_t dim = 0);

/// The longest line read_csv accepts: 16 MiB (it holds one line at a time).
inline constexpr std::size_t csv_max_line_bytes = std::size_t{1} << 24;

/// The most columns read_csv accepts, the label's included: 2^16 (a saved
/// model's sample shape has at most 65536 features).
inline constexpr std::size_t csv_max_columns = std::size_t{1} << 16;

/// Reads a CSV file (gzip-compressed or not, detected by content): a header
/// row of column names, then one example per line, comma-separated (fields
/// may be quoted with '"'; spaces around a field, CRLF line ends, blank
/// lines and a missing final newline are fine). The label is the column
/// named `label_column`; without one, the column named "label", else the
/// one named "target", else the last column. Every other column is a
/// feature and must hold a finite number on every line; the sample shape
/// is {features, 1, 1} and the name the path. Labels that are all integers
/// become classes (mapped to 0..C-1 in sorted order, as read_libsvm does)
/// and also, as read, `targets`; other labels become `targets` only
/// (classes 0). Throws data_error naming the file (and line, as
/// "path:line: ") on an empty file, a first line of numbers (no header), an
/// empty or duplicate column name, a label column not in the header (the
/// columns listed), a line with another number of fields than the header,
/// a value that is not a number or not finite (naming its column), a line
/// over csv_max_line_bytes, a header over csv_max_columns, and a feature
/// matrix over libsvm_max_elements. `expected_rows`, when known (a data
/// directory's summary), sizes the buffers once: the file then takes about
/// twice its floats while read, not three or four times.
dataset read_csv(const std::string& path, const std::string& label_column = "",
                 std::size_t expected_rows = 0);

/// The affine map a standardization applied: x' = (x - mean) / stddev, with
/// one mean and standard deviation for all features or, when `means` is not
/// empty, one per feature (`means[i]`, `stddevs[i]` for row i).
struct scaling {
  float mean = 0;
  float stddev = 1;
  std::vector<float> means{};   ///< per feature (empty: the scalar map)
  std::vector<float> stddevs{}; ///< per feature, all above 0

  /// Whether it holds one map per feature.
  bool per_feature() const noexcept {
    return !means.empty();
  }
};

/// Standardizes the features of `data.train` and `data.test` with one mean
/// and standard deviation over all training features (statistics from the
/// training set only; scalar, so pixels that never vary keep a finite
/// value). Returns the map applied. A constant training set is only
/// centred.
scaling standardize(train_test& data);

/// Standardizes each feature (row) of `data.train` and `data.test` with its
/// own mean and standard deviation over the training set, for tabular data
/// whose columns have unrelated scales. A feature constant over the
/// training set is only centred (stddev 1). Returns the map applied.
scaling standardize_features(train_test& data);

/// Applies `s` to `x` (features x examples) with the float expression the
/// standardizations use, so a saved model's inputs are scaled bit for bit
/// as in its run. Throws std::invalid_argument if `s` is per feature for
/// another number of features than x's rows.
void apply_scaling(const scaling& s, matrix<float>& x);

/// How examples are spread over workers.
enum class shard_mode {
  iid,             ///< shuffled (seeded), then cut into equal parts
  sorted_by_label, ///< sorted by label (non-iid), then cut into equal parts
};

/// Splits example indices 0..size-1 into `n` shards whose sizes differ by at
/// most one (the first size % n shards hold one more); every index appears
/// exactly once. `iid` shuffles with optim::rng seeded by `seed`;
/// `sorted_by_label` stable-sorts by label (by target for regression data,
/// by the first feature if there are neither), so shard i holds the i-th
/// slice of that order. Only the first `examples` examples take part (0:
/// all). Throws std::invalid_argument unless 1 <= n <= that many.
std::vector<std::vector<std::size_t>>
shard_indices(const dataset& data, std::size_t n, shard_mode mode,
              std::uint64_t seed, std::size_t examples = 0);

/// One worker's part of a shared stream of global batches (synchronous data
/// parallelism): every part iterates the same seeded permutation in global
/// batches of `world` x batch_size examples, and part `rank` takes the
/// rank-th of `world` near-equal contiguous pieces of each. The union of the
/// parts' batches at every step is then the batch a single iterator with
/// batch size `world` x batch_size would draw.
struct batch_part {
  std::size_t rank = 0;  ///< this part, in [0, world)
  std::size_t world = 1; ///< number of parts
};

/// Yields minibatches over a fixed list of example indices, reshuffled with a
/// seeded generator at the start of every epoch. The last batch of an epoch
/// may be smaller (like PyTorch's drop_last=False). Same seed, same batches:
/// the order of epoch e is a function of (indices, seed, e) alone. With a
/// batch_part of world > 1, a last global batch of fewer than `world`
/// examples is skipped, so every part has at least one example per step.
/// The indices and each epoch's order are held once per process however
/// many iterators hold the same (optim/detail/index_lists.hpp).
class batch_iterator {
public:
  /// Throws std::invalid_argument if `indices` has fewer than part.world
  /// entries, `batch_size` is 0 or part.rank >= part.world.
  batch_iterator(std::vector<std::size_t> indices, std::size_t batch_size,
                 std::uint64_t seed, batch_part part = {});

  /// Advances to the next batch and returns its example indices (valid until
  /// the next call).
  const std::vector<std::size_t>& next_indices();

  /// Gathers the next batch into `x` (features x b) and `labels` (b
  /// entries; left empty for regression data, whose targets go to
  /// `targets` if not null). Returns the batch size b. Throws
  /// std::out_of_range if an index is not an example of `data`.
  std::size_t next(const dataset& data, matrix<float>& x,
                   std::vector<std::int32_t>& labels,
                   std::vector<float>* targets = nullptr);

  /// Number of completed passes over the indices.
  std::size_t epoch() const noexcept {
    return epoch_;
  }

  /// Number of examples in one epoch.
  std::size_t size() const noexcept {
    return indices_->size();
  }

  /// Batches per epoch.
  std::size_t batches_per_epoch() const noexcept;

  /// Adds examples (a lost worker's share, say): they join the rest of this
  /// epoch, shuffled among the examples not drawn yet, and every later epoch.
  void add_indices(const std::vector<std::size_t>& extra);

  /// Gives up `count` of the examples not drawn yet this epoch (a joining
  /// worker's share): they leave this epoch and every later one. At most
  /// all but part.world of them go, so the epoch goes on; returns those
  /// given up.
  std::vector<std::size_t> cede(std::size_t count);

  /// Examples not drawn yet this epoch.
  std::size_t undrawn() const noexcept {
    return order_->size() - pos_;
  }

  /// Writes the examples (added ones included), this epoch's order, the
  /// position in it and the epoch, and the seed, part and batch size, as
  /// tensors named `prefix` + field.
  void save(state_writer& w, const std::string& prefix) const;

  /// Reads what save() wrote; throws data_error naming the file and the
  /// tensor if it is missing, its seed, part or batch size differ from this
  /// iterator's, or the order is not a permutation of the examples with the
  /// position inside it. Nothing changes then.
  void load(const state_reader& r, const std::string& prefix);

private:
  detail::index_list indices_;     ///< as given (shared, immutable)
  detail::index_list order_;       ///< this epoch's permutation of indices_
  std::vector<std::size_t> batch_; ///< the current batch
  std::size_t batch_size_;
  std::uint64_t seed_;
  batch_part part_;
  std::size_t pos_ = 0;
  std::size_t epoch_ = 0;
  void shuffle();
};

} // namespace troupe::optim
