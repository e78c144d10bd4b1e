// The cluster's actors as Prometheus metric families (part of GET /metrics):
// built at each scrape from the cluster view's latest snapshots.

#pragma once

#include <vector>

#include <prometheus/metric_family.h>

#include "actors/monitor.hpp"

namespace troupe::net {

/// troupe_actor_* families, labelled by actor, role and node.
std::vector<prometheus::MetricFamily>
actor_families(const std::vector<actors::cluster_view::actor_view>& actors);

} // namespace troupe::net
