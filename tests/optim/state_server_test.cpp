// Save and load of a shard's and a compressor's state: a shard stopped after
// k pushes (applied, stale, duplicate, rejected, synchronous) and loaded into
// a fresh one built the same way ends bit-identical to the uninterrupted
// shard, de-duplication table included; a compressor continues its packed
// stream and residual exactly; state that does not fit is refused naming the
// tensor or option.

#include <algorithm>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include <catch2/catch.hpp>

#include "optim/compress.hpp"
#include "optim/param_hash.hpp"
#include "optim/replica.hpp"
#include "optim/rng.hpp"
#include "optim/shard_store.hpp"
#include "optim/state_file.hpp"
#include "optim/synthetic.hpp"

using namespace troupe::optim;

namespace {

template <class Save>
state_reader round_trip(Save&& save) {
  state_writer w;
  save(w);
  return state_reader{w.encode(), "test.state"};
}

shard_store_options shard_opts(const std::string& optimizer) {
  shard_store_options o;
  o.optimizer.name = optimizer;
  o.lr = 0.05;
  o.staleness_aware = true;
  o.histogram_buckets = 3;
  if (optimizer == "adam") {
    schedule_options s;
    s.name = "step";
    s.base_lr = 0.05;
    s.step_size = 5;
    s.gamma = 0.5;
    o.lr_schedule = s;
  }
  return o;
}

/// Three workers' pushes to a shard of [4, 15): event e (a function of the
/// seed, e and the shard's version) is a push at a random staleness, a
/// retransmission, a push to the wrong range, a non-finite push or a
/// synchronous step of all three.
template <class T>
struct driver {
  std::uint64_t seed;
  std::uint64_t next_seq[3] = {1, 1, 1};

  void run(shard_store<T>& s, std::size_t first, std::size_t count) {
    std::vector<T> g(11);
    for (auto e = first; e < first + count; ++e) {
      rng gen{seed * 7919 + e};
      auto w = static_cast<std::uint32_t>(gen.below(3));
      for (auto& x : g)
        x = static_cast<T>(gen.normal());
      auto kind = gen.below(10);
      auto v = s.version();
      auto base = v - gen.below(std::min<std::uint64_t>(v, 4) + 1);
      if (kind == 0 && next_seq[w] > 1) {
        CHECK(s.push(w, next_seq[w] - 1, base, 4, g.data(), 11).status
              == push_status::duplicate);
      } else if (kind == 1) {
        s.push(w, next_seq[w]++, base, 5, g.data(), 11);
      } else if (kind == 2) {
        g[3] = std::numeric_limits<T>::quiet_NaN();
        s.push(w, next_seq[w]++, base, 4, g.data(), 11);
      } else if (kind == 3) {
        auto seq = *std::max_element(next_seq, next_seq + 3);
        s.apply(g.data(), seq, {0, 1, 2});
        std::fill(next_seq, next_seq + 3, seq + 1);
      } else {
        s.push(w, next_seq[w]++, base, 4, g.data(), 11);
      }
    }
  }
};

template <class T>
void check_same(const shard_store<T>& x, const shard_store<T>& y) {
  auto n = x.range().size;
  CHECK(std::memcmp(x.params(), y.params(), n * sizeof(T)) == 0);
  CHECK(x.version() == y.version());
  CHECK(x.staleness_histogram() == y.staleness_histogram());
  CHECK(x.staleness_sum() == y.staleness_sum());
  CHECK(x.staleness_max() == y.staleness_max());
  CHECK(x.current_lr() == y.current_lr());
  auto table = [](const shard_store<T>& s) {
    std::map<std::uint32_t, std::vector<std::uint64_t>> out;
    for (const auto& [w, r] : s.workers())
      out[w] = {r.last_seq, r.applied, r.rejected, r.duplicates};
    return out;
  };
  CHECK(table(x) == table(y));
}

template <class T>
void shard_round_trip(const std::string& optimizer) {
  std::uint64_t seed = 31;
  std::vector<T> init(20);
  for (std::size_t i = 0; i < init.size(); ++i)
    init[i] = static_cast<T>(0.1 * static_cast<double>(i));
  slice range{4, 11};
  for (std::size_t k : {0, 1, 9, 23}) {
    std::cout << "shard " << optimizer << " seed " << seed << " k " << k
              << '\n';
    shard_store<T> straight{range, init.data(), shard_opts(optimizer)};
    driver<T> d1{seed}, d2{seed};
    d1.run(straight, 0, k + 25);
    shard_store<T> first{range, init.data(), shard_opts(optimizer)};
    d2.run(first, 0, k);
    auto r = round_trip([&](state_writer& w) { first.save(w, "s."); });
    std::vector<T> other(20, T(7));
    shard_store<T> fresh{range, other.data(), shard_opts(optimizer)};
    fresh.load(r, "s.");
    check_same(fresh, first);
    // The de-duplication table survived: every worker's last push is a
    // duplicate after the load.
    for (const auto& [w, rec] : first.workers())
      if (rec.last_seq > 0)
        CHECK(fresh.check(w, rec.last_seq, 0, 4, other.data(), 11)
              == push_status::duplicate);
    d2.run(fresh, k, 25);
    check_same(fresh, straight);
  }
}

compressor make(codec c, double density = 0.2, std::size_t segment = 30) {
  compress_options o;
  o.method = c;
  o.bin_fc = 7;
  o.bin_conv = 5;
  o.density_fc = o.density_conv = density;
  return compressor{
      o, {{0, segment, layer_kind::conv}, {segment, 20, layer_kind::fc}}};
}

std::vector<std::string> compress_steps(compressor& c, std::size_t first,
                                        std::size_t count, std::uint64_t seed) {
  std::vector<std::string> out;
  std::vector<float> g(c.size());
  for (auto s = first; s < first + count; ++s) {
    rng gen{seed * 131 + s};
    for (auto& x : g)
      x = static_cast<float>(gen.normal());
    out.push_back(c.compress(g.data(), g.size()));
  }
  return out;
}

/// A synchronous job without actors: two workers (halves of each global
/// batch) pull the parameters from two shards, compute, and every shard
/// applies the mean of the workers' gradients.
struct sync_job {
  std::vector<shard_store<float>> shards;
  std::vector<synthetic_replica<lsq_problem>> workers;
  std::uint64_t seq = 0;

  sync_job(std::shared_ptr<const lsq_problem> p, std::uint64_t seed) {
    auto d = static_cast<std::size_t>(p->a.cols());
    std::vector<float> init(d, 0.5f);
    shard_store_options o;
    o.optimizer.name = "sgd";
    o.lr = 0.1;
    shards.emplace_back(slice{0, d / 2}, init.data(), o);
    shards.emplace_back(slice{d / 2, d - d / 2}, init.data(), o);
    std::vector<std::size_t> all(static_cast<std::size_t>(p->a.rows()));
    std::iota(all.begin(), all.end(), std::size_t{0});
    for (std::size_t rank = 0; rank < 2; ++rank)
      workers.emplace_back(p, all, 3, seed, batch_part{rank, 2});
  }

  void step() {
    ++seq;
    for (auto& w : workers) {
      for (auto& s : shards)
        std::copy(s.params(), s.params() + s.range().size,
                  w.params() + s.range().offset);
      w.compute();
    }
    for (auto& s : shards) {
      std::vector<float> mean(s.range().size);
      for (std::size_t i = 0; i < mean.size(); ++i)
        mean[i] = 0.5f
                  * (workers[0].grads()[s.range().offset + i]
                     + workers[1].grads()[s.range().offset + i]);
      s.apply(mean.data(), seq, {0, 1});
    }
  }

  /// Every role's state in one file, each under its own prefix.
  std::string save() const {
    state_writer w;
    for (std::size_t i = 0; i < shards.size(); ++i)
      shards[i].save(w, "shard" + std::to_string(i) + ".");
    for (std::size_t i = 0; i < workers.size(); ++i)
      workers[i].save_state(w, "worker" + std::to_string(i) + ".");
    w.put_u64("job.seq", seq);
    return w.encode();
  }

  void load(std::string bytes) {
    state_reader r{std::move(bytes), "job.state"};
    for (std::size_t i = 0; i < shards.size(); ++i)
      shards[i].load(r, "shard" + std::to_string(i) + ".");
    for (std::size_t i = 0; i < workers.size(); ++i)
      workers[i].load_state(r, "worker" + std::to_string(i) + ".");
    seq = r.u64_scalar("job.seq");
  }

  std::string param_hash() const {
    std::vector<float> flat;
    for (const auto& s : shards)
      flat.insert(flat.end(), s.params(), s.params() + s.range().size);
    return hash_params(flat.data(), flat.size());
  }
};

} // namespace

TEST_CASE("a synchronous job resumed from one state file ends bit-identical") {
  std::uint64_t seed = 77;
  lsq_options lo;
  lo.m = 40; // global batches of 6: 7 steps per epoch, the last of 4
  lo.d = 9;
  lo.seed = seed;
  auto p = std::make_shared<const lsq_problem>(make_lsq(lo));
  sync_job straight{p, seed};
  for (int s = 0; s < 30; ++s)
    straight.step();
  for (std::size_t k : {0, 4, 7, 13}) {
    std::cout << "sync job seed " << seed << " k " << k << '\n';
    sync_job first{p, seed};
    for (std::size_t s = 0; s < k; ++s)
      first.step();
    sync_job fresh{p, seed + 1000}; // its own seed is checked: refused
    CHECK_THROWS_WITH(fresh.load(first.save()),
                      Catch::Contains("tensor 'worker0.batches.seed'"));
    sync_job resumed{p, seed};
    resumed.load(first.save());
    for (std::size_t s = k; s < 30; ++s)
      resumed.step();
    CHECK(resumed.param_hash() == straight.param_hash());
    CHECK(resumed.shards[1].version() == 30);
  }
}

TEST_CASE("a shard continues bit for bit after save and load") {
  shard_round_trip<float>("adagrad");
  shard_round_trip<float>("adam");
  shard_round_trip<double>("momentum");
  shard_round_trip<double>("adam");
}

TEST_CASE("a shard refuses state of another range, option or optimizer") {
  std::vector<float> init(20, 1.0f);
  shard_store<float> saved{{4, 11}, init.data(), shard_opts("adam")};
  driver<float>{3}.run(saved, 0, 5);
  auto r = round_trip([&](state_writer& w) { saved.save(w, "s."); });
  auto fails
      = [&](slice range, shard_store_options o, const std::string& what) {
          shard_store<float> s{range, init.data(), o};
          CHECK_THROWS_AS(s.load(r, "s."), data_error);
          CHECK_THROWS_WITH(s.load(r, "s."), Catch::Contains(what));
          CHECK(s.version() == 0);
          CHECK(s.params()[0] == 1.0f);
        };
  fails({5, 11}, shard_opts("adam"), "tensor 's.offset' is 4 in the file, 5");
  fails({4, 12}, shard_opts("adam"), "tensor 's.size' is 11 in the file, 12");
  auto o = shard_opts("adam");
  o.optimizer.name = "adagrad";
  fails({4, 11}, o, "'s.opt.name' is 'adam' in the file, 'adagrad' here");
  o = shard_opts("adam");
  o.histogram_buckets = 4;
  fails({4, 11}, o, "'s.histogram_buckets' is '3' in the file, '4' here");
  o = shard_opts("adam");
  o.lr_schedule->gamma = 0.25;
  fails({4, 11}, o, "'s.schedule.gamma' is '0.5' in the file, '0.25' here");
  o = shard_opts("adam");
  o.staleness_aware = false;
  fails({4, 11}, o, "'s.staleness_aware'");
  auto plain = shard_opts("adagrad");
  shard_store<float> fixed{{4, 11}, init.data(), plain};
  auto f = round_trip([&](state_writer& w) { fixed.save(w, "s."); });
  plain.lr = 0.5;
  CHECK_THROWS_WITH(
      (shard_store<float>{{4, 11}, init.data(), plain}.load(f, "s.")),
      Catch::Contains("'s.lr' is '0.050000000000000003' in the "
                      "file, '0.5' here"));
  shard_store<double> wide{
      {4, 11}, std::vector<double>(20).data(), shard_opts("adam")};
  CHECK_THROWS_WITH(wide.load(r, "s."),
                    Catch::Contains("tensor 's.params': dtype F32, expected "
                                    "F64"));
}

TEST_CASE("a compressor continues its stream and residual after a load") {
  std::uint64_t seed = 17;
  for (auto c : {codec::adacomp, codec::topk, codec::onebit}) {
    for (std::size_t k : {0, 1, 4}) {
      std::cout << "compressor " << to_string(c) << " seed " << seed << " k "
                << k << '\n';
      auto straight = make(c);
      auto all = compress_steps(straight, 0, k + 5, seed);
      auto first = make(c);
      compress_steps(first, 0, k, seed);
      auto r = round_trip([&](state_writer& w) { first.save(w, "c."); });
      auto fresh = make(c);
      fresh.load(r, "c.");
      auto rest = compress_steps(fresh, k, 5, seed);
      CHECK(std::equal(rest.begin(), rest.end(), all.begin() + k));
      CHECK(std::memcmp(fresh.residual().data(), straight.residual().data(),
                        4 * straight.size())
            == 0);
      CHECK(fresh.stats().dense_bytes == straight.stats().dense_bytes);
      CHECK(fresh.stats().packed_bytes == straight.stats().packed_bytes);
    }
  }
}

TEST_CASE("a compressor refuses another codec, setting or layout") {
  auto saved = make(codec::topk);
  compress_steps(saved, 0, 2, 5);
  auto r = round_trip([&](state_writer& w) { saved.save(w, "c."); });
  auto fails = [&](compressor c, const std::string& what) {
    CHECK_THROWS_WITH(c.load(r, "c."), Catch::Contains(what));
    CHECK(c.residual_norm() == 0);
  };
  fails(make(codec::onebit), "'c.codec' is 'topk' in the file, 'onebit' here");
  fails(make(codec::topk, 0.1), "'c.density_fc' is '0.20000000000000001'");
  fails(make(codec::topk, 0.2, 29),
        "tensor 'c.segments.offset': segment 1 has 30, expected 29");
}
