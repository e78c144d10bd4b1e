#pragma once

// One copy per process of the example lists and epoch orders that
// batch_iterators hold alike. Every worker of a job whose batches are parts
// of one global batch (batch_part) holds the whole training set's indices
// and the same permutation of them each epoch: 16 bytes an example a
// worker, 1 MB each for Fashion-MNIST, 10 GB for 10^4 simulated workers in
// one process (issue [17]). Shared, they are held once: the lists are
// immutable, and an iterator that changes its own (add_indices, cede) makes
// a copy first. A permutation is a function of (indices, seed, epoch), so
// sharing it changes no batch.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace troupe::optim::detail {

/// An immutable list of example indices, shared.
using index_list = std::shared_ptr<const std::vector<std::size_t>>;

/// The process's one live list equal to `xs` (this one if none is). Thread
/// safe; lists no iterator holds any more are freed.
index_list intern_indices(std::vector<std::size_t> xs);

/// The order of epoch `epoch` under `seed` of the interned list `indices`:
/// the one a live iterator already holds, else `make()` (the permutation).
index_list shared_order(const index_list& indices, std::uint64_t seed,
                        std::uint64_t epoch,
                        const std::function<std::vector<std::size_t>()>& make);

/// How many interned lists and orders are alive (for tests).
std::size_t live_index_lists();

} // namespace troupe::optim::detail
