// Two pipeline stage actors driven by a test head: a step runs, and what a
// stranger or a garbled sender sends (a micro-batch not from the head, an
// activation not from the stage before, wrong sizes, an old generation) is
// refused without a reply or a crash; a message ahead of its wiring waits
// for it.

#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "algos/pipeline/stage_actor.hpp"
#include "messages/pipeline.hpp"
#include "optim/pipeline.hpp"
#include "optim/rng.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::messages;

namespace {

constexpr std::uint64_t seed = 3;
const std::string model
    = R"({"layers": [{"type": "dense", "units": 12}, {"type": "relu"},
         {"type": "dense", "units": "classes"}]})";
const optim::shape input{16, 1, 1};

algos::stage_config config(std::uint32_t s,
                           const std::vector<optim::stage_plan>& plan) {
  algos::stage_config c;
  c.replica = 0;
  c.stage = s;
  c.stages = 2;
  c.model = model;
  c.input = input;
  c.classes = 3;
  c.plan = plan[s];
  c.micros = 1;
  c.max_samples = 8;
  c.seed = seed;
  c.request_timeout = caf::duration{std::chrono::seconds{5}};
  return c; // no shards: the stages train nothing, they compute
}

stage_batch_msg batch(std::uint64_t gen, std::uint64_t step, bool first,
                      std::uint32_t samples = 4) {
  stage_batch_msg b;
  b.generation = gen;
  b.step = step;
  b.samples = samples;
  b.scale = real{1.0};
  if (first) {
    optim::rng gen_values{seed + step};
    std::vector<float> x(16 * samples);
    for (auto& v : x)
      v = static_cast<float>(gen_values.uniform());
    b.x = tensor{std::move(x)};
  } else {
    b.labels.assign(samples, 1);
  }
  return b;
}

} // namespace

TEST_CASE("pipeline stages take only what their wiring allows") {
  std::cout << "pipeline stage test seed " << seed << std::endl;
  test::typed_config<> cfg;
  caf::actor_system sys{cfg};
  const auto plan
      = optim::cut_balanced(optim::profile_layers(model, input, 3, 0), 2);
  auto s0 = algos::spawn_stage(sys, config(0, plan));
  auto s1 = algos::spawn_stage(sys, config(1, plan));
  caf::scoped_actor coordinator{sys};
  caf::scoped_actor head{sys};
  caf::scoped_actor stranger{sys};
  auto wire = [&](std::uint64_t gen) {
    stage_wiring_msg w{gen, caf::actor{head}, {s0, s1}};
    coordinator->send(s0, w);
    coordinator->send(s1, w);
  };
  // The head's reports of `step`; how many came within `ms`.
  auto dones = [&](std::uint64_t step, int expected, int ms = 300) {
    int got = 0;
    bool waiting = true;
    while (waiting && got < expected)
      head->receive(
          [&](stage_done_msg& d) {
            CHECK(d.step == step);
            CHECK(d.busy_ns > 0);
            if (d.stage == 1)
              CHECK(std::isfinite(d.loss.value));
            ++got;
          },
          caf::after(std::chrono::milliseconds(ms)) >>
              [&] { waiting = false; });
    return got;
  };
  wire(1);
  head->send(s0, batch(1, 0, true));
  head->send(s1, batch(1, 0, false));
  CHECK(dones(0, 2, 5000) == 2);

  SECTION("a micro-batch from a stranger is refused") {
    stranger->send(s0, batch(1, 1, true));
    stranger->send(s1, batch(1, 1, false));
    CHECK(dones(1, 1) == 0);
  }
  SECTION("an activation not from the stage before is refused") {
    stage_tensor_msg fake{0,
                          1,
                          1,
                          0,
                          false,
                          static_cast<std::uint32_t>(plan[1].in_values),
                          tensor{std::vector<float>(plan[1].in_values * 4)}};
    stranger->send(s1, fake);
    head->send(s1, batch(1, 1, false));
    CHECK(dones(1, 1) == 0); // the last stage waits for its real input
    head->send(s0, batch(1, 1, true));
    CHECK(dones(1, 2, 5000) == 2);
  }
  SECTION("wrong sizes are refused before anything is allocated") {
    auto big = batch(1, 1, true, 9); // more samples than --batch
    head->send(s0, big);
    auto short_x = batch(1, 1, true);
    short_x.x = tensor{std::vector<float>(5)};
    head->send(s0, short_x);
    auto few_labels = batch(1, 1, false);
    few_labels.labels.resize(2);
    head->send(s1, few_labels);
    auto bad_scale = batch(1, 1, false);
    bad_scale.scale = real{std::nan("")};
    head->send(s1, bad_scale);
    CHECK(dones(1, 1) == 0);
    head->send(s0, batch(1, 1, true));
    head->send(s1, batch(1, 1, false));
    CHECK(dones(1, 2, 5000) == 2);
  }
  SECTION("a rewired replica drops the old generation; a message ahead of "
          "its wiring waits for it") {
    wire(2);
    head->send(s0, batch(1, 1, true)); // the old generation
    head->send(s1, batch(1, 1, false));
    CHECK(dones(1, 1) == 0);
    head->send(s0, batch(3, 1, true)); // before its wiring
    head->send(s1, batch(3, 1, false));
    CHECK(dones(1, 1) == 0);
    wire(3);
    CHECK(dones(1, 2, 5000) == 2);
  }
  coordinator->send_exit(s0, caf::exit_reason::user_shutdown);
  coordinator->send_exit(s1, caf::exit_reason::user_shutdown);
}

TEST_CASE("a stage obeys only its coordinator's node") {
  test::typed_config<> cfg;
  caf::actor_system sys{cfg};
  const auto plan
      = optim::cut_balanced(optim::profile_layers(model, input, 3, 0), 2);
  // Its coordinator is on another node: this process's wiring is refused.
  auto elsewhere
      = caf::make_node_id(4242, "0123456789abcdef0123456789abcdef01234567");
  REQUIRE(elsewhere);
  auto c0 = config(0, plan);
  auto c1 = config(1, plan);
  c0.owner = c1.owner = *elsewhere;
  auto s0 = algos::spawn_stage(sys, c0);
  auto s1 = algos::spawn_stage(sys, c1);
  caf::scoped_actor impostor{sys};
  caf::scoped_actor head{sys};
  stage_wiring_msg w{1, caf::actor{head}, {s0, s1}};
  impostor->send(s0, w);
  impostor->send(s1, w);
  head->send(s0, batch(1, 0, true));
  head->send(s1, batch(1, 0, false));
  bool reported = false;
  head->receive([&](stage_done_msg&) { reported = true; },
                caf::after(std::chrono::milliseconds(500)) >> [] {});
  CHECK_FALSE(reported);
  impostor->send_exit(s0, caf::exit_reason::user_shutdown);
  impostor->send_exit(s1, caf::exit_reason::user_shutdown);
}
