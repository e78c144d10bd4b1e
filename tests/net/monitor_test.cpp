// The job monitor turns a job's events into Prometheus metrics and curves.

#include <catch2/catch.hpp>

#include "actors/coordinator.hpp"
#include "net/monitor.hpp"

using namespace troupe;

TEST_CASE("steps, evaluations and failures become metrics and series") {
  net::job_monitor m;
  m.set_step_interval(2);
  for (std::uint64_t s = 1; s <= 3; ++s) {
    m.on_step({0, s, 64, 2.0 / s, 0.1 * s});
    m.on_step({1, s, 32, 1.0, 0.1 * s});
  }
  m.on_evaluation({6, 288, 0.7, 0.81, 0.55});
  actors::failure_record lost;
  lost.role = "worker";
  m.on_failure(lost);
  auto text = m.metrics_text();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("# TYPE troupe_worker_steps_total counter"));
  CHECK_THAT(text,
             Catch::Contains("troupe_worker_steps_total{worker=\"0\"} 3"));
  CHECK_THAT(text,
             Catch::Contains("troupe_worker_samples_total{worker=\"1\"} 96"));
  CHECK_THAT(text, Catch::Contains("troupe_test{metric=\"accuracy\"} 0.81"));
  CHECK_THAT(text, Catch::Contains("troupe_failures_total{role=\"worker\"} 1"));
  CHECK_THAT(text, Catch::Contains("troupe_job_running 1"));
  m.on_finish("{}");
  CHECK_THAT(m.metrics_text(), Catch::Contains("troupe_job_running 0"));
  auto s = m.series();
  // 6 steps, one point every 2.
  REQUIRE(s["train"].size() == 3);
  CHECK(s["train"][2]["steps"] == 6);
  CHECK(s["train"][2]["samples"] == 288);
  REQUIRE(s["evaluations"].size() == 1);
  CHECK(s["evaluations"][0]["accuracy"] == 0.81);
}
