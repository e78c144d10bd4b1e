#include "optim/shard_store.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe::optim {

const char* to_string(push_status status) noexcept {
  switch (status) {
  case push_status::applied:
    return "applied";
  case push_status::duplicate:
    return "duplicate";
  case push_status::bad_range:
    return "bad_range";
  case push_status::non_finite:
    return "non_finite";
  }
  return "unknown";
}

template <class T>
shard_store<T>::shard_store(slice range, const T* init,
                            shard_store_options opts)
    : range_(range), opts_(std::move(opts)),
      params_(init + range.offset, init + range.offset + range.size),
      opt_(make_optimizer<T>(
          for_slice(opts_.optimizer, range.offset, range.size), range.size)),
      histogram_(std::max<std::size_t>(opts_.histogram_buckets, 1), 0) {
  if (range.size == 0)
    throw std::invalid_argument("shard_store: empty range");
  if (!(opts_.lr > 0))
    throw std::invalid_argument("shard_store: lr must be positive");
  if (opts_.lr_schedule)
    schedule_.emplace(*opts_.lr_schedule);
}

template <class T>
push_status shard_store<T>::check(std::uint32_t worker, std::uint64_t seq,
                                  std::uint64_t base_version,
                                  std::size_t offset, const T* grad,
                                  std::size_t n) const {
  auto i = workers_.find(worker);
  if (i != workers_.end() && seq <= i->second.last_seq)
    return push_status::duplicate;
  if (offset != range_.offset || n != range_.size || grad == nullptr
      || base_version > version_)
    return push_status::bad_range;
  const_vector_map<T> g{grad, static_cast<Eigen::Index>(n)};
  if (!g.allFinite())
    return push_status::non_finite;
  return push_status::applied;
}

template <class T>
void shard_store<T>::count(std::uint32_t worker, push_status status) {
  auto& rec = workers_[worker];
  if (status == push_status::duplicate)
    ++rec.duplicates;
  else if (status != push_status::applied)
    ++rec.rejected;
}

template <class T>
double shard_store<T>::current_lr() const {
  return schedule_ ? schedule_->lr(version_) : opts_.lr;
}

template <class T>
push_result shard_store<T>::push(std::uint32_t worker, std::uint64_t seq,
                                 std::uint64_t base_version, std::size_t offset,
                                 const T* grad, std::size_t n) {
  push_result result;
  result.version = version_;
  result.status = check(worker, seq, base_version, offset, grad, n);
  if (result.status != push_status::applied) {
    count(worker, result.status);
    return result;
  }
  auto& rec = workers_[worker];
  result.staleness = version_ - base_version;
  auto lr = current_lr();
  if (opts_.staleness_aware)
    lr /= static_cast<double>(std::max<std::uint64_t>(result.staleness, 1));
  opt_->step(params_.data(), grad, n, lr);
  rec.last_seq = seq;
  ++rec.applied;
  ++version_;
  result.version = version_;
  auto bucket
      = std::min<std::uint64_t>(result.staleness, histogram_.size() - 1);
  ++histogram_[static_cast<std::size_t>(bucket)];
  staleness_sum_ += result.staleness;
  staleness_max_ = std::max(staleness_max_, result.staleness);
  return result;
}

template <class T>
std::uint64_t shard_store<T>::apply(const T* grad, std::uint64_t seq,
                                    const std::vector<std::uint32_t>& workers) {
  opt_->step(params_.data(), grad, range_.size, current_lr());
  for (auto w : workers) {
    auto& rec = workers_[w];
    rec.last_seq = seq;
    ++rec.applied;
  }
  ++version_;
  ++histogram_[0];
  return version_;
}

template <class T>
std::uint64_t shard_store<T>::apply_round(const T* grad,
                                          const std::vector<round_push>& in) {
  opt_->step(params_.data(), grad, range_.size, current_lr());
  std::uint64_t oldest = version_;
  for (const auto& p : in) {
    auto& rec = workers_[p.worker];
    rec.last_seq = std::max(rec.last_seq, p.seq);
    ++rec.applied;
    oldest = std::min(oldest, p.base_version);
  }
  auto staleness = version_ - oldest;
  ++version_;
  auto bucket = std::min<std::uint64_t>(staleness, histogram_.size() - 1);
  ++histogram_[static_cast<std::size_t>(bucket)];
  staleness_sum_ += staleness;
  staleness_max_ = std::max(staleness_max_, staleness);
  return version_;
}

template <class T>
double shard_store<T>::staleness_mean() const noexcept {
  return version_ == 0 ? 0.0
                       : static_cast<double>(staleness_sum_)
                             / static_cast<double>(version_);
}

template class shard_store<float>;
template class shard_store<double>;

} // namespace troupe::optim
