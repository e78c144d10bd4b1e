#include "actors/clock.hpp"

#include <thread>

#include <caf/scheduler/abstract_coordinator.hpp>

namespace troupe::actors {

time_model::~time_model() = default;

time_point process_now() noexcept {
  return clock_type::now();
}

double seconds_since(const caf::local_actor* self, time_point t0) noexcept {
  return std::chrono::duration<double>(now(self) - t0).count();
}

std::uint64_t nanoseconds_since(const caf::local_actor* self,
                                time_point t0) noexcept {
  auto d = now(self) - t0;
  return d.count() > 0 ? static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(d).count())
                       : 0;
}

time_model* time_model_of(const caf::local_actor* self) noexcept {
  return dynamic_cast<time_model*>(&self->home_system().scheduler());
}

std::int64_t unix_ms(const caf::local_actor* self) {
  using std::chrono::milliseconds;
  if (time_model_of(self) != nullptr)
    return std::chrono::duration_cast<milliseconds>(
               now(self).time_since_epoch())
        .count();
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void did_work(const caf::local_actor* self, work_kind kind,
              std::uint64_t samples, double share) {
  if (auto* m = time_model_of(self))
    m->compute(self, kind, samples, share);
}

void spend(const caf::local_actor* self, std::chrono::nanoseconds d) {
  if (d.count() <= 0)
    return;
  if (auto* m = time_model_of(self))
    m->busy(self, d);
  else
    std::this_thread::sleep_for(d);
}

} // namespace troupe::actors
