// The safetensors container (huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON naming every tensor with its
// dtype, shape and byte range (plus an optional "__metadata__" object of
// strings), padded with spaces to a multiple of 8, then the raw
// little-endian data, the tensors back to back. Model files hold F32 only
// (optim/model_file.hpp maps a model's layers onto it); the state files of
// optim/state_file.hpp also hold F64, U64 and I64.

#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::optim {

/// The largest header accepted (the reference implementation's cap).
inline constexpr std::uint64_t max_safetensors_header = std::uint64_t{100}
                                                        << 20;

/// One tensor of a header: its byte range is relative to the data start.
struct tensor_entry {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0; ///< first byte
  std::uint64_t end = 0;   ///< one past the last byte
};

/// A checked header: the tensors in the order of their data, every byte of
/// the data region covered once.
struct safetensors_header {
  std::vector<tensor_entry> tensors;
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0; ///< 8 + N
};

/// Bytes per element of the dtypes troupe knows: F32 4, F64 8, U64 8, I64 8;
/// 0 for any other name.
std::size_t dtype_size(std::string_view dtype) noexcept;

/// The dtypes a model file may hold.
inline const std::vector<std::string> model_dtypes{"F32"};

/// A tensor to write: name, shape and its values in row-major order.
struct tensor_data {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::vector<float> values;
};

/// The number of elements of `shape`; throws std::overflow_error past
/// 2^64.
std::uint64_t element_count(const std::vector<std::uint64_t>& shape);

/// A tensor to write as raw bytes: name, dtype (one dtype_size knows), shape
/// and its elements in row-major order, each little-endian.
struct raw_tensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::string bytes;
};

/// Checks the header of a whole file's bytes; throws data_error naming
/// `file` (and the tensor, for a tensor's problem) on a truncated file, a
/// header length over max_safetensors_header or past the end, invalid
/// JSON, a malformed entry, non-string metadata, a dtype not in `dtypes`
/// (each one dtype_size knows), a byte range that does not match its shape,
/// and ranges that overlap, leave gaps or do not end at the end of the file.
safetensors_header
parse_safetensors(std::string_view bytes, const std::string& file,
                  const std::vector<std::string>& dtypes = model_dtypes);

/// Copies tensor `t` of a checked header (F32, little-endian) into `out`
/// (element_count(t.shape) floats).
void read_f32(std::string_view bytes, const safetensors_header& h,
              const tensor_entry& t, float* out);

/// Encodes `tensors` (their data back to back, in this order) and `metadata`
/// as a safetensors file; throws std::invalid_argument if a tensor's values
/// do not match its shape or two share a name.
std::string
encode_safetensors(const std::vector<tensor_data>& tensors,
                   const std::map<std::string, std::string>& metadata);

/// encode_safetensors of tensors given as raw bytes; throws
/// std::invalid_argument also for a dtype dtype_size does not know.
std::string
encode_safetensors(const std::vector<raw_tensor>& tensors,
                   const std::map<std::string, std::string>& metadata);

} // namespace troupe::optim
