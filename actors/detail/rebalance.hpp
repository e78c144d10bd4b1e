#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

// The arithmetic of a node joining a running job (elastic scale-up): what a
// live worker cedes, and how the ceded steps and examples are split among
// the joining workers. Pure functions, tested without actors.

namespace troupe::actors::detail {

/// Steps a worker with `remaining` steps left cedes when `num` of `den`
/// workers are new: floor(remaining * num / den), keeping at least one (so
/// a ceding worker never ends by ceding). 0 when den is 0 or num >= den.
std::uint64_t steps_to_cede(std::uint64_t remaining, std::uint32_t num,
                            std::uint32_t den) noexcept;

/// `total` split into `parts` shares that differ by at most one, the larger
/// ones first; their sum is `total`. Empty for no parts.
std::vector<std::uint64_t> split_steps(std::uint64_t total, std::size_t parts);

/// `examples` dealt into `parts` contiguous runs of sizes that differ by at
/// most one; every example lands in exactly one part. Empty for no parts.
std::vector<std::vector<std::uint64_t>>
split_examples(const std::vector<std::uint64_t>& examples, std::size_t parts);

} // namespace troupe::actors::detail
