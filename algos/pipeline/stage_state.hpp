// The state of a pipeline stage's actor (stage_actor.cpp): its layers, the
// step under way and its micro-batches' inputs, and its shards' versions.

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/clock.hpp"
#include "actors/probe.hpp"
#include "algos/pipeline/stage_actor.hpp"
#include "messages/pipeline.hpp"
#include "optim/pipeline_stage.hpp"

namespace troupe::algos {

struct stage_state {
  struct target {
    std::vector<std::int32_t> labels;
    std::vector<float> values;
    double scale = 1;
    std::uint32_t samples = 0;
  };

  caf::event_based_actor* self = nullptr;
  stage_config cfg;
  std::unique_ptr<optim::pipeline_stage<float>> stage;
  bool regression = false;
  std::size_t in_rows = 0;
  std::size_t out_rows = 0;
  std::vector<std::uint64_t> versions; // per shard, at the last fetch
  std::uint64_t generation = 0;        // 0: not wired yet
  caf::actor head, prev, next;
  // The step under way.
  bool in_step = false;
  bool finishing = false;
  bool fetching = false;                  // the step waits for a fetch
  bool async_fetch = false;               // 1F1B: a fetch in flight
  std::optional<std::uint64_t> last_done; // the last step reported
  std::uint64_t step = 0;
  std::vector<optim::pipe_op> order;
  std::size_t pos = 0;
  std::map<std::uint32_t, optim::matrix<float>> fwd, bwd;
  std::map<std::uint32_t, target> targets;
  std::uint32_t step_samples = 0;
  double loss = 0;
  actors::time_point began;
  std::optional<actors::time_point> last_end;
  std::uint64_t busy = 0;
  stage_figures fig;
  actors::probe_ref probe;
  optim::matrix<float> din;

  bool first() const {
    return cfg.stage == 0;
  }
  bool last() const {
    return cfg.stage + 1 == cfg.stages;
  }
  bool one_f_one_b() const {
    return cfg.schedule == optim::pipeline_schedule::one_f_one_b;
  }
  std::string who() const {
    return "pipeline stage " + std::to_string(cfg.stage) + " of replica "
           + std::to_string(cfg.replica);
  }
  // -- messages -------------------------------------------------------------

  /// A micro-batch from `from`: checked (sender, sizes) and kept for its
  /// pass; one of a newer generation than the stage's wiring waits for it
  /// (the coordinator's wiring and the head's first message take different
  /// paths), a few at most.
  void take(messages::stage_batch_msg& b, const caf::actor_addr& from);

  /// An activation (from the stage before) or a gradient (from the one
  /// after), as take() above.
  void take(messages::stage_tensor_msg& t, const caf::actor_addr& from);

  /// Whether a message of generation `g` waits for its wiring (kept) or
  /// is of no generation to come (false: dropped).
  bool early(std::uint64_t g) const {
    return g > generation
           && early_batches.size() + early_tensors.size()
                  < 2 * std::size_t{cfg.micros} + 2;
  }

  std::vector<std::pair<caf::actor_addr, messages::stage_batch_msg>>
      early_batches;
  std::vector<std::pair<caf::actor_addr, messages::stage_tensor_msg>>
      early_tensors;

  /// Ends the stage with `why` (the run rebuilds it).
  void fail(const std::string& why);

  // -- the shards -------------------------------------------------------------

  /// Fetches the stage's slice from its shards (bumping the weights'
  /// version), then calls `done`; fails the stage on an error.
  void fetch(std::function<void()> done);

  /// Pushes grad_sum() to the stage's shards as sequence number `seq` (a
  /// step's or a micro-batch's: a step run again after a rebuild pushes
  /// what the shards drop as duplicates) and clears it.
  void push(std::uint64_t seq, std::uint32_t samples);

  // -- the step ---------------------------------------------------------------

  // Takes a message of step `k`: false if it belongs to no step this stage
  // runs now (dropped).
  bool enter(std::uint64_t k);

  /// Runs the stage's passes in stage_order while their inputs are here.
  void advance();

  /// Micro-batch m's forward (the last stage: its loss and backward too);
  /// false if its input has not arrived.
  bool forward(std::uint32_t m);

  /// Micro-batch m's backward; false if its gradient has not arrived.
  bool backward(std::uint32_t m);

  /// Sends din (micro-batch m's input gradient) to the previous stage.
  void send_back(std::uint32_t m);

  /// 1F1B: micro-batch m's share is pushed as soon as its backward ends,
  /// and the weights move under the micro-batches in flight: the next fetch
  /// is sent as soon as the last one answered.
  void push_micro(std::uint32_t m, std::uint32_t samples);

  /// The step's passes are done: pushes (GPipe), waits until the shards
  /// confirm every push, then reports to the head.
  void finish();

  // -- wiring ---------------------------------------------------------------

  /// The coordinator's wiring of a new generation: what was in flight is
  /// dropped.
  void rewire(messages::stage_wiring_msg& w);
};

} // namespace troupe::algos
