#include "algos/gadmm/gadmm_state.hpp"

#include <algorithm>
#include <utility>

#include "optim/gadmm.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

gadmm_chain_view gadmm_chains::view(std::uint64_t k, std::uint32_t rank) const {
  gadmm_chain_view v;
  auto change = rechain_ > 0 ? k / rechain_ : 0;
  if (change == 0 || rank >= workers_) { // the ranks in order
    v.pos = rank;
    if (rank > 0)
      v.left = rank - 1;
    if (rank + 1 < workers_)
      v.right = rank + 1;
    return v;
  }
  // O(1): the keyed shuffle's place and its neighbours' ranks.
  v.pos = optim::gadmm_place(rank, workers_, change, seed_);
  if (v.pos > 0)
    v.left = optim::gadmm_rank_at(v.pos - 1, workers_, change, seed_);
  if (v.pos + 1 < workers_)
    v.right = optim::gadmm_rank_at(v.pos + 1, workers_, change, seed_);
  return v;
}

std::vector<std::uint32_t> gadmm_chains::neighbours(std::uint64_t k,
                                                    std::uint32_t rank) const {
  auto v = view(k, rank);
  std::vector<std::uint32_t> out;
  for (auto r : {v.left, v.right})
    if (r)
      out.push_back(*r);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::uint32_t> gadmm_neighbours(std::uint32_t workers,
                                            const gadmm_settings& g,
                                            std::uint64_t seed, std::uint64_t k,
                                            std::uint32_t rank) {
  return gadmm_chains{workers, g, seed}.neighbours(k, rank);
}

namespace {

/// The inbox key of a dual in a checkpoint (no rank is this large).
constexpr std::uint64_t dual_key = ~std::uint64_t{0};

} // namespace

gadmm_state::gadmm_state(std::size_t size)
    : n(size), lam_l(size, 0.0f), lam_r(size, 0.0f), nb_l(size, 0.0f),
      nb_r(size, 0.0f), mu(size, 0.0f) {}

void gadmm_state::save(optim::state_writer& w,
                       const std::string& prefix) const {
  std::uint64_t scalars[] = {k,      phase,  prepared, had_l, had_r,
                             edge_l, edge_r, mu_ready, late,  missed};
  w.put(prefix + "gadmm", scalars, 10);
  w.put(prefix + "lambda.left", lam_l);
  w.put(prefix + "lambda.right", lam_r);
  w.put(prefix + "neighbour.left", nb_l);
  w.put(prefix + "neighbour.right", nb_r);
  w.put(prefix + "mu", mu);
  std::vector<std::uint64_t> keys;
  std::vector<float> values;
  for (const auto& [round, got] : inbox)
    for (const auto& [sender, v] : got)
      if (v.size() == n) { // a garbled copy is awaited again
        keys.insert(keys.end(), {round, sender});
        values.insert(values.end(), v.data(), v.data() + n);
      }
  for (const auto& [round, v] : duals_in) {
    keys.insert(keys.end(), {round, dual_key});
    values.insert(values.end(), v.data(), v.data() + n);
  }
  w.put(prefix + "inbox.keys", keys);
  w.put(prefix + "inbox.values", values);
}

void gadmm_state::load(const optim::state_reader& r,
                       const std::string& prefix) {
  auto s = r.u64(prefix + "gadmm", 10);
  if (s[1] > 3)
    throw r.error(prefix + "gadmm", "no such phase of an iteration");
  auto vector = [&](const char* name) {
    auto v = r.f32(prefix + name);
    if (v.size() != n)
      throw r.error(prefix + name, "not one value per parameter");
    return v;
  };
  auto ll = vector("lambda.left"), lr = vector("lambda.right");
  auto nl = vector("neighbour.left"), nr = vector("neighbour.right");
  auto m = vector("mu");
  auto keys = r.u64(prefix + "inbox.keys");
  auto values = r.f32(prefix + "inbox.values");
  if (keys.size() % 2 != 0 || values.size() != keys.size() / 2 * n)
    throw r.error(prefix + "inbox.values", "not one model per copy");
  k = s[0];
  phase = s[1];
  prepared = s[2];
  had_l = s[3] != 0;
  had_r = s[4] != 0;
  edge_l = s[5] != 0;
  edge_r = s[6] != 0;
  mu_ready = s[7] != 0;
  late = s[8];
  missed = s[9];
  lam_l = std::move(ll);
  lam_r = std::move(lr);
  nb_l = std::move(nl);
  nb_r = std::move(nr);
  mu = std::move(m);
  inbox.clear();
  duals_in.clear();
  for (std::size_t i = 0; i < keys.size() / 2; ++i) {
    messages::tensor v{values.data() + i * n, n};
    if (keys[2 * i + 1] == dual_key)
      duals_in[keys[2 * i]] = std::move(v);
    else
      inbox[keys[2 * i]][static_cast<messages::worker_id>(keys[2 * i + 1])]
          = std::move(v);
  }
}

} // namespace troupe::algos
