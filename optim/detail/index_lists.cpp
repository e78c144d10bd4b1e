#include "optim/detail/index_lists.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace troupe::optim::detail {

namespace {

using weak_list = std::weak_ptr<const std::vector<std::size_t>>;

/// An interned list is identified by its address (equal content, one
/// list); the entry's owner check guards against a reused address.
struct order_key {
  std::uintptr_t indices;
  std::uint64_t seed;
  std::uint64_t epoch;
  bool operator<(const order_key& o) const {
    return std::tie(indices, seed, epoch)
           < std::tie(o.indices, o.seed, o.epoch);
  }
};

struct order_entry {
  weak_list indices; ///< identified by owner: an address may be reused
  weak_list order;
};

struct index_registry {
  std::mutex mutex;
  std::multimap<std::uint64_t, weak_list> lists;
  std::multimap<order_key, order_entry> orders;
  std::size_t pruned_at = 64; ///< entries when the dead ones go next

  void prune() {
    if (lists.size() + orders.size() < pruned_at)
      return;
    for (auto i = lists.begin(); i != lists.end();)
      i = i->second.expired() ? lists.erase(i) : std::next(i);
    for (auto i = orders.begin(); i != orders.end();)
      i = i->second.order.expired() ? orders.erase(i) : std::next(i);
    pruned_at = 2 * (lists.size() + orders.size()) + 64;
  }
};

index_registry& registry() {
  static index_registry r;
  return r;
}

std::uint64_t content_hash(const std::vector<std::size_t>& xs) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ xs.size();
  for (auto x : xs)
    h = (h ^ static_cast<std::uint64_t>(x)) * 0x100000001b3ull;
  return h;
}

bool same_owner(const weak_list& a, const index_list& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

} // namespace

index_list intern_indices(std::vector<std::size_t> xs) {
  auto h = content_hash(xs);
  auto& r = registry();
  std::lock_guard<std::mutex> guard{r.mutex};
  auto [first, last] = r.lists.equal_range(h);
  for (auto i = first; i != last; ++i)
    if (auto alive = i->second.lock(); alive && *alive == xs)
      return alive;
  r.prune();
  auto out = std::make_shared<const std::vector<std::size_t>>(std::move(xs));
  r.lists.emplace(h, out);
  return out;
}

index_list shared_order(const index_list& indices, std::uint64_t seed,
                        std::uint64_t epoch,
                        const std::function<std::vector<std::size_t>()>& make) {
  order_key key{reinterpret_cast<std::uintptr_t>(indices.get()), seed, epoch};
  auto& r = registry();
  {
    std::lock_guard<std::mutex> guard{r.mutex};
    auto [first, last] = r.orders.equal_range(key);
    for (auto i = first; i != last; ++i)
      if (same_owner(i->second.indices, indices))
        if (auto alive = i->second.order.lock())
          return alive;
  }
  // Computed outside the lock; two iterators racing compute it twice and
  // the second's copy is used by itself only (the same values).
  auto out = std::make_shared<const std::vector<std::size_t>>(make());
  std::lock_guard<std::mutex> guard{r.mutex};
  r.prune();
  r.orders.emplace(key, order_entry{indices, out});
  return out;
}

std::size_t live_index_lists() {
  auto& r = registry();
  std::lock_guard<std::mutex> guard{r.mutex};
  std::size_t n = 0;
  for (auto& [h, l] : r.lists)
    n += l.expired() ? 0 : 1;
  for (auto& [k, e] : r.orders)
    n += e.order.expired() ? 0 : 1;
  return n;
}

} // namespace troupe::optim::detail
