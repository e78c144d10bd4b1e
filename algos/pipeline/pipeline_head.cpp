#include "algos/pipeline/pipeline_head.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/detail/log.hpp"
#include "algos/pipeline/stage_actor.hpp"
#include "messages/pipeline.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

using namespace messages;

// -- head_replica -------------------------------------------------------------

head_replica::head_replica(optim::batch_source source, bool regression)
    : source_(std::move(source)),
      batches_(source_.indices, source_.batch_size, source_.seed, source_.part),
      regression_(regression) {
  if (!source_.data)
    throw std::invalid_argument("a pipeline's head needs its data in memory");
  if (regression_ ? source_.data->targets.size() != source_.data->size()
                  : source_.data->labels.size() != source_.data->size())
    throw std::invalid_argument(
        source_.data->name
        + (regression_ ? ": no regression targets" : ": no class labels"));
}

optim::step_result head_replica::compute() {
  if (!std::isfinite(loss_))
    throw std::domain_error("non-finite loss in epoch "
                            + std::to_string(batches_.epoch())
                            + ": training diverged; lower --lr");
  optim::step_result r;
  r.loss = loss_;
  r.samples = samples_;
  return r;
}

std::size_t head_replica::batches_per_epoch() const noexcept {
  return batches_.batches_per_epoch();
}

std::size_t head_replica::epoch() const noexcept {
  return batches_.epoch();
}

std::size_t
head_replica::add_examples(const std::vector<std::size_t>& indices) {
  return optim::add_to_stream(batches_, *source_.data, indices);
}

std::vector<std::size_t> head_replica::cede_examples(std::uint32_t num,
                                                     std::uint32_t den) {
  return optim::cede_share(batches_, num, den);
}

void head_replica::save_state(optim::state_writer& w,
                              const std::string& prefix) const {
  w.meta(prefix + "pipeline_head", "1");
  batches_.save(w, prefix + "batches.");
}

void head_replica::load_state(const optim::state_reader& r,
                              const std::string& prefix) {
  r.expect_meta(prefix + "pipeline_head", "1");
  batches_.load(r, prefix + "batches.");
}

std::size_t head_replica::draw() {
  samples_ = batches_.next(*source_.data, x_, labels_,
                           regression_ ? &targets_ : nullptr);
  return samples_;
}

// -- the head's policy
// ----------------------------------------------------------

namespace {

class head_policy : public actors::comm_policy {
public:
  head_policy(worker_id replica, std::uint32_t stages, std::uint32_t micros)
      : replica_(replica), stages_(stages), micros_(micros) {}

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    auto* head = dynamic_cast<head_replica*>(&ctx.replica());
    if (!head) {
      ctx.fail("a pipeline's head runs on a head replica");
      return;
    }
    head->draw();
    ready_ = std::move(ready);
    step_ = ctx.steps();
    issue(ctx);
  }

  void after_compute(actors::worker_context&, std::uint32_t,
                     std::function<void()> done) override {
    done();
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return {
        [this, &ctx](stage_wiring_msg& w) {
          auto scope = actors::on_message(ctx.probe(), ctx.self(),
                                          actors::msg_type::setup,
                                          actors::small_message_bytes);
          if (!ctx.from_coordinator() || w.stages.size() != stages_
              || w.generation <= generation_)
            return; // only the job's coordinator wires, and never back
          generation_ = w.generation;
          stages_of_ = std::move(w.stages);
          if (ready_)
            issue(ctx); // a stage was rebuilt: the step starts again
        },
        [this, &ctx](stage_done_msg& d) {
          auto scope = actors::on_message(ctx.probe(), ctx.self(), stage_kind(),
                                          actors::small_message_bytes);
          if (d.stage >= stages_ || !stages_of_[d.stage]
              || caf::actor_cast<caf::actor_addr>(ctx.self()->current_sender())
                     != stages_of_[d.stage].address()
              || d.replica != replica_ || d.generation != generation_
              || d.step != step_ || !ready_ || done_[d.stage])
            return; // not this step's, or not from the stage it names
          done_[d.stage] = true;
          busy_ns_ += d.busy_ns;
          if (d.stage + 1 == stages_)
            loss_ = d.loss.value;
          if (--pending_ > 0)
            return;
          finish(ctx);
        },
    };
  }

  void on_timeout(actors::worker_context& ctx, std::uint64_t seq) override {
    if (!ready_ || seq != issued_)
      return;
    std::string missing;
    for (std::uint32_t s = 0; s < stages_; ++s)
      if (!done_[s])
        missing += (missing.empty() ? "" : ", ") + std::to_string(s);
    ctx.fail("step " + std::to_string(step_) + " of pipeline replica "
             + std::to_string(replica_) + " timed out waiting for stage(s) "
             + missing);
  }

  /// A head's compute and wait are its stages': their time computing and
  /// their idle time within its steps (the pipeline's bubble), summed.
  void add_stats(worker_stats& out) const override {
    out.compute_ns = busy_total_;
    out.wait_ns = idle_total_;
  }

  /// The head's compute() only hands out the batch: the stages compute the
  /// step and report their shares of it to a time model.
  bool computes_step() const noexcept override {
    return false;
  }

  void save(optim::state_writer&, const std::string&) const override {
    // Nothing between steps: the stages fetch again from the shards.
  }
  void load(const optim::state_reader&, const std::string&) override {}

private:
  // Sends the step's micro-batches (again, after a rebuild) and awaits every
  // stage's report.
  void issue(actors::worker_context& ctx) {
    if (stages_of_.size() != stages_)
      return; // not wired yet: the wiring issues it
    auto& head = static_cast<head_replica&>(ctx.replica());
    const auto& x = head.x();
    const auto n = static_cast<std::size_t>(x.cols());
    const auto rows = static_cast<std::size_t>(x.rows());
    const std::size_t m = std::min<std::size_t>(micros_, n);
    done_.assign(stages_, false);
    pending_ = stages_;
    loss_ = 0;
    busy_ns_ = 0;
    started_ = actors::now(ctx.self());
    for (std::size_t i = 0; i < m; ++i) {
      const auto lo = i * n / m;
      const auto hi = (i + 1) * n / m;
      stage_batch_msg first;
      first.replica = replica_;
      first.generation = generation_;
      first.step = step_;
      first.micro = static_cast<std::uint32_t>(i);
      first.samples = static_cast<std::uint32_t>(hi - lo);
      first.scale = real{static_cast<double>(hi - lo) / static_cast<double>(n)};
      auto last = first;
      first.x = tensor{
          std::vector<float>(x.data() + lo * rows, x.data() + hi * rows)};
      if (!head.labels().empty())
        last.labels.assign(head.labels().begin() + lo,
                           head.labels().begin() + hi);
      if (!head.targets().empty())
        last.targets.assign(head.targets().begin() + lo,
                            head.targets().begin() + hi);
      if (stages_ == 1) {
        first.labels = std::move(last.labels);
        first.targets = std::move(last.targets);
      } else {
        ctx.count_sent(stage_kind(), 64 + 4 * (hi - lo));
        ctx.self()->send(stages_of_.back(), std::move(last));
      }
      ctx.count_sent(stage_kind(), 64 + 4 * (hi - lo) * rows);
      ctx.self()->send(stages_of_.front(), std::move(first));
    }
    ctx.schedule_timeout(++issued_);
  }

  void finish(actors::worker_context& ctx) {
    const auto span = actors::nanoseconds_since(ctx.self(), started_);
    // The bubble: the share of the step's span the stages spent idle.
    if (auto* p = ctx.probe(); p && span > 0)
      p->gauge("bubble", 1.0
                             - static_cast<double>(busy_ns_)
                                   / (static_cast<double>(span) * stages_));
    busy_total_ += busy_ns_;
    // Stage-time of the step (span x stages) the stages did not compute.
    const auto stage_span = static_cast<std::uint64_t>(span) * stages_;
    idle_total_ += stage_span > busy_ns_ ? stage_span - busy_ns_ : 0;
    static_cast<head_replica&>(ctx.replica()).set_loss(loss_);
    auto ready = std::move(ready_);
    ready_ = nullptr;
    ready();
  }

  worker_id replica_;
  std::uint32_t stages_;
  std::uint32_t micros_;
  std::uint64_t generation_ = 0;
  std::vector<caf::actor> stages_of_;
  std::function<void()> ready_;
  std::uint64_t step_ = 0;
  std::uint64_t issued_ = 0;
  std::vector<bool> done_;
  std::uint32_t pending_ = 0;
  double loss_ = 0;
  std::uint64_t busy_ns_ = 0;
  std::uint64_t busy_total_ = 0;
  std::uint64_t idle_total_ = 0;
  actors::time_point started_;
};

} // namespace

std::unique_ptr<actors::comm_policy> make_head_policy(worker_id replica,
                                                      std::uint32_t stages,
                                                      std::uint32_t micros) {
  return std::make_unique<head_policy>(replica, stages, micros);
}

} // namespace troupe::algos
