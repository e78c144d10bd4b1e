// One role's state as a safetensors file (optim/safetensors.hpp): every
// buffer, counter and table a stateful object keeps between steps, as flat
// tensors named "<prefix><field>" (F32, F64 or U64, shape [n]; a scalar is a
// [1] tensor), plus strings in the header's metadata. Checkpoints, saved
// models and state handed to a replacement role share this one format; each
// object's save(state_writer&, prefix) and load(const state_reader&, prefix)
// write and read its part.

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/safetensors.hpp"

namespace troupe::optim {

/// Collects named tensors and metadata and encodes them as one file.
class state_writer {
public:
  /// Adds n values as a tensor of shape [n] (F32, F64 or U64). Throws
  /// std::invalid_argument if `name` is taken.
  void put(const std::string& name, const float* v, std::size_t n);
  void put(const std::string& name, const double* v, std::size_t n);
  void put(const std::string& name, const std::uint64_t* v, std::size_t n);

  /// put() of a whole vector.
  template <class T, class A>
  void put(const std::string& name, const std::vector<T, A>& v) {
    put(name, v.data(), v.size());
  }

  /// Adds a [1] U64 tensor.
  void put_u64(const std::string& name, std::uint64_t v);

  /// Adds a [1] F64 tensor.
  void put_f64(const std::string& name, double v);

  /// Adds a metadata string; throws std::invalid_argument if `key` is taken.
  void meta(const std::string& key, std::string value);

  /// The file's bytes.
  std::string encode() const;

private:
  std::vector<raw_tensor> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
  std::map<std::string, std::string> meta_;
};

/// Reads the tensors of a state file. Every failure is a data_error naming
/// the file and, for a tensor's problem, the tensor.
class state_reader {
public:
  /// Parses `bytes` (F32, F64, U64 and I64 tensors); `file` names it in
  /// errors.
  state_reader(std::string bytes, std::string file);

  /// Whether the file holds a tensor `name`.
  bool has(const std::string& name) const;

  /// The values of an F32 tensor.
  std::vector<float> f32(const std::string& name) const;

  /// Copies an F32 tensor of exactly n values into `out`.
  void f32(const std::string& name, float* out, std::size_t n) const;

  /// The values of an F64 tensor.
  std::vector<double> f64(const std::string& name) const;

  /// Copies an F64 tensor of exactly n values into `out`.
  void f64(const std::string& name, double* out, std::size_t n) const;

  /// The values of a U64 tensor.
  std::vector<std::uint64_t> u64(const std::string& name) const;

  /// The values of a U64 tensor of exactly n values; throws data_error
  /// naming the tensor and both counts otherwise.
  std::vector<std::uint64_t> u64(const std::string& name, std::size_t n) const;

  /// The value of a U64 tensor of one value.
  std::uint64_t u64_scalar(const std::string& name) const;

  /// The value of an F64 tensor of one value.
  double f64_scalar(const std::string& name) const;

  /// A metadata string; throws data_error if it is missing.
  std::string meta(const std::string& key) const;

  /// Throws data_error unless metadata `key` is `expected` ("file: 'opt.name'
  /// is 'adam' in the file, 'sgd' here").
  void expect_meta(const std::string& key, const std::string& expected) const;

  /// Throws data_error unless the U64 scalar `name` is `expected`.
  void expect_u64(const std::string& name, std::uint64_t expected) const;

  /// The file's name, as given.
  const std::string& file() const noexcept {
    return file_;
  }

  /// A data_error "<file>: tensor '<name>': <what>".
  data_error error(const std::string& name, const std::string& what) const;

private:
  const tensor_entry& entry(const std::string& name, const char* dtype) const;
  std::string bytes_;
  std::string file_;
  safetensors_header header_;
  std::unordered_map<std::string, std::size_t> index_;
};

/// `x` as text that reads back to the same double ("%.17g").
std::string exact_text(double x);

} // namespace troupe::optim
