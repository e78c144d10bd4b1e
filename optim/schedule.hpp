#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace troupe::optim {

/// Named settings of a learning-rate schedule over optimizer steps.
struct schedule_options {
  std::string name = "constant"; ///< constant | step | cosine
  double base_lr = 0.01;         ///< rate before any decay or warm-up
  std::size_t step_size = 1000;  ///< step: decay every step_size steps
  double gamma = 0.1;            ///< step: multiply by gamma at each decay
  std::size_t total_steps = 0;   ///< cosine: steps to reach min_lr
  double min_lr = 0.0;           ///< cosine floor
  std::size_t warmup_steps = 0;  ///< linear warm-up from ~0 to the schedule
};

/// A learning-rate schedule: lr(step) for step = 0, 1, 2, ... Pure function
/// of its options and the step, so any worker can evaluate it.
class schedule {
public:
  /// Throws std::invalid_argument naming the option on an unknown name or a
  /// bad value (negative base_lr or gamma, step_size 0 for step, total_steps
  /// 0 or min_lr outside [0, base_lr] for cosine).
  explicit schedule(schedule_options opts);

  /// Learning rate for optimizer step `step` (0-based): constant: base_lr;
  /// step: base_lr * gamma^floor(step / step_size); cosine: min_lr +
  /// (base_lr - min_lr) * (1 + cos(pi * min(step, total_steps) / total_steps))
  /// / 2. During warm-up (step < warmup_steps) that value is multiplied by
  /// (step + 1) / warmup_steps.
  double lr(std::size_t step) const;

  const schedule_options& options() const noexcept {
    return opts_;
  }

private:
  schedule_options opts_;
};

/// Names accepted by schedule.
const std::vector<std::string>& schedule_names();

} // namespace troupe::optim
