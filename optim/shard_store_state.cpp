// shard_store::save and shard_store::load of optim/shard_store.hpp.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "optim/shard_store.hpp"
#include "optim/state_file.hpp"

namespace troupe::optim {

namespace {

/// The options that shape a shard's updates, as metadata.
std::vector<std::pair<std::string, std::string>>
option_texts(const shard_store_options& o) {
  std::vector<std::pair<std::string, std::string>> out{
      {"staleness_aware", o.staleness_aware ? "true" : "false"},
      {"histogram_buckets", std::to_string(o.histogram_buckets)},
      {"schedule", o.lr_schedule ? o.lr_schedule->name : "none"}};
  if (!o.lr_schedule)
    out.emplace_back("lr", exact_text(o.lr)); // a schedule replaces it
  if (const auto& s = o.lr_schedule) {
    out.emplace_back("schedule.base_lr", exact_text(s->base_lr));
    out.emplace_back("schedule.step_size", std::to_string(s->step_size));
    out.emplace_back("schedule.gamma", exact_text(s->gamma));
    out.emplace_back("schedule.total_steps", std::to_string(s->total_steps));
    out.emplace_back("schedule.min_lr", exact_text(s->min_lr));
    out.emplace_back("schedule.warmup_steps", std::to_string(s->warmup_steps));
  }
  return out;
}

} // namespace

template <class T>
void shard_store<T>::save(state_writer& w, const std::string& prefix) const {
  for (const auto& [key, value] : option_texts(opts_))
    w.meta(prefix + key, value);
  w.put_u64(prefix + "offset", range_.offset);
  w.put_u64(prefix + "size", range_.size);
  w.put(prefix + "params", params_);
  opt_->save(w, prefix + "opt.");
  w.put_u64(prefix + "version", version_);
  w.put(prefix + "staleness.histogram", histogram_);
  w.put_u64(prefix + "staleness.sum", staleness_sum_);
  w.put_u64(prefix + "staleness.max", staleness_max_);
  std::vector<std::uint32_t> ids;
  for (const auto& entry : workers_)
    ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  std::vector<std::uint64_t> id, last_seq, applied, rejected, duplicates;
  for (auto i : ids) {
    const auto& rec = workers_.at(i);
    id.push_back(i);
    last_seq.push_back(rec.last_seq);
    applied.push_back(rec.applied);
    rejected.push_back(rec.rejected);
    duplicates.push_back(rec.duplicates);
  }
  w.put(prefix + "workers.id", id);
  w.put(prefix + "workers.last_seq", last_seq);
  w.put(prefix + "workers.applied", applied);
  w.put(prefix + "workers.rejected", rejected);
  w.put(prefix + "workers.duplicates", duplicates);
}

template <class T>
void shard_store<T>::load(const state_reader& r, const std::string& prefix) {
  for (const auto& [key, value] : option_texts(opts_))
    r.expect_meta(prefix + key, value);
  r.expect_u64(prefix + "offset", range_.offset);
  r.expect_u64(prefix + "size", range_.size);
  flat_storage<T> params(range_.size);
  if constexpr (std::is_same_v<T, float>)
    r.f32(prefix + "params", params.data(), params.size());
  else
    r.f64(prefix + "params", params.data(), params.size());
  auto opt = make_optimizer<T>(
      for_slice(opts_.optimizer, range_.offset, range_.size), range_.size);
  opt->load(r, prefix + "opt.");
  auto version = r.u64_scalar(prefix + "version");
  auto histogram = r.u64(prefix + "staleness.histogram");
  if (histogram.size() != histogram_.size())
    throw r.error(prefix + "staleness.histogram",
                  std::to_string(histogram.size()) + " buckets, expected "
                      + std::to_string(histogram_.size()));
  auto sum = r.u64_scalar(prefix + "staleness.sum");
  auto max = r.u64_scalar(prefix + "staleness.max");
  auto id = r.u64(prefix + "workers.id");
  std::unordered_map<std::uint32_t, worker_record> workers;
  const char* fields[] = {"last_seq", "applied", "rejected", "duplicates"};
  std::vector<std::uint64_t> columns[4];
  for (int f = 0; f < 4; ++f) {
    auto name = prefix + "workers." + fields[f];
    columns[f] = r.u64(name);
    if (columns[f].size() != id.size())
      throw r.error(name, std::to_string(columns[f].size()) + " values for "
                              + std::to_string(id.size()) + " workers");
  }
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (id[i] > std::numeric_limits<std::uint32_t>::max())
      throw r.error(prefix + "workers.id",
                    "worker " + std::to_string(id[i]) + " is not a worker id");
    worker_record rec{columns[0][i], columns[1][i], columns[2][i],
                      columns[3][i]};
    if (!workers.emplace(static_cast<std::uint32_t>(id[i]), rec).second)
      throw r.error(prefix + "workers.id",
                    "worker " + std::to_string(id[i]) + " appears twice");
  }
  params_ = std::move(params);
  opt_ = std::move(opt);
  version_ = version;
  histogram_.assign(histogram.begin(), histogram.end());
  staleness_sum_ = sum;
  staleness_max_ = max;
  workers_ = std::move(workers);
}

template void shard_store<float>::save(state_writer&, const std::string&) const;
template void shard_store<float>::load(const state_reader&, const std::string&);
template void shard_store<double>::save(state_writer&,
                                        const std::string&) const;
template void shard_store<double>::load(const state_reader&,
                                        const std::string&);

} // namespace troupe::optim
