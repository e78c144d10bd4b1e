#pragma once

// Sufficient factor broadcasting on the ring (Xie et al. 2016) with
// Poseidon's per-layer choice (Zhang et al. 2017): each chosen dense layer's
// gradient travels as its factors U (out x b) and V (in x b), each worker's
// in a slot of its own (the ring's sum of slots that only one worker fills
// is everyone's factors), every other value as the plain summed gradient.
// Every worker rebuilds the same mean gradient sum_r U_r V_r^T / total.

#include <memory>

#include "algos/allreduce/reducer.hpp"

namespace troupe::algos {

/// The dense layers SFB sends as factors: Poseidon's choice (auto) or all.
std::vector<optim::fc_layer> sfb_chosen(const reducer_options& o,
                                        std::uint32_t workers);

/// The length of SFB's one exchange for a model of n values.
std::size_t sfb_length(const reducer_options& o, std::size_t n,
                       std::uint32_t workers);

std::unique_ptr<reducer> make_sfb_reducer(const reducer_options& o,
                                          std::size_t n, std::uint32_t workers,
                                          std::uint32_t rank);

} // namespace troupe::algos
