// The evaluator's mean of the workers' models (SGP, DS-Sync, ShadowSync) is
// summed in the workers' order, whatever order their answers arrive in: the
// same models give the same mean, bit for bit, and so the same param_hash.

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "actors/evaluator.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

struct slow_model_state {
  std::deque<caf::response_promise> waiting;
};

/// A worker that answers each fetch with `values` after `delay`, in order.
caf::behavior slow_model(caf::stateful_actor<slow_model_state>* self,
                         std::vector<float> values,
                         std::chrono::milliseconds delay) {
  return {
      [self, delay](fetch_msg&) -> caf::result<params_msg> {
        auto promise = self->make_response_promise();
        self->state.waiting.push_back(promise);
        self->delayed_send(self, delay, tick_atom::value);
        return caf::delegated<params_msg>{};
      },
      [self, values](tick_atom) {
        if (self->state.waiting.empty())
          return;
        auto promise = self->state.waiting.front();
        self->state.waiting.pop_front();
        params_msg p;
        p.offset = 0;
        p.version = 1;
        p.values = tensor{values.data(), values.size()};
        promise.deliver(std::move(p));
      },
  };
}

/// The evaluated mean of three workers answering after `delays`.
std::vector<float> mean_with(const std::vector<std::vector<float>>& models,
                             const std::vector<int>& delays) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  evaluator_config c;
  c.parameters = models[0].size();
  c.request_timeout = caf::duration{10s};
  c.last_params = std::make_shared<std::vector<float>>();
  for (std::size_t w = 0; w < models.size(); ++w)
    c.average.push_back(
        sys.spawn(slow_model, models[w], std::chrono::milliseconds{delays[w]}));
  auto last = c.last_params;
  auto eval = sys.spawn(evaluator, c);
  caf::scoped_actor self{sys};
  bool answered = false;
  self->request(eval, 20s, eval_atom::value, true)
      .receive([&](eval_msg&) { answered = true; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  REQUIRE(answered);
  self->send_exit(eval, caf::exit_reason::user_shutdown);
  for (auto& a : c.average)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  return *last;
}

} // namespace

TEST_CASE("the averaged model does not depend on the order of the answers") {
  // Summed in double, 1e30 + 1 - 1e30 is 0 in the workers' order and 1 when
  // the third worker's answer comes before the second's.
  std::vector<std::vector<float>> models{
      {1e30f, 2.0f}, {1.0f, 3.0f}, {-1e30f, 4.0f}};
  auto in_order = mean_with(models, {0, 40, 80});
  auto reversed = mean_with(models, {80, 40, 0});
  auto third_first = mean_with(models, {0, 120, 40});
  REQUIRE(in_order.size() == 2);
  CHECK(in_order[0] == 0.0f);
  CHECK(in_order[1] == 3.0f);
  CHECK(std::memcmp(in_order.data(), reversed.data(), 2 * sizeof(float)) == 0);
  CHECK(std::memcmp(in_order.data(), third_first.data(), 2 * sizeof(float))
        == 0);
}

TEST_CASE("two evaluations at once each get the whole mean") {
  // The second starts while the first waits on the slowest worker: each
  // keeps its own answers.
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  evaluator_config c;
  c.parameters = 1;
  c.request_timeout = caf::duration{10s};
  std::vector<float> values{2.0f, 4.0f, 9.0f};
  std::vector<int> delays{0, 20, 60};
  for (std::size_t w = 0; w < values.size(); ++w)
    c.average.push_back(sys.spawn(slow_model, std::vector<float>{values[w]},
                                  std::chrono::milliseconds{delays[w]}));
  auto eval = sys.spawn(evaluator, c);
  caf::scoped_actor self{sys};
  auto first = self->request(eval, 20s, eval_atom::value, true);
  auto second = self->request(eval, 20s, eval_atom::value, true);
  int answered = 0;
  for (auto* r : {&first, &second})
    r->receive(
        [&](eval_msg& m) {
          ++answered;
          CHECK(m.version == 3);
        },
        [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(answered == 2);
  self->send_exit(eval, caf::exit_reason::user_shutdown);
  for (auto& a : c.average)
    self->send_exit(a, caf::exit_reason::user_shutdown);
}
