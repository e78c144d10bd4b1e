#pragma once

// Sufficient factors of fully connected layers (Xie et al. 2016, "Lighter-
// communication distributed machine learning via sufficient factor
// broadcasting"): after a training step's backward pass, a dense layer's
// weight gradient over a batch of b samples is U V^T, U its output gradient
// (out x b) and V its input (in x b). Sending U and V costs b (out + in)
// values instead of out x in; the sum over workers of their U_r V_r^T is
// the sum of their gradients, exactly. Poseidon (Zhang et al. 2017) picks,
// per layer, whichever of the factors and the matrix costs less to send.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/sequential.hpp"

namespace troupe::optim {

/// A dense layer of a model: its index, name and weight range.
struct fc_layer {
  std::string name;       ///< e.g. "2" (its weight is "2.weight")
  std::size_t layer = 0;  ///< index in the model's layers
  std::size_t offset = 0; ///< the weight's first index in the flat vector
  std::size_t out = 0, in = 0;
};

/// The model's dense layers, in order.
std::vector<fc_layer> fc_layers(const sequential<float>& m);

/// Poseidon's choice for one layer on a ring of `workers` whose batches
/// have at most `batch` samples: the factors when every worker's (W b (out
/// + in) values summed by the ring) are fewer than the matrix's out x in.
bool prefer_factors(const fc_layer& l, std::size_t batch,
                    std::uint32_t workers) noexcept;

/// dw += u v^T: u is out x b, v is in x b, dw out x in, all column-major.
void add_factor_product(const float* u, const float* v, std::size_t out,
                        std::size_t in, std::size_t b, float* dw);

} // namespace troupe::optim
