// troupe train --algo=sgd: one worker, no actors, the plain training loop.

#include "apps/single_train.hpp"

#include <chrono>
#include <numeric>

#include "apps/cluster_train.hpp"
#include "apps/durable.hpp"
#include "optim/model_spec.hpp"
#include "optim/param_hash.hpp"
#include "optim/state_file.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

} // namespace

nlohmann::json run_single(const train_options& o, optim::train_test& data,
                          progress& bar) {
  auto& train = data.train;
  auto model = initial_model(o, train);
  std::size_t n = train.size();
  if (o.train_examples > 0)
    n = std::min<std::size_t>(n, o.train_examples);
  std::vector<std::size_t> indices(n);
  std::iota(indices.begin(), indices.end(), std::size_t{0});
  auto steps_per_epoch = (n + o.batch - 1) / o.batch;
  auto epoch_steps = [&](double epochs) {
    return static_cast<std::size_t>(
        std::llround(epochs * static_cast<double>(steps_per_epoch)));
  };
  auto total_steps = std::max<std::size_t>(epoch_steps(o.epochs), 1);
  if (o.max_steps > 0)
    total_steps = std::min<std::size_t>(total_steps, o.max_steps);
  optim::schedule_options sched;
  sched.name = o.schedule;
  sched.base_lr = o.lr;
  sched.gamma = o.lr_decay;
  sched.step_size = std::max<std::size_t>(epoch_steps(o.lr_step_epochs), 1);
  sched.total_steps = total_steps;
  sched.warmup_steps = epoch_steps(o.warmup_epochs);
  optim::optimizer_options opt;
  opt.name = o.optimizer;
  opt.momentum = o.momentum;
  opt.weight_decay = o.weight_decay;
  for (const auto& l : model.ranges().ranges())
    opt.layers.push_back(l.size);
  optim::local_trainer trainer{model,   train, std::move(indices),
                               o.batch, opt,   optim::schedule{sched},
                               o.seed};
  auto eval_steps = std::max<std::size_t>(epoch_steps(o.eval_every), 1);

  bar.message("troupe train: " + optim::model_label(o.model) + " on "
              + train.name + " (" + std::to_string(n) + " examples, "
              + std::to_string(model.size()) + " parameters), "
              + std::to_string(total_steps) + " steps of batch "
              + std::to_string(o.batch) + ", seed " + std::to_string(o.seed));
  auto evaluations = nlohmann::json::array();
  double train_seconds = 0, eval_seconds = 0, smooth_loss = 0, last_loss = 0;
  std::size_t samples = 0;
  optim::evaluation last_eval;
  bool evaluated_final = false, reached = false;
  nlohmann::json seconds_to_target = nullptr;
  // The parameters of the last evaluation: restored if training diverges, so
  // nothing already learned is lost.
  optim::flat_storage<float> good(model.params(),
                                  model.params() + model.size());
  std::string error;
  auto t0 = clock_type::now();
  // Checkpoints: the trainer (parameters, optimizer, data position), the
  // loop's figures and the evaluation curve; a resumed run continues them.
  auto plan = checkpoint_flags(o);
  const std::string state_file = "worker-0.state";
  if (o.resumed) {
    const auto& ck = *o.resumed;
    auto it = ck.files.find(state_file);
    if (it == ck.files.end())
      throw optim::data_error(ck.path + ": no " + state_file);
    optim::state_reader r{it->second, ck.path + "/" + state_file};
    trainer.load(r, "trainer.");
    r.f32("good", good.data(), good.size());
    samples = r.u64_scalar("loop.samples");
    train_seconds = r.f64_scalar("loop.train_seconds");
    eval_seconds = r.f64_scalar("loop.eval_seconds");
    smooth_loss = r.f64_scalar("loop.smooth_loss");
    last_loss = r.f64_scalar("loop.last_loss");
    last_eval.accuracy = r.f64_scalar("loop.eval_accuracy");
    last_eval.loss = r.f64_scalar("loop.eval_loss");
    auto info = nlohmann::json::parse(ck.info);
    evaluations = info.at("evaluations");
    t0 -= std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(info.at("seconds").get<double>()));
    bar.message("troupe train: resumed from " + ck.path + " at step "
                + std::to_string(trainer.steps()));
  }
  const auto run_start = clock_type::now();
  std::uint64_t checkpointed = trainer.steps();
  auto last_checkpoint = clock_type::now();
  nlohmann::json checkpoints = nlohmann::json::array();
  auto write_checkpoint = [&] {
    auto t_write = clock_type::now();
    optim::state_writer w;
    trainer.save(w, "trainer.");
    w.put("good", good.data(), good.size());
    w.put_u64("loop.samples", samples);
    w.put_f64("loop.train_seconds", train_seconds);
    w.put_f64("loop.eval_seconds", eval_seconds);
    w.put_f64("loop.smooth_loss", smooth_loss);
    w.put_f64("loop.last_loss", last_loss);
    w.put_f64("loop.eval_accuracy", last_eval.accuracy);
    w.put_f64("loop.eval_loss", last_eval.loss);
    optim::checkpoint_content c;
    c.step = trainer.steps();
    c.job = checkpoint_job(o);
    c.info = nlohmann::json{{"evaluations", evaluations},
                            {"seconds", seconds_since(t0)},
                            {"checkpoint_every", o.checkpoint_every},
                            {"keep", plan.keep}}
                 .dump();
    c.files[state_file] = w.encode();
    auto path = optim::write_checkpoint(plan.dir, c, plan.keep);
    checkpointed = trainer.steps();
    last_checkpoint = clock_type::now();
    checkpoints.push_back({{"steps", c.step},
                           {"path", path},
                           {"bytes", c.files[state_file].size()},
                           {"write_seconds", seconds_since(t_write)}});
  };
  auto state = [&] {
    progress_state s;
    s.step = trainer.steps();
    s.fraction = static_cast<double>(s.step) / static_cast<double>(total_steps);
    s.epoch
        = static_cast<double>(s.step) / static_cast<double>(steps_per_epoch);
    s.loss = smooth_loss;
    s.accuracy = evaluations.empty() ? -1 : last_eval.accuracy;
    s.samples_per_sec = train_seconds > 0 ? samples / train_seconds : 0;
    s.elapsed = seconds_since(t0);
    return s;
  };
  std::string stop_reason = "steps done";
  // --monitor and --report: the recorder takes the one worker's steps and
  // the evaluations from this loop.
  auto watch = open_monitoring(o, bar);
  while (trainer.steps() < total_steps) {
    // This run's time: a resumed run's clock (t0) includes the time before
    // its checkpoint, --max-seconds does not (as with the actor jobs).
    if (o.max_seconds > 0 && seconds_since(run_start) >= o.max_seconds) {
      stop_reason = "time limit";
      break;
    }
    if (o.stop && o.stop->requested()) {
      stop_reason = o.stop->reason();
      break;
    }
    auto t_step = clock_type::now();
    optim::step_result r;
    try {
      r = trainer.step();
    } catch (const std::domain_error& e) {
      error = e.what();
      std::copy(good.begin(), good.end(), model.params());
      bar.message("troupe train: " + error
                  + "; restored the parameters of the last evaluation");
      evaluated_final = false;
      stop_reason = "diverged";
      break;
    }
    train_seconds += seconds_since(t_step);
    samples += r.samples;
    last_loss = r.loss;
    smooth_loss
        = trainer.steps() == 1 ? r.loss : 0.98 * smooth_loss + 0.02 * r.loss;
    evaluated_final = false;
    if (watch.monitor)
      watch.monitor->on_step(
          {0, trainer.steps(), r.samples, r.loss, seconds_since(t0)});
    if (trainer.steps() % eval_steps == 0 || trainer.steps() == total_steps) {
      auto t_eval = clock_type::now();
      optim::calibrate(model, data.train, optim::calibration_examples, o.batch);
      last_eval = optim::evaluate(model, data.test, o.batch);
      eval_seconds += seconds_since(t_eval);
      evaluated_final = true;
      std::copy(model.params(), model.params() + model.size(), good.begin());
      auto elapsed = seconds_since(t0);
      if (watch.monitor)
        watch.monitor->on_evaluation(
            {trainer.steps(), static_cast<std::uint64_t>(samples), elapsed,
             last_eval.accuracy, last_eval.loss});
      evaluations.push_back({{"step", trainer.steps()},
                             {"epoch", state().epoch},
                             {"seconds", elapsed},
                             {"train_seconds", train_seconds},
                             {"test_accuracy", last_eval.accuracy},
                             {"test_loss", last_eval.loss}});
      bar.update(state(), true);
      if (o.target_accuracy > 0 && last_eval.accuracy >= o.target_accuracy) {
        reached = true;
        seconds_to_target = elapsed;
        stop_reason = "target accuracy";
        break;
      }
    } else {
      bar.update(state());
    }
    if (plan.due(trainer.steps(), checkpointed, seconds_since(last_checkpoint)))
      write_checkpoint();
  }
  // The state at the end (stopped, time limit, done) is kept too, unless
  // training diverged (the last checkpoint is the one to go back to).
  if (plan.enabled() && error.empty() && trainer.steps() != checkpointed)
    write_checkpoint();
  if (!evaluated_final) {
    auto t_eval = clock_type::now();
    optim::calibrate(model, data.train, optim::calibration_examples, o.batch);
    last_eval = optim::evaluate(model, data.test, o.batch);
    eval_seconds += seconds_since(t_eval);
  }
  auto seconds = seconds_since(t0);
  bar.finish(state());
  if (o.on_final_params)
    o.on_final_params(model.params(), model.size());
  nlohmann::json result{
      {"parameters", model.size()},
      {"test_accuracy", last_eval.accuracy},
      {"test_loss", last_eval.loss},
      {"train_loss", last_loss},
      {"reached_target", reached},
      {"seconds_to_target", seconds_to_target},
      {"seconds", seconds},
      {"train_seconds", train_seconds},
      {"eval_seconds", eval_seconds},
      {"samples", samples},
      {"samples_per_sec", train_seconds > 0 ? samples / train_seconds : 0.0},
      {"steps", trainer.steps()},
      {"epochs", static_cast<double>(trainer.steps())
                     / static_cast<double>(steps_per_epoch)},
      {"messages", 0},
      {"bytes_sent", 0},
      {"param_hash", optim::hash_params(model.params(), model.size())},
      {"evaluations", evaluations},
      {"stop_reason", stop_reason},
  };
  if (!error.empty())
    result["error"] = error;
  if (plan.enabled())
    result["checkpoints"] = checkpoints;
  if (o.resumed)
    result["resumed_from"]
        = {{"path", o.resumed->path}, {"steps", o.resumed->step}};
  finish_monitoring(o, watch, result, bar);
  return result;
}

} // namespace troupe::apps
