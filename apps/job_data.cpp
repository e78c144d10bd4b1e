#include "apps/job_data.hpp"

#include <mutex>
#include <numeric>

#include "actors/detail/log.hpp"
#include "apps/cli.hpp"
#include "apps/data_source.hpp"
#include "optim/data_dir_replica.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

bool reads_sharded(const train_options& o) {
  const auto& algo = o.algorithm_ref();
  return optim::is_data_dir(o.data)
         && algo.run_by() == algos::runner::coordinator
         && algo.layout() == algos::data_layout::parts && o.train_examples == 0;
}

job_data load_job_data(const train_options& o) {
  job_data out;
  if (!reads_sharded(o)) {
    out.sets = load_data(o.data, o.seed, o.label_column);
    if (o.standardize)
      out.scaling = standardize_data(o.data, out.sets);
    if (optim::is_data_dir(o.data))
      out.note
          = "troupe train: --algo=" + o.algo
            + (o.train_examples > 0 ? " with --train-examples" : std::string{})
            + " loads the data directory " + o.data
            + " whole (each worker reads only its files with the "
              "algorithms whose workers train on parts of their own)";
    return out;
  }
  auto s = std::make_shared<optim::data_dir_summary>(
      optim::summarize_data_dir(o.data, o.label_column));
  std::vector<std::size_t> all(s->train.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  out.sets.train = optim::load_data_range(
      *s, all, 0, optim::calibration_examples, o.standardize);
  out.sets.test.name = s->dir + "/test";
  out.sets.test.sample_shape = out.sets.train.sample_shape;
  out.sets.test.classes = out.sets.train.classes;
  if (o.standardize)
    out.scaling = s->columns;
  out.dir = std::move(s);
  return out;
}

std::function<const optim::dataset&()> take_test_set(job_data& d) {
  if (!d.dir) {
    auto whole = std::make_shared<const optim::dataset>(std::move(d.sets.test));
    d.sets.test = {};
    return [whole]() -> const optim::dataset& { return *whole; };
  }
  struct lazy {
    std::once_flag once;
    optim::dataset test;
  };
  auto l = std::make_shared<lazy>();
  auto dir = d.dir;
  bool scaled = !d.scaling.means.empty();
  return [l, dir, scaled]() -> const optim::dataset& {
    std::call_once(
        l->once, [&] { l->test = optim::load_all_files(*dir, true, scaled); });
    return l->test;
  };
}

void shard_by_files(const train_options& o, const job_data& d,
                    actors::job_config& job) {
  auto workers = static_cast<std::size_t>(o.workers);
  if (d.dir->train.size() < workers)
    throw usage_error("troupe train: --workers=" + std::to_string(workers)
                      + ": " + d.dir->dir + "/train has "
                      + std::to_string(d.dir->train.size())
                      + " files and each worker reads whole files; give it "
                        "at least as many files as workers");
  optim::data_dir_part part;
  part.summary = d.dir;
  part.workers = workers;
  part.standardize = o.standardize;
  auto model = o.model;
  auto batch = o.batch;
  auto seed = o.seed;
  job.make_replica
      = [=](messages::worker_id w) -> std::unique_ptr<optim::replica> {
    auto mine = part;
    mine.worker = w;
    auto r = std::make_unique<optim::data_dir_replica>(
        mine, model, batch, seed + 7919 * (w + 1), seed);
    actors::detail::log().info(
        "worker {} reads {} examples from {} files of {}/train", w,
        r->examples(), optim::worker_files(*mine.summary, w, workers).size(),
        mine.summary->dir);
    return r;
  };
  job.adopt_data = [](optim::replica& r, messages::worker_id lost,
                      std::uint32_t k, std::uint32_t m) {
    auto* mine = dynamic_cast<optim::data_dir_replica*>(&r);
    return mine ? mine->adopt(lost, k, m) : std::size_t{0};
  };
  job.make_joined_replica = nullptr;
}

} // namespace troupe::apps
