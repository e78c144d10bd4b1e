#include "actors/probe.hpp"

#include <algorithm>
#include <cstdlib>

#include <caf/abstract_actor.hpp>
#include <caf/actor_control_block.hpp>

namespace troupe::actors {

using namespace messages;

namespace {

constexpr std::array<const char*,
                     static_cast<std::size_t>(msg_type::builtin_count_)>
    builtin_names{"push",  "fetch",  "params", "progress", "done",    "stop",
                  "start", "step",   "adopt",  "track",    "untrack", "stats",
                  "eval",  "result", "setup",  "spawn",    "metrics", "leader",
                  "peers", "leave",  "other"};

/// The names of every kind: the built-in ones, then those registered. A
/// slot is written once, under the lock, before its kind is handed out, so
/// readers (probe snapshots on other threads) need no lock.
struct kind_table {
  std::mutex mtx;
  std::array<std::atomic<const char*>, max_message_kinds> names{};
  std::size_t used = builtin_names.size();
  std::vector<std::unique_ptr<std::string>> storage;
  kind_table() {
    for (std::size_t i = 0; i < builtin_names.size(); ++i)
      names[i].store(builtin_names[i], std::memory_order_relaxed);
  }
};

kind_table& kinds() {
  static kind_table t;
  return t;
}

/// A kind's counter (a value that message_kind() never gave: other's).
std::size_t slot(msg_type t) noexcept {
  auto i = static_cast<std::size_t>(t);
  return i < max_message_kinds ? i : static_cast<std::size_t>(msg_type::other);
}

/// TROUPE_PROBES=0 in the environment switches probes off.
bool enabled_at_start() {
  const char* v = std::getenv("TROUPE_PROBES");
  return v == nullptr || std::string{v} != "0";
}

std::atomic<bool> enabled{enabled_at_start()};

std::string key_of(const caf::node_id& node, caf::actor_id id) {
  return node_key(node) + "/" + std::to_string(id);
}

void raise_max(std::atomic<std::uint64_t>& m, std::uint64_t v) noexcept {
  auto cur = m.load(std::memory_order_relaxed);
  while (v > cur
         && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

std::int64_t ms_between(std::int64_t from_ns, std::int64_t to_ns) {
  return (to_ns - from_ns) / 1000000;
}

/// This process's probes.
struct registry {
  std::mutex mtx;
  std::vector<std::shared_ptr<actor_probe>> probes;
};

registry& the_registry() {
  static registry r;
  return r;
}

} // namespace

const char* to_string(msg_type t) noexcept {
  auto i = static_cast<std::size_t>(t);
  auto name = i < max_message_kinds
                  ? kinds().names[i].load(std::memory_order_acquire)
                  : nullptr;
  return name != nullptr ? name : "other";
}

msg_type message_kind(const std::string& name) {
  auto& t = kinds();
  std::lock_guard<std::mutex> guard{t.mtx};
  for (std::size_t i = 0; i < t.used; ++i)
    if (name == t.names[i].load(std::memory_order_relaxed))
      return static_cast<msg_type>(i);
  if (t.used == max_message_kinds)
    return msg_type::other;
  t.storage.push_back(std::make_unique<std::string>(name));
  t.names[t.used].store(t.storage.back()->c_str(), std::memory_order_release);
  return static_cast<msg_type>(t.used++);
}

actor_probe::actor_probe(std::string name, std::string role,
                         bool expects_progress)
    : name_(std::move(name)), role_(std::move(role)),
      expects_progress_(expects_progress) {}

std::int64_t actor_probe::ns_of(clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             t.time_since_epoch())
      .count();
}

void actor_probe::bind(const caf::node_id& node, caf::actor_id id,
                       const caf::actor_clock* clock) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    key_ = key_of(node, id);
  }
  if (clock == nullptr)
    return;
  // Its age counts on the actor's clock from here.
  clock_.store(clock, std::memory_order_relaxed);
  created_ns_.store(ns_of(clock->now()), std::memory_order_relaxed);
}

void actor_probe::received(msg_type t, std::uint64_t bytes,
                           const caf::strong_actor_ptr& from,
                           std::size_t mailbox) noexcept {
  auto& c = in_[slot(t)];
  c.n.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  mailbox_.store(mailbox, std::memory_order_relaxed);
  raise_max(mailbox_max_, mailbox);
  if (!from)
    return;
  auto now = this->now();
  auto id = from->id();
  const auto& node = from->node();
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& p : peers_)
    if (p.id == id && p.node == node) {
      p.last = now;
      ++p.messages;
      return;
    }
  try {
    peers_.push_back({node, id, now, 1});
  } catch (...) {
    // Out of memory: the peer goes unlisted; counting never throws.
  }
}

void actor_probe::sent(msg_type t, std::uint64_t bytes) noexcept {
  if (!probes_enabled())
    return;
  auto& c = out_[slot(t)];
  c.n.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void actor_probe::handled(std::uint64_t ns) noexcept {
  handler_ns_.fetch_add(ns, std::memory_order_relaxed);
  raise_max(handler_max_ns_, ns);
}

void actor_probe::error() noexcept {
  errors_.fetch_add(1, std::memory_order_relaxed);
}

void actor_probe::progress() noexcept {
  if (probes_enabled())
    progress_ns_.store(ns_of(now()), std::memory_order_relaxed);
}

void actor_probe::activity(const char* what) noexcept {
  activity_.store(what, std::memory_order_relaxed);
}

void actor_probe::gauge(const std::string& name, double value) {
  if (!probes_enabled())
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& g : gauges_)
    if (g.name == name) {
      g.value.value = value;
      return;
    }
  gauges_.push_back({name, real{value}});
}

void actor_probe::observe(const std::string& name, std::uint64_t value,
                          const std::vector<std::uint64_t>& bounds) {
  if (!probes_enabled())
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  auto h = std::find_if(histograms_.begin(), histograms_.end(),
                        [&](const histogram& x) { return x.name == name; });
  if (h == histograms_.end()) {
    histograms_.push_back({name, bounds, {}, 0});
    h = histograms_.end() - 1;
    h->counts.assign(bounds.size() + 1, 0);
  }
  auto i = static_cast<std::size_t>(
      std::lower_bound(h->bounds.begin(), h->bounds.end(), value)
      - h->bounds.begin());
  ++h->counts[i];
  h->sum += static_cast<double>(value);
}

void actor_probe::finish() noexcept {
  activity("done");
  done_ns_.store(ns_of(now()), std::memory_order_relaxed);
}

actor_metrics actor_probe::snapshot(clock::time_point now) const {
  actor_metrics m;
  auto now_ns = ns_of(now);
  m.name = name_;
  m.role = role_;
  m.activity = activity_.load(std::memory_order_relaxed);
  m.expects_progress = expects_progress_;
  auto done_ns = done_ns_.load(std::memory_order_relaxed);
  m.done = done_ns >= 0;
  m.done_ago_ms = m.done ? ms_between(done_ns, now_ns) : -1;
  for (std::size_t i = 0; i < in_.size(); ++i) {
    auto t = static_cast<msg_type>(i);
    auto n_in = in_[i].n.load(std::memory_order_relaxed);
    auto n_out = out_[i].n.load(std::memory_order_relaxed);
    if (n_in > 0) {
      auto b = in_[i].bytes.load(std::memory_order_relaxed);
      m.received.push_back({to_string(t), n_in, b});
      m.messages_in += n_in;
      m.bytes_in += b;
    }
    if (n_out > 0) {
      auto b = out_[i].bytes.load(std::memory_order_relaxed);
      m.sent.push_back({to_string(t), n_out, b});
      m.messages_out += n_out;
      m.bytes_out += b;
    }
  }
  m.handler_ns = handler_ns_.load(std::memory_order_relaxed);
  m.handler_max_ns = handler_max_ns_.load(std::memory_order_relaxed);
  m.errors = errors_.load(std::memory_order_relaxed);
  m.mailbox = mailbox_.load(std::memory_order_relaxed);
  m.mailbox_max = mailbox_max_.load(std::memory_order_relaxed);
  m.age_ms = ms_between(created_ns_.load(std::memory_order_relaxed), now_ns);
  auto p = progress_ns_.load(std::memory_order_relaxed);
  m.progress_ago_ms
      = p < 0 ? -1 : std::max<std::int64_t>(0, ms_between(p, now_ns));
  std::lock_guard<std::mutex> guard{mtx_};
  m.key = key_;
  m.gauges = gauges_;
  for (auto& h : histograms_)
    m.histograms.push_back({h.name, h.bounds, h.counts, real{h.sum}});
  for (auto& x : peers_)
    m.peers.push_back(
        {key_of(x.node, x.id),
         std::max<std::int64_t>(0, ms_between(ns_of(x.last), now_ns)),
         x.messages});
  return m;
}

bool probes_enabled() noexcept {
  return enabled.load(std::memory_order_relaxed);
}

void set_probes_enabled(bool on) noexcept {
  enabled.store(on, std::memory_order_relaxed);
}

probe_ref make_probe(std::string name, std::string role,
                     bool expects_progress) {
  auto p = std::make_shared<actor_probe>(std::move(name), std::move(role),
                                         expects_progress);
  auto& r = the_registry();
  std::lock_guard<std::mutex> guard{r.mtx};
  r.probes.push_back(p);
  return probe_ref{std::move(p)};
}

std::vector<actor_metrics> snapshot_probes() {
  return snapshot_probes(process_now());
}

std::vector<actor_metrics> snapshot_probes(clock_type::time_point now) {
  auto& r = the_registry();
  std::vector<std::shared_ptr<actor_probe>> probes;
  {
    std::lock_guard<std::mutex> guard{r.mtx};
    probes = r.probes;
  }
  std::vector<actor_metrics> out;
  std::vector<const actor_probe*> expired;
  for (auto& p : probes) {
    out.push_back(p->snapshot(now));
    // A finished actor stays listed for a minute after its last message.
    if (out.back().done && out.back().done_ago_ms > 60000)
      expired.push_back(p.get());
  }
  if (!expired.empty()) {
    std::lock_guard<std::mutex> guard{r.mtx};
    r.probes.erase(std::remove_if(r.probes.begin(), r.probes.end(),
                                  [&](const std::shared_ptr<actor_probe>& p) {
                                    return std::find(expired.begin(),
                                                     expired.end(), p.get())
                                           != expired.end();
                                  }),
                   r.probes.end());
  }
  return out;
}

std::string node_key(const caf::node_id& node) {
  return node ? caf::to_string(node) : std::string{"local"};
}

} // namespace troupe::actors
