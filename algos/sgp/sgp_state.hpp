// Compressed SGP's per-peer model copies in a checkpoint (gossip_policy.cpp
// saves the rest of a worker's push-sum state itself).

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "optim/state_file.hpp"

namespace troupe::algos {

/// The copies by peer rank: "<prefix>peers" (the ranks) and
/// "<prefix>values" (their models, one after the other).
void save_copies(optim::state_writer& w, const std::string& prefix,
                 const std::map<std::uint32_t, std::vector<float>>& copies);

/// Reads save_copies()'s tensors, each copy of `n` values; throws
/// optim::data_error naming the tensor that does not fit.
void load_copies(const optim::state_reader& r, const std::string& prefix,
                 std::map<std::uint32_t, std::vector<float>>& copies,
                 std::size_t n);

/// The copy held for peer j, created from the shared starting point `init`
/// (zeros without one of n values).
std::vector<float>&
copy_of(std::map<std::uint32_t, std::vector<float>>& copies, std::uint32_t j,
        std::size_t n, const std::shared_ptr<const std::vector<float>>& init);

} // namespace troupe::algos
