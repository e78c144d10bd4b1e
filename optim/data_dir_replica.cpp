#include "optim/data_dir_replica.hpp"

#include <algorithm>
#include <numeric>

#include "optim/state_file.hpp"

namespace troupe::optim {

namespace {

std::vector<std::size_t> first_n(std::size_t n) {
  std::vector<std::size_t> out(n);
  std::iota(out.begin(), out.end(), std::size_t{0});
  return out;
}

std::string who(const data_dir_part& p) {
  return std::to_string(p.worker) + "/" + std::to_string(p.workers);
}

/// The worker's files loaded, and its model.
detail::data_dir_storage load_part(const data_dir_part& p,
                                   const std::string& model,
                                   std::uint64_t init_seed) {
  const auto& s = *p.summary;
  auto files = worker_files(s, p.worker, p.workers);
  if (files.empty())
    throw data_error(s.dir + "/train: " + std::to_string(s.train.size())
                     + " files, none for worker " + std::to_string(p.worker)
                     + " of " + std::to_string(p.workers)
                     + " (each worker reads whole files)");
  detail::data_dir_storage out;
  out.owned_data = std::make_shared<dataset>(
      load_data_files(s, files, false, p.standardize));
  out.owned_model = std::make_unique<sequential<float>>(make_model<float>(
      model, out.owned_data->sample_shape, out.owned_data->classes));
  out.owned_model->init(init_seed);
  return out;
}

} // namespace

data_dir_replica::data_dir_replica(data_dir_part part, const std::string& model,
                                   std::size_t batch_size, std::uint64_t seed,
                                   std::uint64_t init_seed)
    : detail::data_dir_storage(load_part(part, model, init_seed)),
      model_replica(*owned_model, *owned_data, first_n(owned_data->size()),
                    batch_size, seed),
      part_(std::move(part)) {}

std::size_t data_dir_replica::adopt(std::size_t lost, std::uint32_t k,
                                    std::uint32_t m) {
  std::array<std::uint64_t, 3> key{lost, k, m};
  if (m == 0 || k >= m || lost >= part_.workers
      || std::find(adopted_.begin(), adopted_.end(), key) != adopted_.end())
    return 0;
  const auto& s = *part_.summary;
  auto files = worker_files(s, lost, part_.workers);
  std::size_t total = 0;
  for (auto i : files)
    total += s.train[i].examples;
  auto part = load_data_range(s, files, total * k / m, total * (k + 1) / m,
                              part_.standardize);
  auto n = part.size();
  if (n == 0)
    return 0;
  // The model_replica reads owned_data at every step: it sees the new columns.
  auto old = owned_data->size();
  auto& x = owned_data->x;
  x.conservativeResize(Eigen::NoChange, static_cast<Eigen::Index>(old + n));
  x.rightCols(static_cast<Eigen::Index>(n)) = part.x;
  owned_data->labels.insert(owned_data->labels.end(), part.labels.begin(),
                            part.labels.end());
  owned_data->targets.insert(owned_data->targets.end(), part.targets.begin(),
                             part.targets.end());
  std::vector<std::size_t> added(n);
  std::iota(added.begin(), added.end(), old);
  add_examples(added);
  adopted_.push_back(key);
  return n;
}

void data_dir_replica::save_state(state_writer& w,
                                  const std::string& prefix) const {
  model_replica::save_state(w, prefix);
  w.meta(prefix + "data_dir.worker", who(part_));
  if (adopted_.empty())
    return;
  std::vector<std::uint64_t> flat;
  for (const auto& a : adopted_)
    flat.insert(flat.end(), a.begin(), a.end());
  w.put(prefix + "data_dir.adopted", flat);
}

void data_dir_replica::load_state(const state_reader& r,
                                  const std::string& prefix) {
  r.expect_meta(prefix + "data_dir.worker", who(part_));
  auto name = prefix + "data_dir.adopted";
  if (r.has(name)) {
    auto flat = r.u64(name);
    if (flat.size() % 3 != 0)
      throw r.error(name, std::to_string(flat.size())
                              + " values, not triples (worker, k, m)");
    for (std::size_t i = 0; i < flat.size(); i += 3)
      if (flat[i + 2] == 0 || flat[i + 1] >= flat[i + 2]
          || flat[i] >= part_.workers || flat[i + 2] > part_.workers)
        throw r.error(name, "part " + std::to_string(flat[i + 1]) + " of "
                                + std::to_string(flat[i + 2]) + " of worker "
                                + std::to_string(flat[i])
                                + " is not one this job has");
    for (std::size_t i = 0; i < flat.size(); i += 3)
      adopt(flat[i], static_cast<std::uint32_t>(flat[i + 1]),
            static_cast<std::uint32_t>(flat[i + 2]));
  }
  model_replica::load_state(r, prefix);
}

} // namespace troupe::optim
