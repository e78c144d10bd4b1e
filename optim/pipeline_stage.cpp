#include "optim/pipeline_stage.hpp"

#include <algorithm>
#include <stdexcept>

#include "optim/check.hpp"
#include "optim/rng.hpp"

namespace troupe::optim {

const char* to_string(pipeline_schedule s) noexcept {
  return s == pipeline_schedule::gpipe ? "gpipe" : "1f1b";
}

pipeline_schedule parse_pipeline_schedule(const std::string& name) {
  if (name == "gpipe")
    return pipeline_schedule::gpipe;
  if (name == "1f1b")
    return pipeline_schedule::one_f_one_b;
  throw std::invalid_argument("unknown pipeline schedule \"" + name
                              + "\"; use gpipe or 1f1b");
}

std::vector<pipe_op> stage_order(pipeline_schedule sched, std::size_t s,
                                 std::size_t stages, std::size_t micros) {
  TROUPE_CHECK(s < stages, "stage_order: stage out of range");
  std::vector<pipe_op> out;
  out.reserve(2 * micros);
  // The last stage computes the loss: each backward follows its forward.
  // GPipe's other stages run every forward first; 1F1B's warm up with
  // S - s - 1 forwards and then alternate.
  const std::size_t warm = s + 1 == stages ? 0
                           : sched == pipeline_schedule::gpipe
                               ? micros
                               : std::min(stages - s - 1, micros);
  std::size_t f = 0;
  std::size_t b = 0;
  for (; f < warm; ++f)
    out.push_back(pipe_op{true, f});
  for (; f < micros; ++f, ++b) {
    out.push_back(pipe_op{true, f});
    out.push_back(pipe_op{false, b});
  }
  for (; b < micros; ++b)
    out.push_back(pipe_op{false, b});
  return out;
}

template <class T>
pipeline_stage<T>::pipeline_stage(sequential<T> model, bool stash,
                                  std::uint64_t noise_seed)
    : model_(std::move(model)), stash_(stash), noise_seed_(noise_seed),
      grad_sum_(model_.size(), T{0}) {
  // nop
}

template <class T>
void pipeline_stage<T>::seed(std::uint64_t micro) {
  // Dropout's masks depend on the micro-batch only, so that a recomputed
  // forward draws the same ones.
  rng gen{noise_seed_ ^ (micro * 0x9e3779b97f4a7c15ull)};
  model_.seed_noise(gen.next());
}

template <class T>
void pipeline_stage<T>::accumulate() {
  const T* g = model_.grads();
  for (std::size_t i = 0; i < grad_sum_.size(); ++i)
    grad_sum_[i] += g[i];
}

template <class T>
void pipeline_stage<T>::clear_grads() {
  std::fill(grad_sum_.begin(), grad_sum_.end(), T{0});
}

template <class T>
void pipeline_stage<T>::release(std::uint64_t version) {
  auto it = stashed_.find(version);
  if (it != stashed_.end() && --it->second.second == 0)
    stashed_.erase(it);
}

template <class T>
const matrix<T>& pipeline_stage<T>::forward(std::uint64_t micro,
                                            const matrix<T>& x) {
  TROUPE_CHECK(!model_.ends_model(),
               "pipeline_stage: forward() on the last stage");
  if (flights_.count(micro) > 0)
    throw std::invalid_argument("pipeline stage: micro-batch "
                                + std::to_string(micro)
                                + " is already in flight");
  seed(micro);
  const auto& out = model_.forward_training(x);
  flights_.emplace(micro, flight{x, version_});
  if (stash_) {
    auto& entry = stashed_[version_];
    if (entry.second++ == 0)
      entry.first.assign(model_.params(), model_.params() + model_.size());
  }
  have_last_ = true;
  last_micro_ = micro;
  last_version_ = version_;
  forward_version_ = version_;
  return out;
}

template <class T>
T pipeline_stage<T>::forward_backward(std::uint64_t micro, const matrix<T>& x,
                                      batch_targets targets, T scale,
                                      matrix<T>* din) {
  seed(micro);
  const T loss = model_.loss_and_gradient(x, targets, din, scale);
  accumulate();
  have_last_ = false;
  forward_version_ = backward_version_ = version_;
  return loss;
}

template <class T>
void pipeline_stage<T>::backward(std::uint64_t micro, const matrix<T>& dout,
                                 matrix<T>* din) {
  auto it = flights_.find(micro);
  if (it == flights_.end())
    throw std::invalid_argument("pipeline stage: a gradient for micro-batch "
                                + std::to_string(micro)
                                + ", which is not in flight");
  auto& f = it->second;
  if (static_cast<std::size_t>(dout.rows()) != model_.output_shape().size()
      || dout.cols() != f.input.cols())
    throw std::invalid_argument(
        "pipeline stage: an output gradient of " + std::to_string(dout.rows())
        + " x " + std::to_string(dout.cols()) + " for outputs of "
        + std::to_string(model_.output_shape().size()) + " x "
        + std::to_string(f.input.cols()));
  const bool swap = stash_ && f.version != version_;
  const std::uint64_t used = stash_ ? f.version : version_;
  if (swap) {
    const auto& w = stashed_.at(f.version).first;
    current_.assign(model_.params(), model_.params() + model_.size());
    std::copy(w.begin(), w.end(), model_.params());
  }
  if (!(have_last_ && last_micro_ == micro && last_version_ == used)) {
    seed(micro);
    model_.forward_training(f.input);
    ++recomputed_;
  }
  model_.backward(f.input, dout, din);
  if (swap)
    std::copy(current_.begin(), current_.end(), model_.params());
  accumulate();
  have_last_ = false;
  forward_version_ = f.version;
  backward_version_ = used;
  if (stash_)
    release(f.version);
  flights_.erase(it);
}

template <class T>
void pipeline_stage<T>::drop_in_flight() {
  flights_.clear();
  stashed_.clear();
  have_last_ = false;
}

template <class T>
std::vector<T> run_pipeline(std::vector<pipeline_stage<T>>& stages,
                            pipeline_schedule sched, std::size_t micros,
                            const pipeline_feed<T>& feed) {
  const std::size_t n = stages.size();
  TROUPE_CHECK(n > 0, "run_pipeline: no stages");
  std::vector<std::vector<pipe_op>> orders;
  for (std::size_t s = 0; s < n; ++s)
    orders.push_back(stage_order(sched, s, n, micros));
  std::vector<std::size_t> pos(n, 0);
  // acts[s][m]: stage s's input for micro-batch m (s >= 1);
  // grads[s][m]: the gradient of stage s's output (s < n - 1).
  std::vector<std::map<std::size_t, matrix<T>>> acts(n);
  std::vector<std::map<std::size_t, matrix<T>>> grads(n);
  std::vector<T> losses(micros, T{0});
  matrix<T> din;
  for (;;) {
    bool progress = false;
    bool done = true;
    for (std::size_t s = 0; s < n; ++s) {
      const bool last = s + 1 == n;
      for (; pos[s] < orders[s].size(); ++pos[s]) {
        const auto op = orders[s][pos[s]];
        if (op.forward) {
          if (s > 0 && acts[s].count(op.micro) == 0)
            break;
          const matrix<T>& x
              = s == 0 ? feed.input(op.micro) : acts[s].at(op.micro);
          if (last) {
            losses[op.micro] = stages[s].forward_backward(
                op.micro, x, feed.targets(op.micro), feed.scale(op.micro),
                s > 0 ? &din : nullptr);
            if (s > 0)
              grads[s - 1][op.micro] = din;
          } else {
            acts[s + 1][op.micro] = stages[s].forward(op.micro, x);
          }
          if (s > 0)
            acts[s].erase(op.micro);
        } else {
          if (!last) {
            auto g = grads[s].find(op.micro);
            if (g == grads[s].end())
              break;
            stages[s].backward(op.micro, g->second, s > 0 ? &din : nullptr);
            if (s > 0)
              grads[s - 1][op.micro] = din;
            grads[s].erase(g);
          }
          if (sched == pipeline_schedule::one_f_one_b)
            feed.update(s);
        }
        progress = true;
      }
      done = done && pos[s] == orders[s].size();
    }
    if (done)
      break;
    TROUPE_CHECK(progress, "run_pipeline: the schedule deadlocked");
  }
  if (sched == pipeline_schedule::gpipe)
    for (std::size_t s = 0; s < n; ++s)
      feed.update(s);
  return losses;
}

template class pipeline_stage<float>;
template class pipeline_stage<double>;
template std::vector<float> run_pipeline(std::vector<pipeline_stage<float>>&,
                                         pipeline_schedule, std::size_t,
                                         const pipeline_feed<float>&);
template std::vector<double> run_pipeline(std::vector<pipeline_stage<double>>&,
                                          pipeline_schedule, std::size_t,
                                          const pipeline_feed<double>&);

} // namespace troupe::optim
