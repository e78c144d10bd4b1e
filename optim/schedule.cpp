#include "optim/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "optim/quote.hpp"

namespace troupe::optim {

namespace {

constexpr double pi = 3.14159265358979323846;

void check(bool ok, const std::string& what) {
  if (!ok)
    throw std::invalid_argument("schedule: " + what);
}

std::string known_names() {
  std::string result;
  for (const auto& name : schedule_names())
    result += (result.empty() ? "" : ", ") + name;
  return result;
}

} // namespace

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names{"constant", "step", "cosine"};
  return names;
}

schedule::schedule(schedule_options opts) : opts_(std::move(opts)) {
  const auto& o = opts_;
  const auto& names = schedule_names();
  check(std::find(names.begin(), names.end(), o.name) != names.end(),
        "unknown schedule " + quote(o.name) + " (known: " + known_names()
            + ")");
  check(std::isfinite(o.base_lr) && o.base_lr >= 0,
        "base_lr must be a finite value >= 0, got "
            + std::to_string(o.base_lr));
  if (o.name == "step") {
    check(o.step_size > 0, "step_size must be >= 1 for the step schedule");
    check(std::isfinite(o.gamma) && o.gamma >= 0,
          "gamma must be a finite value >= 0, got " + std::to_string(o.gamma));
  }
  if (o.name == "cosine") {
    check(o.total_steps > 0,
          "total_steps must be >= 1 for the cosine schedule");
    check(o.min_lr >= 0 && o.min_lr <= o.base_lr,
          "min_lr must be in [0, base_lr], got " + std::to_string(o.min_lr));
  }
}

double schedule::lr(std::size_t step) const {
  const auto& o = opts_;
  double result = o.base_lr;
  if (o.name == "step") {
    auto decays = static_cast<double>(step / o.step_size);
    result = o.base_lr * std::pow(o.gamma, decays);
  } else if (o.name == "cosine") {
    auto t = static_cast<double>(std::min(step, o.total_steps));
    auto total = static_cast<double>(o.total_steps);
    result = o.min_lr
             + (o.base_lr - o.min_lr) * (1.0 + std::cos(pi * t / total)) / 2.0;
  }
  if (step < o.warmup_steps)
    result
        *= static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  return result;
}

} // namespace troupe::optim
