// A model cut into consecutive stages, as DistBelief partitions a replica
// across machines (docs/algorithms.md "Pipeline"): stage s holds layers
// [first, last) and the matching contiguous slice of the flat parameter
// vector, and passes its activations forward and their gradients backward.
// This header plans the cut; optim/pipeline_stage.hpp computes a stage.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/types.hpp"

namespace troupe::optim {

/// One top-level layer of a model, as a cut sees it.
struct layer_profile {
  std::string name;           ///< "dense2", as the model names it
  std::size_t offset = 0;     ///< its first parameter in the flat vector
  std::size_t params = 0;     ///< its parameters
  std::size_t in_values = 0;  ///< activation values per sample it reads
  std::size_t out_values = 0; ///< activation values per sample it gives
  double flops = 0; ///< estimated work per sample: multiply-adds of its
                    ///< weights plus its input and output values
  double cost = 0;  ///< measured seconds per sample, forward and backward
                    ///< (0 when not measured)
};

/// One stage of a cut.
struct stage_plan {
  std::size_t first = 0;        ///< its first layer
  std::size_t last = 0;         ///< one past its last layer
  std::size_t param_offset = 0; ///< its slice of the flat vector
  std::size_t param_size = 0;
  std::size_t in_values = 0; ///< activation values per sample it receives
                             ///< (the sample itself for stage 0)
  double cost = 0;           ///< its layers' summed cost
};

/// The layers of a model (a name or a description, optim/model_spec.hpp)
/// with their parameters and, if `batch` > 0, their cost measured on this
/// machine: each layer is built alone (only its own parameters are
/// allocated) and timed, forward and backward, on random inputs of `batch`
/// samples (the best of a few passes). Throws as build_model does.
std::vector<layer_profile> profile_layers(const std::string& model, shape input,
                                          int classes, std::size_t batch);

/// Cuts the layers into `stages` consecutive stages of at least one layer
/// each that minimize the largest stage's cost (measured if any layer's
/// cost was, else estimated from the layers' shapes: `flops`, the same on
/// every machine),
/// with at most `max_params` parameters per stage (0: no limit). Throws
/// std::invalid_argument naming the problem: more stages than layers, a
/// layer alone over `max_params`, or no cut that fits.
std::vector<stage_plan> cut_balanced(const std::vector<layer_profile>& layers,
                                     std::size_t stages,
                                     std::size_t max_params = 0);

/// Cuts before each layer named in `starts` (the first layer of every stage
/// but the first, in model order: "relu2,dense3"), checking `max_params`.
/// Throws std::invalid_argument naming an unknown or misplaced name, or a
/// stage over `max_params`.
std::vector<stage_plan> cut_at(const std::vector<layer_profile>& layers,
                               const std::vector<std::string>& starts,
                               std::size_t max_params = 0);

/// "dense1..relu2 | dense3..dense5", for logs and errors.
std::string describe_cut(const std::vector<layer_profile>& layers,
                         const std::vector<stage_plan>& plan);

} // namespace troupe::optim
