#include "optim/portions.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe::optim {

portion_table::portion_table(std::size_t portions, bool backups)
    : state_(portions), backup_copies_(backups) {
  if (portions == 0)
    throw std::invalid_argument("portion_table: a batch needs portions");
  pool_.resize(portions);
  for (std::size_t p = 0; p < portions; ++p)
    pool_[p] = p;
}

std::optional<std::size_t> portion_table::assign(std::uint32_t worker) {
  if (done())
    return std::nullopt;
  if (last_.size() <= worker)
    last_.resize(worker + 1);
  if (!pool_.empty()) {
    // Data affinity: the first free portion after the worker's last one.
    auto it = pool_.begin();
    if (auto last = last_[worker])
      if (auto after = std::upper_bound(pool_.begin(), pool_.end(), *last);
          after != pool_.end())
        it = after;
    auto p = *it;
    pool_.erase(it);
    state_[p].holders.push_back(worker);
    last_[worker] = p;
    return p;
  }
  if (!backup_copies_)
    return std::nullopt;
  // Backup task: the outstanding portion with the fewest holders (lowest
  // id among equals) that this worker is not already computing.
  std::optional<std::size_t> best;
  for (std::size_t p = 0; p < state_.size(); ++p) {
    auto& e = state_[p];
    if (e.done
        || std::find(e.holders.begin(), e.holders.end(), worker)
               != e.holders.end())
      continue;
    if (!best || e.holders.size() < state_[*best].holders.size())
      best = p;
  }
  if (!best)
    return std::nullopt;
  state_[*best].holders.push_back(worker);
  ++backups_;
  return best;
}

bool portion_table::complete(std::size_t p, std::uint32_t worker) {
  if (p >= state_.size())
    return false;
  auto& e = state_[p];
  e.holders.erase(std::remove(e.holders.begin(), e.holders.end(), worker),
                  e.holders.end());
  if (e.done) {
    ++duplicates_;
    return false;
  }
  // A result for a portion nobody had assigned (reissued to the pool after
  // its holder was declared lost) still counts once: take it out of the
  // pool.
  if (auto it = std::lower_bound(pool_.begin(), pool_.end(), p);
      it != pool_.end() && *it == p)
    pool_.erase(it);
  e.done = true;
  e.winner = worker;
  ++completed_;
  return true;
}

std::size_t portion_table::lose(std::uint32_t worker) {
  std::size_t n = 0;
  for (std::size_t p = 0; p < state_.size(); ++p) {
    auto& e = state_[p];
    auto it = std::find(e.holders.begin(), e.holders.end(), worker);
    if (it == e.holders.end())
      continue;
    e.holders.erase(it);
    if (!e.done && e.holders.empty()) {
      pool_.insert(std::lower_bound(pool_.begin(), pool_.end(), p), p);
      ++n;
    }
  }
  reissued_ += n;
  return n;
}

std::optional<std::uint32_t> portion_table::winner(std::size_t p) const {
  return p < state_.size() ? state_[p].winner : std::nullopt;
}

} // namespace troupe::optim
