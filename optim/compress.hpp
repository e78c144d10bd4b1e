#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/range_table.hpp"

// Gradient compression with error feedback (algorithms.md §8, §9): AdaComp,
// top-k and 1-bit (sign) compressors, each owning the residual of what it
// did not send, and the packed byte format they travel in. No CAF.
//
// Packed format (little endian), one block per layer segment in order:
//   u8 codec, u32 segments; per segment: u32 length, then
//   adacomp: f32 scale, u32 count, count varint index deltas, sign bits
//   topk:    u32 count, count varint index deltas, count f32 values
//   onebit:  f32 positive mean, f32 negative mean, length sign bits
// Indices are relative to the segment; sign bits are packed 8 per byte.

namespace troupe::optim {

class state_writer;
class state_reader;

enum class codec : std::uint8_t { none = 0, adacomp = 1, topk = 2, onebit = 3 };

/// "none", "adacomp", "topk", "onebit".
const char* to_string(codec c) noexcept;

/// Parses a codec name; throws std::invalid_argument naming the choices.
codec parse_codec(const std::string& name);

/// Layer kinds with their own settings: convolutional and fully connected.
enum class layer_kind : std::uint8_t { fc = 0, conv = 1 };

/// "conv" for ranges of convolution layers ("conv2d1.weight"), else "fc".
layer_kind kind_of(const named_range& r) noexcept;

/// Compression settings, per layer kind where the paper's differ.
struct compress_options {
  codec method = codec::none;
  /// AdaComp's bin length L_T per kind.
  std::size_t bin_fc = 500;
  std::size_t bin_conv = 50;
  /// Top-k: the fraction of each layer's entries sent per kind.
  double density_fc = 0.01;
  double density_conv = 0.01;
};

/// Bytes before and after compression, per layer kind.
struct compress_stats {
  std::array<std::uint64_t, 2> dense_bytes{};  ///< 4 per coordinate
  std::array<std::uint64_t, 2> packed_bytes{}; ///< as encoded
  /// dense / packed (0 if nothing was packed).
  double ratio() const noexcept;
  double ratio(layer_kind k) const noexcept;
};

/// One contiguous segment of the compressed range with its kind.
struct segment_spec {
  std::size_t offset = 0; ///< relative to the compressed range
  std::size_t size = 0;
  layer_kind kind = layer_kind::fc;
};

/// The segments of [offset, offset + size) of a model laid out by `layers`
/// (the parts of the layers inside the range; gaps become fc segments).
std::vector<segment_spec> segments_of(const std::vector<named_range>& layers,
                                      std::size_t offset, std::size_t size);

/// A sender's compressor for one range: compress() adds the residual to the
/// input, encodes what it selects and keeps the rest as the new residual,
/// so that sent + new residual == input + old residual (decoded values, in
/// float arithmetic).
class compressor {
public:
  /// Throws std::invalid_argument for a bad setting (bin length 0, density
  /// outside (0, 1]) or segments that do not tile [0, n).
  compressor(compress_options opts, std::vector<segment_spec> segments);

  /// Encodes g (n values) plus the residual; updates the residual and the
  /// statistics. Non-finite input throws std::invalid_argument (nothing is
  /// changed).
  std::string compress(const float* g, std::size_t n);

  const std::vector<float>& residual() const noexcept {
    return residual_;
  }
  /// Forgets the residual (a caller that keeps its own error feedback,
  /// e.g. SGP's difference coding against the receiver's copy).
  void reset_residual() noexcept;
  double residual_norm() const noexcept;
  const compress_stats& stats() const noexcept {
    return stats_;
  }
  std::size_t size() const noexcept {
    return residual_.size();
  }

  /// Writes the residual and the statistics, with the options and segments,
  /// as tensors and metadata named `prefix` + field.
  void save(state_writer& w, const std::string& prefix) const;

  /// Reads what save() wrote; throws data_error naming the file and the
  /// tensor or metadata key if it is missing or does not fit this
  /// compressor (another codec, setting or segment layout). Nothing changes
  /// then.
  void load(const state_reader& r, const std::string& prefix);

private:
  compress_options opts_;
  std::vector<segment_spec> segments_;
  std::vector<float> residual_, work_, sent_;
  compress_stats stats_;
};

/// Decodes a packed block into n dense values (zeros where nothing was
/// sent). Throws std::invalid_argument naming the problem for a truncated,
/// oversized or inconsistent block, an index out of range or a non-finite
/// value.
void decompress(const std::string& packed, float* out, std::size_t n);

} // namespace troupe::optim
