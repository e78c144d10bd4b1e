// The objects fuzz_state loads into, and the seed file fuzz_seeds writes
// for it: a shard store of 8 parameters under adam and a batch iterator
// over 12 examples, with some steps taken.

#pragma once

#include <numeric>
#include <string>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/shard_store.hpp"
#include "optim/state_file.hpp"

namespace troupe::fuzz {

inline optim::shard_store<float> seed_store() {
  std::vector<float> init(8, 0.5f);
  optim::shard_store_options o;
  o.optimizer.name = "adam";
  o.lr = 0.01;
  return optim::shard_store<float>{optim::slice{0, 8}, init.data(), o};
}

inline optim::batch_iterator seed_batches() {
  std::vector<std::size_t> idx(12);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  return optim::batch_iterator{idx, 5, 3};
}

/// The seed: both objects after a few steps.
inline std::string seed_state() {
  auto store = seed_store();
  auto batches = seed_batches();
  std::vector<float> g(8, 0.25f);
  for (std::uint64_t s = 1; s <= 3; ++s) {
    store.push(1, s, store.version(), 0, g.data(), g.size());
    batches.next_indices();
  }
  optim::state_writer w;
  store.save(w, "store.");
  batches.save(w, "batches.");
  return w.encode();
}

} // namespace troupe::fuzz
