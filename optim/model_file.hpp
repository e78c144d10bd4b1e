// A model saved as a safetensors file (optim/safetensors.hpp): one tensor
// per parameter range, named after the layer's index in the model and the
// range's kind ("0.weight", "0.bias", as PyTorch names an nn.Sequential's),
// in PyTorch's layout (a dense weight is [out, in], a convolution's
// [out, in, k, k], a bias [out]; a TorchScript module's tensors under their
// names in the module, "0.conv1.weight", in their shapes there); the
// architecture and the run's options in the header's metadata under
// "troupe.*".

#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/safetensors.hpp"
#include "optim/sequential.hpp"

namespace troupe::optim {

/// What a model file says about its model (the "troupe.*" metadata).
struct model_info {
  std::string model;   ///< make_model's name ("troupe.model")
  shape sample_shape;  ///< "troupe.sample_shape": [c, h, w]
  int classes = 0;     ///< "troupe.classes"
  std::string options; ///< "troupe.options": the run's options, JSON text
  std::string version; ///< "troupe.version"
  /// "troupe.input_scaling": {"mean", "stddev"}, numbers or (per feature)
  /// lists of sample_shape.size() numbers.
  scaling input_scaling;
  /// Every metadata entry, as read (or extra entries to write).
  std::map<std::string, std::string> metadata;
};

/// The tensors `m`'s parameters are saved as, in the order of the flat
/// parameter vector, values in the file's (PyTorch's) layout.
std::vector<tensor_data> model_tensors(const sequential<float>& m);

/// The bytes of a model file holding `m` and `info`.
std::string encode_model(const sequential<float>& m, const model_info& info);

/// Writes `m` to `path` (a temporary file renamed into place, so a reader
/// never sees half a model); throws std::runtime_error naming the file.
void save_model(const std::string& path, const sequential<float>& m,
                const model_info& info);

/// Reads a whole file; throws data_error naming it.
std::string read_model_file(const std::string& path);

/// The metadata of a model file's bytes (`file` names it in errors): checks
/// the header (parse_safetensors) and the "troupe.*" entries; throws
/// data_error naming the file and the entry.
model_info decode_model_info(std::string_view bytes, const std::string& file);

/// Copies a model file's tensors into `m`; throws data_error naming the file
/// and the tensor on a missing or extra tensor or a shape that differs from
/// `m`'s (`m` is left unchanged then).
void decode_params(std::string_view bytes, const std::string& file,
                   sequential<float>& m);

/// A model rebuilt from its file.
struct loaded_model {
  model_info info;
  sequential<float> model;
};

/// Rebuilds the model a file's metadata names (make_model) and loads its
/// parameters; throws data_error naming the file and the problem.
loaded_model decode_model(std::string_view bytes, const std::string& file);

/// decode_model of the file at `path`.
loaded_model load_model(const std::string& path);

} // namespace troupe::optim
