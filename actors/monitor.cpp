#include "actors/monitor.hpp"

#include <algorithm>
#include <set>

#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "optim/quote.hpp"

namespace troupe::actors {

using namespace messages;

node_monitor_actor::behavior_type node_monitor(node_monitor_actor::pointer self,
                                               std::string node_name) {
  auto key = node_key(self->node());
  return {
      [self, node_name, key](metrics_atom) {
        return node_metrics{node_name, key, snapshot_probes(now(self)),
                            read_process_usage(),
                            detail::recent_log_lines(max_log_tail)};
      },
  };
}

cluster_view::cluster_view(std::chrono::milliseconds stuck_after)
    : stuck_after_(stuck_after) {}

void cluster_view::bind_clock(const caf::actor_clock& c) {
  std::lock_guard<std::mutex> guard{mtx_};
  clock_ = &c;
}

void cluster_view::unbind_clock(const caf::actor_clock& c) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (clock_ == &c)
    clock_ = nullptr;
}

void cluster_view::update(const node_metrics& m) {
  bool added = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto now = now_locked();
    auto n
        = std::find_if(nodes_.begin(), nodes_.end(),
                       [&](const node_entry& e) { return e.name == m.node; });
    if (n == nodes_.end()) {
      nodes_.push_back({m.node, m.node_key, "up", now, {}, {}, {}});
      n = nodes_.end() - 1;
      added = true;
    }
    if (n->state == "lost")
      return; // a late answer does not revive a lost node
    // The process's rates since its last answer (counters that went back,
    // a restarted process, count from zero).
    double dt = std::chrono::duration<double>(now - n->seen).count();
    if (!added && dt > 0) {
      auto delta = [dt](double now_v, double before) {
        return now_v >= before ? (now_v - before) / dt : 0.0;
      };
      n->cpu_cores
          = delta(m.usage.cpu_seconds.value, n->usage.cpu_seconds.value);
      n->rx_per_sec = delta(static_cast<double>(m.usage.net_rx_bytes),
                            static_cast<double>(n->usage.net_rx_bytes));
      n->tx_per_sec = delta(static_cast<double>(m.usage.net_tx_bytes),
                            static_cast<double>(n->usage.net_tx_bytes));
    }
    n->usage = m.usage;
    // A peer's lines: at most max_log_tail of at most max_log_line bytes,
    // escaped (no control character or invalid UTF-8 reaches a page).
    n->log_tail.clear();
    auto first = m.log_tail.size() > max_log_tail
                     ? m.log_tail.size() - max_log_tail
                     : 0;
    for (auto i = first; i < m.log_tail.size(); ++i)
      n->log_tail.push_back(optim::sanitize(m.log_tail[i], max_log_line));
    n->state = "up";
    n->seen = now;
    n->actors = m.actors;
    // Workers' throughput: samples between two snapshots.
    for (auto& a : n->actors) {
      auto g = std::find_if(
          a.gauges.begin(), a.gauges.end(),
          [](const named_value& v) { return v.name == "samples"; });
      if (g == a.gauges.end())
        continue;
      auto& r = rates_[a.key];
      double dt = std::chrono::duration<double>(now - r.at).count();
      if (r.at != clock::time_point{} && dt > 0)
        r.per_sec = a.done ? 0 : (g->value.value - r.samples) / dt;
      r.samples = g->value.value;
      r.at = now;
      a.gauges.push_back({"samples_per_sec", real{r.per_sec}});
    }
  }
  if (added && on_node_up)
    on_node_up(m.node);
}

void cluster_view::unreachable(const std::string& node) {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& n : nodes_)
    if (n.name == node && n.state == "up")
      n.state = "unreachable";
}

void cluster_view::lost(const std::string& node) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& n : nodes_)
      if (n.name == node && n.state != "lost") {
        n.state = "lost";
        changed = true;
      }
  }
  if (changed && on_node_lost)
    on_node_lost(node);
}

std::vector<cluster_view::actor_view>
cluster_view::actors_locked(bool running, clock::time_point now) const {
  std::vector<actor_view> out;
  auto stuck_ms = stuck_after_.count();
  for (auto& n : nodes_) {
    // A node's snapshot ages: what was 10 ms ago then is more now.
    auto stale
        = std::chrono::duration_cast<std::chrono::milliseconds>(now - n.seen)
              .count();
    for (auto a : n.actors) {
      if (a.progress_ago_ms >= 0)
        a.progress_ago_ms += stale;
      if (a.done_ago_ms >= 0)
        a.done_ago_ms += stale;
      a.age_ms += stale;
      for (auto& p : a.peers)
        p.ago_ms += stale;
      std::string state;
      if (a.done)
        state = "done";
      else if (n.state == "lost")
        state = "lost";
      else if (!running)
        state = "idle";
      else if (a.expects_progress
               && (a.progress_ago_ms >= 0 ? a.progress_ago_ms : a.age_ms)
                      > stuck_ms)
        state = "stuck";
      else
        state = "ok";
      out.push_back({n.name, std::move(state), std::move(a)});
    }
  }
  return out;
}

std::uint64_t cluster_view::bytes_sent() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::uint64_t total = 0;
  for (auto& n : nodes_)
    for (auto& a : n.actors)
      total += a.bytes_out;
  return total;
}

std::vector<cluster_view::actor_view> cluster_view::actors(bool running) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return actors_locked(running, now_locked());
}

nlohmann::json cluster_view::to_json(bool running) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto now = now_locked();
  auto views = actors_locked(running, now);
  std::map<std::string, std::string> names; // actor key -> name
  // What each actor's peers received from it: its messages out where it
  // does not count its own sends (the coordinator, the evaluator).
  std::map<std::string, std::uint64_t> received_from;
  for (auto& v : views) {
    names[v.metrics.key] = v.metrics.name;
    for (auto& p : v.metrics.peers)
      if (p.key != v.metrics.key)
        received_from[p.key] += p.messages;
  }
  auto nodes = nlohmann::json::array();
  for (auto& n : nodes_)
    nodes.push_back(
        {{"name", n.name},
         {"state", n.state},
         {"last_seen_ms",
          std::chrono::duration_cast<std::chrono::milliseconds>(now - n.seen)
              .count()},
         {"actors", n.actors.size()},
         {"cpu_seconds", n.usage.cpu_seconds.value},
         {"cpu_cores", n.cpu_cores},
         {"rss_bytes", n.usage.rss_bytes},
         {"threads", n.usage.threads},
         {"net_rx_bytes", n.usage.net_rx_bytes},
         {"net_tx_bytes", n.usage.net_tx_bytes},
         {"net_rx_per_sec", n.rx_per_sec},
         {"net_tx_per_sec", n.tx_per_sec},
         {"log", n.log_tail}});
  auto actors = nlohmann::json::array();
  std::map<std::pair<std::string, std::string>, std::uint64_t> links;
  for (auto& v : views) {
    auto& m = v.metrics;
    auto by_type = [](const std::vector<type_count>& xs) {
      auto o = nlohmann::json::object();
      for (auto& x : xs)
        o[x.type] = x.count;
      return o;
    };
    auto gauges = nlohmann::json::object();
    nlohmann::json per_sec = nullptr;
    for (auto& g : m.gauges) {
      if (g.name == "samples_per_sec")
        per_sec = g.value.value;
      else
        gauges[g.name] = g.value.value;
    }
    auto hists = nlohmann::json::object();
    for (auto& h : m.histograms)
      hists[h.name]
          = {{"bounds", h.bounds}, {"counts", h.counts}, {"sum", h.sum.value}};
    auto peers = nlohmann::json::array();
    for (auto& p : m.peers) {
      if (p.key == m.key)
        continue; // its own self-messages (a worker's step)
      auto i = names.find(p.key);
      peers.push_back({{"key", p.key},
                       {"name", i == names.end() ? p.key : i->second},
                       {"last_seen_ms", p.ago_ms},
                       {"messages", p.messages}});
      if (i == names.end())
        continue; // not a troupe actor (e.g. a CLI's scoped actor)
      auto pair = std::minmax(m.key, p.key);
      links[{pair.first, pair.second}] += p.messages;
    }
    actors.push_back(
        {{"key", m.key},
         {"name", m.name},
         {"role", m.role},
         {"node", v.node},
         {"state", v.state},
         {"activity", m.activity},
         {"mailbox", m.mailbox},
         {"mailbox_max", m.mailbox_max},
         {"messages_in", m.messages_in},
         {"messages_out", std::max(m.messages_out, received_from[m.key])},
         {"bytes_in", m.bytes_in},
         {"bytes_out", m.bytes_out},
         {"handler_ms", m.handler_ns / 1e6},
         {"handler_max_ms", m.handler_max_ns / 1e6},
         {"errors", m.errors},
         {"last_progress_ms", m.progress_ago_ms < 0
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(m.progress_ago_ms)},
         {"samples_per_sec", per_sec},
         {"received", by_type(m.received)},
         {"sent", by_type(m.sent)},
         {"gauges", gauges},
         {"histograms", hists},
         {"peers", peers}});
  }
  auto link_list = nlohmann::json::array();
  for (auto& [k, n] : links)
    link_list.push_back({{"from", k.first}, {"to", k.second}, {"messages", n}});
  return {{"nodes", nodes}, {"actors", actors}, {"links", link_list}};
}

namespace {

struct poll_state {
  std::shared_ptr<cluster_view> view;
  std::vector<metrics_source> sources;
  std::vector<bool> pending;
  std::chrono::milliseconds interval;
  probe_ref probe;
};

} // namespace

caf::behavior cluster_monitor(caf::event_based_actor* self,
                              std::shared_ptr<cluster_view> view,
                              std::vector<metrics_source> sources,
                              std::chrono::milliseconds interval,
                              caf::actor owner, std::vector<caf::actor> owned) {
  auto st = std::make_shared<poll_state>();
  st->probe = make_probe(self, "cluster monitor", "monitor", false);
  st->probe->activity("polling");
  st->view = std::move(view);
  st->sources = std::move(sources);
  st->pending.assign(st->sources.size(), false);
  st->interval = interval;
  // The view's time is this actor's clock while it runs.
  st->view->bind_clock(self->clock());
  self->attach_functor(
      [view = st->view, &c = self->clock()] { view->unbind_clock(c); });
  // Asks source i for its metrics; `then` runs after the answer or error.
  auto poll = [self, st](std::size_t i, std::function<void()> then) {
    st->pending[i] = true;
    self->request(st->sources[i].handle, caf::duration{st->interval * 2},
                  metrics_atom::value)
        .then(
            [self, st, i, then](node_metrics& m) {
              auto scope
                  = on_message(st->probe.get(), self, msg_type::metrics, 64);
              st->pending[i] = false;
              st->view->update(m);
              then();
            },
            [st, i, then](caf::error&) {
              st->probe->error();
              st->pending[i] = false;
              st->view->unreachable(st->sources[i].name);
              then();
            });
  };
  // When the job ends: one last poll (the final counts), then quit with the
  // owned actors.
  self->monitor(owner);
  self->set_down_handler([self, st, owned, poll](caf::down_msg&) {
    st->probe->activity("final poll");
    auto remaining = std::make_shared<std::size_t>(st->sources.size() + 1);
    auto one_done = [self, owned, remaining] {
      if (--*remaining > 0)
        return;
      for (auto& a : owned)
        self->send_exit(a, caf::exit_reason::user_shutdown);
      self->quit();
    };
    for (std::size_t i = 0; i < st->sources.size(); ++i)
      poll(i, one_done);
    one_done();
  });
  self->send(self, tick_atom::value);
  return {
      [self, st, poll](tick_atom) {
        for (std::size_t i = 0; i < st->sources.size(); ++i)
          if (!st->pending[i]) // else the last request is still out
            poll(i, [] {});
        self->delayed_send(self, st->interval, tick_atom::value);
      },
      // A node joined the running job: poll it too (from this process).
      [self, st](join_atom, const std::string& name, const caf::actor& agent) {
        if (!detail::from_here(self) || !agent)
          return;
        st->sources.push_back({name, agent});
        st->pending.push_back(false);
      },
  };
}

} // namespace troupe::actors
