// A model described as data: a JSON object naming its layers in order, with
// their options. The built-in models are such descriptions (models/*.json,
// compiled into the library), and `--model=FILE.json` trains one of the
// user's. The description travels as text: in the job spec to the nodes, in
// checkpoints and in a saved model's "troupe.model" entry.
//
//   {"name": "mlp",
//    "layers": [{"type": "dense", "units": 256}, {"type": "relu"},
//               {"type": "dense", "units": 128}, {"type": "relu"},
//               {"type": "dense", "units": "classes"}]}
//
// Layer types and their options (docs/models.md):
//   dense       units: 1..1048576 or "classes" (the data's class count)
//   conv2d      out_channels: 1..4096, kernel: 1..64, stride: 1..64 (1),
//               padding: 0..64 (0)
//   max_pool2d, avg_pool2d   kernel: 1..64
//   relu, tanh, sigmoid, gelu, flatten   (no options)
//   dropout     p: [0, 1)
//   batch_norm  eps: (0, 1] (1e-5), momentum: (0, 1] (0.1)
//   embedding   vocabulary: 1..2^24, dim: 1..4096
//   residual    layers: a list of layers (in + f(in)), nested at most 8 deep
//   torchscript file: a module saved with torch.jit.save (checked by loading
//               it; refused in a build without libtorch)
//
// and "loss": "cross_entropy" (the default), "binary_cross_entropy" or "mse"
// (optim/loss.hpp); "units": "classes" is then the data's class count, 1 or
// 1 (the model's outputs per sample, loss_outputs).

#pragma once

#include <string>
#include <vector>

#include "optim/sequential.hpp"

namespace troupe::optim {

/// The largest description accepted, in bytes, and the most layers.
inline constexpr std::size_t max_model_description = 1 << 20;
inline constexpr std::size_t max_model_layers = 256;

/// The layer types a description may use.
const std::vector<std::string>& model_layer_types();

/// Whether `model` is a description (JSON text) rather than a name.
bool is_model_description(const std::string& model);

/// The checked description of `model` in canonical form (compact JSON,
/// keys sorted): a built-in name gives its compiled-in description; a
/// description is checked. Throws std::invalid_argument naming the layer and
/// the problem ("layer 3 (conv2d): kernel must be an integer from 1 to 64"),
/// or, for an unknown name, listing the built-in ones.
std::string model_description(const std::string& model);

/// What to call the model in messages: a built-in's name, a description's
/// "name" ("custom" without one).
std::string model_label(const std::string& model);

/// The description in FILE (`--model=FILE.json`), checked and canonical,
/// named after the file's stem when it has no "name", the relative "file"s
/// of its torchscript layers made absolute (relative to FILE's folder); or,
/// for `torchscript:FILE`, the description whose only layer is that module
/// (its path absolute, named after the file). Throws data_error naming the
/// file (or "torchscript:FILE") and the problem.
std::string read_model_description(const std::string& path);

/// Whether two models (names or descriptions) have the same layers, names
/// aside; false if either cannot be described.
bool same_architecture(const std::string& a, const std::string& b);

/// The loss of a model (a name or a description); cross-entropy unless the
/// description says otherwise. Throws as model_description does.
loss_kind model_loss(const std::string& model);

/// Whether a --model value names a file to read (it ends in ".json", or is
/// "torchscript:FILE").
bool names_model_file(const std::string& model);

/// Builds (and finalizes, not initializes) the model of a description (or a
/// built-in name) for samples of shape `input` and `classes` classes (0:
/// regression data), with the description's loss set. Throws
/// std::invalid_argument naming the layer and the problem, also when the
/// model's output per sample is not loss_outputs(loss, classes) values, and
/// when the loss does not fit the data (cross-entropy without classes,
/// binary cross-entropy on other than 2 classes).
template <class T>
sequential<T> build_model(const std::string& model, shape input, int classes);

/// Builds layers `[first, last)` of the model as one stage of a pipeline
/// (sequential::finalize(first, last)); only the stage's parameters are
/// allocated. Throws as build_model does; the check of the output's size
/// applies to the last stage only.
template <class T>
sequential<T> build_stage(const std::string& model, shape input, int classes,
                          std::size_t first, std::size_t last);

} // namespace troupe::optim
