#include "net/monitor_export.hpp"

#include <limits>
#include <map>

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

namespace troupe::net {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

/// Keeps families in first-use order, each built once.
class families {
public:
  MetricFamily& get(const std::string& name, const std::string& help,
                    MetricType type) {
    auto i = index_.find(name);
    if (i != index_.end())
      return out_[i->second];
    index_[name] = out_.size();
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }

  std::vector<MetricFamily> take() {
    return std::move(out_);
  }

private:
  std::map<std::string, std::size_t> index_;
  std::vector<MetricFamily> out_;
};

/// Prometheus metric names: [a-zA-Z_:][a-zA-Z0-9_:]*.
std::string metric_name(const std::string& s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

ClientMetric with_labels(const std::vector<ClientMetric::Label>& base,
                         std::initializer_list<ClientMetric::Label> extra
                         = {}) {
  ClientMetric m;
  m.label = base;
  m.label.insert(m.label.end(), extra.begin(), extra.end());
  return m;
}

void add_counter(families& f, const std::string& name, const std::string& help,
                 ClientMetric m, double v) {
  m.counter.value = v;
  f.get(name, help, MetricType::Counter).metric.push_back(std::move(m));
}

void add_gauge(families& f, const std::string& name, const std::string& help,
               ClientMetric m, double v) {
  m.gauge.value = v;
  f.get(name, help, MetricType::Gauge).metric.push_back(std::move(m));
}

} // namespace

std::vector<MetricFamily>
actor_families(const std::vector<actors::cluster_view::actor_view>& actors) {
  families f;
  // The peers' names, for the last-seen gauge.
  std::map<std::string, std::string> names;
  for (auto& v : actors)
    names[v.metrics.key] = v.metrics.name;
  for (auto& v : actors) {
    auto& m = v.metrics;
    std::vector<ClientMetric::Label> base{
        {"actor", m.name}, {"role", m.role}, {"node", v.node}};
    add_gauge(f, "troupe_actor_state",
              "1 for the actor's state: ok, idle, stuck, done or lost",
              with_labels(base, {{"state", v.state}}), 1);
    for (auto& t : m.received) {
      add_counter(f, "troupe_actor_messages_received_total",
                  "Messages an actor handled, by type",
                  with_labels(base, {{"type", t.type}}),
                  static_cast<double>(t.count));
      add_counter(f, "troupe_actor_received_bytes_total",
                  "Bytes of the messages an actor handled, by type",
                  with_labels(base, {{"type", t.type}}),
                  static_cast<double>(t.bytes));
    }
    for (auto& t : m.sent) {
      add_counter(f, "troupe_actor_messages_sent_total",
                  "Messages an actor sent, by type",
                  with_labels(base, {{"type", t.type}}),
                  static_cast<double>(t.count));
      add_counter(f, "troupe_actor_sent_bytes_total",
                  "Bytes of the messages an actor sent, by type",
                  with_labels(base, {{"type", t.type}}),
                  static_cast<double>(t.bytes));
    }
    add_counter(f, "troupe_actor_handler_seconds_total",
                "Time an actor spent in its message handlers",
                with_labels(base), m.handler_ns / 1e9);
    add_gauge(f, "troupe_actor_handler_max_seconds",
              "An actor's longest message handler", with_labels(base),
              m.handler_max_ns / 1e9);
    add_gauge(f, "troupe_actor_mailbox",
              "Messages waiting in an actor's mailbox (at its last message)",
              with_labels(base), static_cast<double>(m.mailbox));
    add_gauge(f, "troupe_actor_mailbox_max",
              "The deepest an actor's mailbox has been", with_labels(base),
              static_cast<double>(m.mailbox_max));
    add_counter(f, "troupe_actor_errors_total",
                "Errors an actor met (failed requests, rejected input)",
                with_labels(base), static_cast<double>(m.errors));
    if (m.progress_ago_ms >= 0)
      add_gauge(f, "troupe_actor_progress_age_seconds",
                "Seconds since the actor last made progress", with_labels(base),
                m.progress_ago_ms / 1e3);
    for (auto& g : m.gauges)
      add_gauge(f, "troupe_actor_value",
                "Algorithm gauges of an actor (steps, samples, version, "
                "samples_per_sec, ...)",
                with_labels(base, {{"name", g.name}}), g.value.value);
    for (auto& p : m.peers) {
      auto i = names.find(p.key);
      add_gauge(
          f, "troupe_actor_peer_last_seen_seconds",
          "Seconds since an actor last heard from a peer",
          with_labels(base, {{"peer", i == names.end() ? p.key : i->second}}),
          p.ago_ms / 1e3);
    }
    for (auto& h : m.histograms) {
      ClientMetric c = with_labels(base);
      std::uint64_t cumulative = 0;
      for (std::size_t b = 0; b < h.counts.size(); ++b) {
        cumulative += h.counts[b];
        double bound = b < h.bounds.size()
                           ? static_cast<double>(h.bounds[b])
                           : std::numeric_limits<double>::infinity();
        c.histogram.bucket.push_back({cumulative, bound});
      }
      c.histogram.sample_count = cumulative;
      c.histogram.sample_sum = h.sum.value;
      f.get("troupe_" + metric_name(h.name),
            "Histogram of " + h.name + " observed by the actor",
            MetricType::Histogram)
          .metric.push_back(std::move(c));
    }
  }
  return f.take();
}

} // namespace troupe::net
