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
      opt_(make_optimizer<T>(opts_.optimizer, range.size)),
      histogram_(std::max<std::size_t>(opts_.histogram_buckets, 1), 0) {
  if (range.size == 0)
    throw std::invalid_argument("shard_store: empty range");
  if (!(opts_.lr > 0))
    throw std::invalid_argument("shard_store: lr must be positive");
}

template <class T>
push_result shard_store<T>::push(std::uint32_t worker, std::uint64_t seq,
                                 std::uint64_t base_version, std::size_t offset,
                                 const T* grad, std::size_t n) {
  auto& rec = workers_[worker];
  push_result result;
  result.version = version_;
  if (seq <= rec.last_seq) {
    ++rec.duplicates;
    result.status = push_status::duplicate;
    return result;
  }
  if (offset != range_.offset || n != range_.size || grad == nullptr
      || base_version > version_) {
    ++rec.rejected;
    result.status = push_status::bad_range;
    return result;
  }
  const_vector_map<T> g{grad, static_cast<Eigen::Index>(n)};
  if (!g.allFinite()) {
    ++rec.rejected;
    result.status = push_status::non_finite;
    return result;
  }
  opt_->step(params_.data(), grad, n, opts_.lr);
  rec.last_seq = seq;
  ++rec.applied;
  result.staleness = version_ - base_version;
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
double shard_store<T>::staleness_mean() const noexcept {
  return version_ == 0 ? 0.0
                       : static_cast<double>(staleness_sum_)
                             / static_cast<double>(version_);
}

template class shard_store<float>;
template class shard_store<double>;

} // namespace troupe::optim
