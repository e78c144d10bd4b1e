#pragma once

// Gaia's significance filter (Hsieh et al., NSDI 2017, "Gaia:
// Geo-Distributed Machine Learning Approaching LAN Speeds", §3.2;
// docs/algorithms.md): each data centre's parameter server keeps a full
// replica and sends the other data centres only the accumulated updates
// that are significant, |change| > threshold * |value|. Pure arithmetic on
// flat vectors; the servers are algos/gaia.

#include <cstddef>
#include <cstdint>
#include <string>

namespace troupe::optim {

/// Bytes of one entry of a packed block: a uint32 index and a float change.
inline constexpr std::size_t significant_entry_bytes = 8;

/// Finds the significant entries of the local changes `w - base` over n
/// values: |w_j - base_j| > threshold * |w_j| (a value of 0 makes any
/// change significant). Appends each as (index j, change) to `packed`, sets
/// base_j = w_j (the change is sent) and returns how many there were. With
/// threshold 0 every changed entry is significant.
std::size_t take_significant(const float* w, float* base, std::size_t n,
                             double threshold, std::string& packed);

/// The entries in a packed block; throws optim::data_error if its length
/// is not a whole number of entries.
std::size_t significant_entries(const std::string& packed);

/// Adds another replica's packed changes to `w` and to `base` (n values
/// each): they are not this replica's to send on. Checks the whole block
/// first and throws optim::data_error naming the first index at or above n
/// or the first non-finite change; then nothing is changed.
void apply_significant(const std::string& packed, float* w, float* base,
                       std::size_t n);

/// The threshold of an update made at rate `lr` when the first was made at
/// `lr0`: Gaia lowers it as the rate decays, threshold * lr / lr0 (the
/// initial threshold if either rate is not positive).
double significance_at(double threshold, double lr, double lr0) noexcept;

} // namespace troupe::optim
