#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::optim {

/// What a named range of the flat parameter vector holds (`buffer`: a range
/// of a model's buffer vector, not of its parameters).
enum class range_kind { weight, bias, buffer };

/// Returns "weight", "bias" or "buffer".
const char* to_string(range_kind kind) noexcept;

/// One named, contiguous slice of the flat parameter vector.
struct named_range {
  std::string name;   ///< e.g. "fc1.weight"
  std::size_t offset; ///< first index in the flat vector
  std::size_t size;   ///< number of scalars
  range_kind kind;
};

/// Contiguous slice `[offset, offset + size)` of a flat vector (a shard).
struct slice {
  std::size_t offset = 0;
  std::size_t size = 0;
};

/// Splits `[0, total)` into `k` contiguous slices whose sizes differ by at
/// most one (the first `total % k` are the larger ones). Throws
/// std::invalid_argument unless `1 <= k <= total`.
std::vector<slice> balanced_split(std::size_t total, std::size_t k);

/// The layout of a model's flat parameter vector: layer name -> (offset,
/// size, kind). Ranges are appended back to back, so the table also defines
/// the total length. Later layers of the system shard and compress by range.
class range_table {
public:
  /// Appends a range of `size` scalars and returns its offset. Throws
  /// std::invalid_argument if `name` is already taken.
  std::size_t add(std::string name, std::size_t size, range_kind kind);

  /// Looks up a range by name (linear search; tables are short).
  std::optional<named_range> find(std::string_view name) const;

  /// All ranges in offset order.
  const std::vector<named_range>& ranges() const noexcept {
    return ranges_;
  }

  /// Total number of scalars.
  std::size_t total() const noexcept {
    return total_;
  }

  /// Splits `[0, total)` into `k` contiguous slices whose sizes differ by at
  /// most one (balanced by size; the first `total % k` slices are the larger
  /// ones). Throws std::invalid_argument unless `1 <= k <= total`.
  std::vector<slice> balanced_split(std::size_t k) const;

private:
  std::vector<named_range> ranges_;
  std::size_t total_ = 0;
};

} // namespace troupe::optim
