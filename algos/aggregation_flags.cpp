#include "algos/aggregation_flags.hpp"

#include <algorithm>
#include <stdexcept>

#include <caf/config_option_set.hpp>

namespace troupe::algos {

void aggregation_flags::bind(caf::config_option_set& set,
                             caf::string_view category, combining what) {
  // CAF copies a description.
  std::string text, radius;
  std::vector<std::string> rules = optim::aggregation_rule_names();
  switch (what) {
  case combining::pushes:
    text = "how a shard combines a round's pushes";
    radius = "around the last aggregate";
    break;
  case combining::group:
    text = "robust mixing, how a group's models are combined (cclip: "
           "ClippedGossip around the member's own)";
    radius = "around the member's own model";
    break;
  case combining::shares:
    text = "robust mixing; cclip: each share's model clipped to a radius "
           "around this peer's (clipped gossip)";
    radius = "around this peer's model";
    rules = {"mean", "cclip"};
    break;
  }
  std::string names;
  for (const auto& n : rules)
    names += (names.empty() ? "" : " | ") + n;
  text += ": " + names + " (default mean)";
  radius = "cclip: clipping radius " + radius + " (default 1)";
  set.add(rule, category, "aggregation",
          caf::string_view{text.data(), text.size()});
  if (what != combining::shares) {
    bool pushes = what == combining::pushes;
    std::string f_text = pushes ? "krum, multi_krum, trimmed_mean, cge: "
                                  "Byzantine pushes tolerated per round "
                                  "(default 0)"
                                : "krum, multi_krum, trimmed_mean, cge: "
                                  "Byzantine members tolerated per group "
                                  "(default 0)";
    std::string m_text = pushes ? "multi_krum: pushes averaged (default "
                                  "workers - agg-f)"
                                : "multi_krum: models averaged (default "
                                  "group size - agg-f)";
    set.add(f, category, "agg-f",
            caf::string_view{f_text.data(), f_text.size()})
        .add(m, category, "agg-m",
             caf::string_view{m_text.data(), m_text.size()});
  }
  set.add(clip_radius, category, "agg-clip-radius",
          caf::string_view{radius.data(), radius.size()});
  if (what == combining::pushes)
    set.add(clip_iterations, category, "agg-clip-iterations",
            "cclip: clipping iterations per round (default 3)");
}

void aggregation_flags::check(const std::set<std::string>& given,
                              std::uint64_t workers,
                              const std::string& counted) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  try {
    optim::make_aggregation_rule(rule, options());
  } catch (const std::invalid_argument& e) {
    fail(std::string{"--aggregation: "} + e.what());
  }
  bool uses_f = rule == "krum" || rule == "multi_krum" || rule == "trimmed_mean"
                || rule == "cge";
  if (given.count("agg-f") && !uses_f)
    fail("--agg-f applies to --aggregation=krum, multi_krum, trimmed_mean "
         "and cge (median, geomed, cclip and licm need no f)");
  if (given.count("agg-m") && rule != "multi_krum")
    fail("--agg-m applies to --aggregation=multi_krum");
  if ((given.count("agg-clip-radius") || given.count("agg-clip-iterations"))
      && rule != "cclip")
    fail("--agg-clip-radius and --agg-clip-iterations apply to "
         "--aggregation=cclip");
  auto w = std::to_string(workers), fs = std::to_string(f);
  if ((rule == "krum" || rule == "multi_krum") && workers <= 2 * f + 2)
    fail("--aggregation=" + rule + " with --agg-f=" + fs + " needs more than "
         + std::to_string(2 * f + 2) + " " + counted + " (2f + 2), not " + w);
  if (rule == "trimmed_mean" && workers <= 2 * f)
    fail("--aggregation=trimmed_mean with --agg-f=" + fs
         + " trims 2f values a coordinate and needs more than "
         + std::to_string(2 * f) + " " + counted + ", not " + w);
  if (rule == "cge" && workers <= f)
    fail("--aggregation=cge with --agg-f=" + fs + " needs more than " + fs + " "
         + counted + ", not " + w);
  if (rule == "multi_krum" && m > workers)
    fail("--agg-m=" + std::to_string(m) + " is above the " + counted + ", "
         + w);
}

optim::rule_options aggregation_flags::options() const {
  optim::rule_options o;
  o.f = static_cast<std::uint32_t>(std::min<std::uint64_t>(f, 2000000));
  o.m = static_cast<std::uint32_t>(std::min<std::uint64_t>(m, 2000000));
  o.clip_radius = clip_radius;
  o.clip_iterations = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(clip_iterations, 1000));
  return o;
}

} // namespace troupe::algos
