#include "apps/durable.hpp"

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "optim/checkpoint_dir.hpp"
#include "optim/dataset.hpp"
#include "optim/quote.hpp"

namespace troupe::apps {

namespace {

/// Flags a resumed run may change: they do not change what is computed.
bool may_change(const std::string& key) {
  return key == "max_seconds" || key == "threads" || key == "request_timeout"
         || key == "target_accuracy" || key == "eval_every"
         || key == "shard_replicas";
}

std::string flag_of(std::string key) {
  for (auto& c : key)
    if (c == '_')
      c = '-';
  return key;
}

} // namespace

bool checkpoint_plan::due(std::uint64_t steps, std::uint64_t last_steps,
                          double seconds) const noexcept {
  if (!enabled() || steps == last_steps)
    return false;
  if (every_steps > 0)
    return steps / every_steps != last_steps / every_steps;
  return seconds >= every_seconds;
}

checkpoint_plan checkpoint_flags(const train_options& o) {
  checkpoint_plan plan;
  plan.dir = o.checkpoint_dir.empty() ? o.resume : o.checkpoint_dir;
  auto given = [&](const char* flag) { return o.given.count(flag) > 0; };
  if (plan.dir.empty()) {
    for (const auto* flag : {"checkpoint-every", "keep"})
      if (given(flag))
        throw usage_error(std::string{"troupe train: --"} + flag
                          + " needs --checkpoint-dir=DIR");
    return plan;
  }
  if (o.keep == 0)
    throw usage_error("troupe train: --keep must be at least 1");
  plan.keep = o.keep;
  const auto& text = o.checkpoint_every;
  auto bad = [&] {
    return usage_error("troupe train: --checkpoint-every=" + optim::quote(text)
                       + " is neither a number of steps (500) nor a duration "
                         "(30s, 5m, 1h)");
  };
  if (text.empty())
    throw bad();
  char* end = nullptr;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    if (text.size() > 15)
      throw bad();
    plan.every_steps = std::strtoull(text.c_str(), &end, 10);
    if (plan.every_steps == 0)
      throw usage_error("troupe train: --checkpoint-every must be at least 1 "
                        "step");
    return plan;
  }
  auto x = std::strtod(text.c_str(), &end);
  std::string unit = end ? std::string{end} : "";
  double scale = unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (end == text.c_str() || scale == 0 || !std::isfinite(x))
    throw bad();
  plan.every_seconds = x * scale;
  if (!(plan.every_seconds >= 0.1) || plan.every_seconds > 1e9)
    throw usage_error("troupe train: --checkpoint-every must be between 0.1 s "
                      "and 10^9 s");
  return plan;
}

std::string checkpoint_job(const train_options& o) {
  return to_spec(o);
}

void attach_checkpoints(const train_options& o, actors::job_config& job) {
  auto plan = checkpoint_flags(o);
  if (plan.enabled()) {
    auto spec = checkpoint_job(o);
    auto every = o.checkpoint_every;
    job.checkpoints.write = [spec, every, plan](std::uint64_t steps,
                                                const actors::resume_point& s) {
      optim::checkpoint_content c;
      c.step = steps;
      c.job = spec;
      c.info = nlohmann::json{{"progress", s.progress},
                              {"checkpoint_every", every},
                              {"keep", plan.keep}}
                   .dump();
      c.files = s.files;
      return optim::write_checkpoint(plan.dir, c, plan.keep);
    };
    job.checkpoints.every_steps = plan.every_steps;
    job.checkpoints.every_seconds = plan.every_seconds;
  }
  if (o.resumed) {
    auto r = std::make_shared<actors::resume_point>();
    r->path = o.resumed->path;
    r->files = o.resumed->files;
    auto info = nlohmann::json::parse(o.resumed->info, nullptr, false);
    if (!info.is_object() || !info.contains("progress"))
      throw optim::data_error(o.resumed->path
                              + ": the manifest's info has no progress");
    r->progress = info["progress"];
    for (std::uint64_t i = 0; i < job.shards; ++i)
      if (!r->files.count("shard-" + std::to_string(i) + ".state"))
        throw optim::data_error(o.resumed->path + ": no shard-"
                                + std::to_string(i) + ".state");
    for (std::uint64_t w = 0; w < job.workers; ++w)
      if (!r->files.count("worker-" + std::to_string(w) + ".state"))
        throw optim::data_error(o.resumed->path + ": no worker-"
                                + std::to_string(w) + ".state");
    job.resume = r;
  }
}

void apply_resume(train_options& o) {
  if (o.resume.empty())
    return;
  if (!o.init.empty())
    throw usage_error("troupe train: --init and --resume both say where the "
                      "run starts; give one");
  std::vector<std::string> skipped;
  std::optional<optim::checkpoint> ck;
  try {
    ck = optim::latest_checkpoint(o.resume, &skipped);
  } catch (const optim::data_error& e) {
    throw usage_error(std::string{"troupe train: --resume: "} + e.what());
  }
  if (!ck) {
    std::string why;
    for (const auto& s : skipped)
      why += "\n  skipped " + s;
    throw usage_error("troupe train: --resume=" + o.resume
                      + ": no complete checkpoint there" + why);
  }
  // A newer checkpoint that could not be read is named: the run goes on
  // from an older one, and what it learned since is not in it.
  for (const auto& s : skipped)
    std::cerr << "troupe train: --resume: skipped a newer checkpoint: " << s
              << "\n";
  train_options theirs;
  nlohmann::json job;
  try {
    theirs = from_spec(ck->job);
    job = nlohmann::json::parse(ck->job);
  } catch (const std::exception& e) {
    throw usage_error("troupe train: --resume: " + ck->path
                      + ": its job is unreadable: " + e.what());
  }
  // Given flags must agree with the checkpoint's job.
  auto mine = nlohmann::json::parse(to_spec(o));
  if (o.given.count("algo") && o.algo != theirs.algo)
    throw usage_error("troupe train: --resume: " + ck->path
                      + " is a job of --algo=" + theirs.algo + ", not "
                      + o.algo);
  std::string diff;
  if (!o.given.count("algo") || theirs.algo == o.algo)
    for (const auto& [key, value] : job.items()) {
      if (key == "algo" || may_change(key) || !o.given.count(flag_of(key))
          || !mine.contains(key) || mine[key] == value)
        continue;
      diff += "\n  --" + flag_of(key) + "=" + mine[key].dump() + " here, "
              + value.dump() + " in the checkpoint";
    }
  if (!diff.empty())
    throw usage_error("troupe train: --resume: the checkpoint at step "
                      + std::to_string(ck->step) + " (" + ck->path
                      + ") is of another job:" + diff
                      + "\n  (leave those flags out to continue it as it was)");
  // Take the checkpoint's job, keeping the flags a resume may change.
  auto kept = static_cast<algos::job_options>(o);
  static_cast<algos::job_options&>(o) = theirs;
  if (o.given.count("max-seconds"))
    o.max_seconds = kept.max_seconds;
  if (o.given.count("threads"))
    o.threads = kept.threads;
  if (o.given.count("request-timeout"))
    o.request_timeout = kept.request_timeout;
  if (o.given.count("target-accuracy"))
    o.target_accuracy = kept.target_accuracy;
  if (o.given.count("eval-every"))
    o.eval_every = kept.eval_every;
  if (o.given.count("shard-replicas"))
    o.shard_replicas = kept.shard_replicas;
  // And how it was checkpointed, unless told otherwise.
  auto info = nlohmann::json::parse(ck->info, nullptr, false);
  if (info.is_object()) {
    if (!o.given.count("checkpoint-every") && info.contains("checkpoint_every")
        && info["checkpoint_every"].is_string())
      o.checkpoint_every = info["checkpoint_every"].get<std::string>();
    if (!o.given.count("keep") && info.contains("keep")
        && info["keep"].is_number_unsigned())
      o.keep = info["keep"].get<std::uint64_t>();
  }
  o.algo = theirs.algo;
  o.algorithm = theirs.algorithm;
  o.resumed = std::make_shared<const optim::checkpoint>(std::move(*ck));
}

} // namespace troupe::apps
