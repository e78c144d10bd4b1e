// Save and load of a worker's stateful objects (optimizers, batch iterator,
// replicas, local_trainer): "k steps, save, load into a fresh object built
// the same way, m more steps" ends bit-identical to k + m steps without the
// stop, for k = 0, mid-epoch and at an epoch boundary; state that does not
// fit is refused naming the tensor.

#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>

#include <catch2/catch.hpp>

#include "optim/optimizer.hpp"
#include "optim/param_hash.hpp"
#include "optim/replica.hpp"
#include "optim/rng.hpp"
#include "optim/state_file.hpp"
#include "optim/synthetic.hpp"
#include "optim/trainer.hpp"

using namespace troupe::optim;

namespace {

/// What `save` writes, read back.
template <class Save>
state_reader round_trip(Save&& save) {
  state_writer w;
  save(w);
  return state_reader{w.encode(), "test.state"};
}

template <class T>
bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size()
         && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

/// Step `step` of a seeded run: gradients pulling p towards a target, plus
/// noise, so every step depends on the optimizer's state.
template <class T>
void run_steps(optimizer<T>& opt, std::vector<T>& p, std::size_t first,
               std::size_t count, std::uint64_t seed) {
  std::vector<T> g(p.size());
  for (auto s = first; s < first + count; ++s) {
    rng gen{seed * 1000 + s};
    for (std::size_t i = 0; i < p.size(); ++i)
      g[i] = static_cast<T>(p[i] - T(i % 3) + T(0.5) * gen.normal());
    opt.step(p.data(), g.data(), p.size(), 0.05);
  }
}

template <class T>
void optimizer_round_trip(const std::string& name) {
  std::uint64_t seed = 5;
  std::size_t n = 37, m = 6;
  optimizer_options o;
  o.name = name;
  o.weight_decay = 0.01;
  if (name == "delayed-nesterov") {
    o.delay = 3; // k = 1 and 7 stop inside a period of the momentum
    o.activation = 0.25;
  }
  for (std::size_t k : {0, 1, 7}) {
    std::cout << "optimizer " << name << " seed " << seed << " k " << k << '\n';
    std::vector<T> p0(n, T(0.25));
    auto straight = make_optimizer<T>(o, n);
    auto p = p0;
    run_steps(*straight, p, 0, k + m, seed);
    auto first = make_optimizer<T>(o, n);
    auto q = p0;
    run_steps(*first, q, 0, k, seed);
    auto r = round_trip([&](state_writer& w) { first->save(w, "opt."); });
    auto fresh = make_optimizer<T>(o, n);
    fresh->load(r, "opt.");
    run_steps(*fresh, q, k, m, seed);
    CHECK(same_bits(p, q));
  }
}

/// The batches `count` next_indices() calls return.
std::vector<std::size_t> draw(batch_iterator& it, std::size_t count) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& b = it.next_indices();
    out.insert(out.end(), b.begin(), b.end());
    out.push_back(~std::size_t{0});
  }
  return out;
}

std::vector<std::size_t> iota(std::size_t n, std::size_t from = 0) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

/// compute() and a plain SGD step on a replica, `count` times.
void train(replica& r, std::size_t count) {
  for (std::size_t s = 0; s < count; ++s) {
    r.compute();
    for (std::size_t i = 0; i < r.size(); ++i)
      r.params()[i] -= 0.1f * r.grads()[i];
  }
}

std::string hash_of(replica& r) {
  return hash_params(r.params(), r.size());
}

} // namespace

TEST_CASE("every optimizer continues bit for bit after save and load") {
  for (const auto& name : optimizer_names()) {
    optimizer_round_trip<float>(name);
    optimizer_round_trip<double>(name);
  }
}

TEST_CASE("an optimizer refuses another optimizer's, size's or type's state") {
  optimizer_options adam;
  adam.name = "adam";
  auto saved = make_optimizer<float>(adam, 12);
  auto r = round_trip([&](state_writer& w) { saved->save(w, "opt."); });
  auto fails = [&](auto&& opt, const std::string& what) {
    CHECK_THROWS_AS(opt->load(r, "opt."), data_error);
    CHECK_THROWS_WITH(opt->load(r, "opt."), Catch::Contains(what));
  };
  optimizer_options sgd;
  fails(make_optimizer<float>(sgd, 12),
        "test.state: 'opt.name' is 'adam' in the file, 'sgd' here");
  fails(make_optimizer<float>(adam, 10),
        "tensor 'opt.size' is 12 in the file, 10 here");
  fails(make_optimizer<double>(adam, 12), "'opt.dtype' is 'F32'");
  auto beta = adam;
  beta.beta2 = 0.99;
  fails(make_optimizer<float>(beta, 12), "'opt.beta2' is '0.999");
  CHECK_THROWS_WITH(make_optimizer<float>(adam, 12)->load(r, "shard."),
                    Catch::Contains("no metadata 'shard.name'"));
}

TEST_CASE("a batch iterator resumes its stream mid-epoch and at epoch ends") {
  std::uint64_t seed = 8;
  // 23 examples in batches of 5: 5 batches per epoch, the last of 3; with
  // two parts, global batches of 10 and a last one of 3.
  for (std::size_t world : {1, 2}) {
    for (std::size_t k : {0, 2, 5, 10, 12}) {
      for (bool grow : {false, true}) {
        std::cout << "batch_iterator seed " << seed << " world " << world
                  << " k " << k << " grow " << grow << '\n';
        batch_part part{world - 1, world};
        batch_iterator straight{iota(23), 5, seed, part};
        batch_iterator first{iota(23), 5, seed, part};
        auto before = draw(straight, k / 2);
        CHECK(draw(first, k / 2) == before);
        if (grow) {
          straight.add_indices(iota(4, 100));
          first.add_indices(iota(4, 100));
        }
        draw(straight, k - k / 2);
        draw(first, k - k / 2);
        auto r = round_trip([&](state_writer& w) { first.save(w, "b."); });
        batch_iterator fresh{iota(23), 5, seed, part};
        fresh.load(r, "b.");
        CHECK(fresh.epoch() == straight.epoch());
        CHECK(fresh.size() == straight.size());
        CHECK(draw(fresh, 13) == draw(straight, 13));
      }
    }
  }
}

TEST_CASE("a batch iterator refuses another seed, part or batch size") {
  batch_iterator saved{iota(20), 4, 3, {0, 2}};
  saved.next_indices();
  auto r = round_trip([&](state_writer& w) { saved.save(w, "b."); });
  auto fails = [&](batch_iterator it, const std::string& what) {
    CHECK_THROWS_WITH(it.load(r, "b."), Catch::Contains(what));
  };
  fails(batch_iterator{iota(20), 4, 4, {0, 2}},
        "tensor 'b.seed' is 3 in the file, 4 here");
  fails(batch_iterator{iota(20), 4, 3, {1, 2}}, "tensor 'b.rank'");
  fails(batch_iterator{iota(20), 4, 3, {0, 3}}, "tensor 'b.world'");
  fails(batch_iterator{iota(20), 5, 3, {0, 2}}, "tensor 'b.batch_size'");
  // A corrupted order is no permutation of the examples.
  state_writer w;
  w.put_u64("b.seed", 3);
  w.put_u64("b.rank", 0);
  w.put_u64("b.world", 2);
  w.put_u64("b.batch_size", 4);
  w.put("b.indices", iota(20));
  auto order = iota(20);
  order[3] = 0;
  w.put("b.order", order);
  w.put_u64("b.pos", 0);
  w.put_u64("b.epoch", 0);
  state_reader bad{w.encode(), "bad.state"};
  batch_iterator it{iota(20), 4, 3, {0, 2}};
  auto next = it;
  CHECK_THROWS_WITH(it.load(bad, "b."),
                    Catch::Contains("bad.state: tensor 'b.order': not a "
                                    "permutation of b.indices"));
  CHECK(draw(it, 6) == draw(next, 6));
}

TEST_CASE("replicas continue bit for bit after save_state and load_state") {
  std::uint64_t seed = 12;
  lsq_options lo;
  lo.m = 96;
  lo.d = 8;
  lo.seed = seed;
  auto lsq = std::make_shared<const lsq_problem>(make_lsq(lo));
  logreg_options go;
  go.m = 90;
  go.d = 6;
  go.seed = seed;
  auto data = std::make_shared<const dataset>(to_dataset(make_logreg(go)));
  // 96 examples in batches of 16 and 90 in batches of 10 per worker of 2:
  // 6 and 5 batches per epoch.
  using maker = std::function<std::unique_ptr<replica>()>;
  std::vector<std::pair<std::string, maker>> makers{
      {"synthetic",
       [&] {
         return std::make_unique<synthetic_replica<lsq_problem>>(lsq, iota(96),
                                                                 16, seed);
       }},
      {"model", [&] {
         return make_model_replica("logreg", data, iota(90), 10, seed, seed + 1,
                                   {1, 2});
       }}};
  for (const auto& [name, make] : makers) {
    for (std::size_t k : {0, 3, 5, 6, 9}) {
      std::cout << name << " replica seed " << seed << " k " << k << '\n';
      auto straight = make();
      train(*straight, k + 8);
      auto first = make();
      train(*first, k);
      auto r = round_trip([&](state_writer& w) { first->save_state(w, "w."); });
      auto fresh = make();
      fresh->load_state(r, "w.");
      CHECK(hash_of(*fresh) == hash_of(*first));
      train(*fresh, 8);
      CHECK(hash_of(*fresh) == hash_of(*straight));
      CHECK(fresh->epoch() == straight->epoch());
    }
  }
  auto small = make_model_replica("logreg", data, iota(90), 10, seed + 1, 1);
  auto r = round_trip([&](state_writer& w) { small->save_state(w, "w."); });
  CHECK_THROWS_WITH(make_model_replica("logreg", data, iota(90), 10, seed, 1)
                        ->load_state(r, "w."),
                    Catch::Contains("tensor 'w.batches.seed'"));
  auto other = std::make_unique<synthetic_replica<lsq_problem>>(lsq, iota(96),
                                                                16, seed + 1);
  CHECK_THROWS_WITH(other->load_state(r, "w."),
                    Catch::Contains("test.state: no metadata 'w.problem'"));
  auto s = round_trip([&](state_writer& w) { other->save_state(w, "w."); });
  lo.d = 10;
  auto wide = std::make_shared<const lsq_problem>(make_lsq(lo));
  CHECK_THROWS_WITH(synthetic_replica<lsq_problem>(wide, iota(96), 16, seed + 1)
                        .load_state(s, "w."),
                    Catch::Contains("tensor 'w.params' has 8 values, "
                                    "expected 10"));
  go.d = 8;
  auto logreg = std::make_shared<const logreg_problem>(make_logreg(go));
  CHECK_THROWS_WITH(
      synthetic_replica<logreg_problem>(logreg, iota(90), 16, seed + 1)
          .load_state(s, "w."),
      Catch::Contains("'w.problem' is 'lsq' in the file, 'logreg' here"));
}

TEST_CASE("a replica without saved state says it cannot be checkpointed") {
  struct plain : replica {
    std::size_t size() const noexcept override {
      return 0;
    }
    float* params() noexcept override {
      return nullptr;
    }
    float* grads() noexcept override {
      return nullptr;
    }
    step_result compute() override {
      return {};
    }
    std::size_t batches_per_epoch() const noexcept override {
      return 1;
    }
    std::size_t epoch() const noexcept override {
      return 0;
    }
  } p;
  state_writer w;
  CHECK_THROWS_WITH(p.save_state(w, "w."),
                    Catch::Contains("cannot be checkpointed"));
  CHECK_THROWS_AS(p.save_state(w, "w."), std::logic_error);
}

TEST_CASE("local_trainer resumes its model, optimizer and schedule") {
  std::uint64_t seed = 21;
  logreg_options go;
  go.m = 120;
  go.d = 10;
  go.seed = seed;
  auto data = to_dataset(make_logreg(go));
  optimizer_options o;
  o.name = "nesterov";
  schedule_options so;
  so.name = "step";
  so.base_lr = 0.2;
  so.step_size = 4;
  so.gamma = 0.5;
  so.warmup_steps = 3;
  // 120 examples in batches of 25: 5 batches per epoch (the last of 20).
  for (std::size_t k : {0, 2, 5, 7}) {
    std::cout << "local_trainer seed " << seed << " k " << k << '\n';
    auto make = [&] {
      return make_model<float>("logreg", data.sample_shape, data.classes);
    };
    auto m1 = make(), m2 = make(), m3 = make();
    m1.init(seed);
    m2.init(seed);
    m3.init(seed + 9); // the load overwrites the parameters
    local_trainer straight{m1, data, iota(120), 25, o, schedule{so}, seed};
    local_trainer first{m2, data, iota(120), 25, o, schedule{so}, seed};
    for (std::size_t s = 0; s < k + 9; ++s)
      straight.step();
    for (std::size_t s = 0; s < k; ++s)
      first.step();
    auto r = round_trip([&](state_writer& w) { first.save(w, "t."); });
    local_trainer fresh{m3, data, iota(120), 25, o, schedule{so}, seed};
    fresh.load(r, "t.");
    CHECK(fresh.steps() == k);
    for (std::size_t s = 0; s < 9; ++s)
      fresh.step();
    CHECK(hash_params(m3.params(), m3.size())
          == hash_params(m1.params(), m1.size()));
    CHECK(fresh.epoch() == straight.epoch());
  }
}
