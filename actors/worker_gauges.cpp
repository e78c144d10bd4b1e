// The gauges a worker's probe shows on the dashboard: steps, samples, the
// smoothed training loss and the learning rate of its local steps.

#include <cmath>

#include "actors/comm_policy.hpp"
#include "actors/worker.hpp"

namespace troupe::actors {

void note_lr(worker_context& ctx, double lr) {
  if (auto* p = ctx.probe())
    p->gauge("lr", lr);
}

void worker_state::note_step(double loss) {
  probe_->progress();
  probe_->gauge("steps", static_cast<double>(counters.steps));
  probe_->gauge("samples", static_cast<double>(counters.samples));
  // The dashboard's per-worker loss: smoothed over about 20 steps.
  if (std::isfinite(loss))
    loss_ema_ = counters.steps == 1 || !std::isfinite(loss_ema_)
                    ? loss
                    : 0.95 * loss_ema_ + 0.05 * loss;
  probe_->gauge("loss", loss_ema_);
}

} // namespace troupe::actors
