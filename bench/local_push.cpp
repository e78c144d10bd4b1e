// Cost of one local push: an event-based sender sends a push_msg by std::move
// to a local event-based actor, which reads values.size() and replies with the
// tensor moved back, for payloads of 1 KB to 16 MB; one push is the median
// send + reply round trip. The sender rebuilds each push from the returned
// buffer, so the timed path neither allocates nor copies the payload (checked:
// the buffer must come back at its original address). For reference, a memcpy
// of the same bytes is timed in the same run. Prints one JSON object on stdout;
// progress goes to stderr.
//
//   local_push

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <nlohmann/json.hpp>

#include "messages/messages.hpp"
#include "messages/registry.hpp"

namespace {

using namespace troupe;
using clock_type = std::chrono::steady_clock;

struct config : caf::actor_system_config {
  config() {
    messages::register_types(*this);
    set("scheduler.max-threads", 2);
  }
};

double micros(clock_type::time_point t0, clock_type::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

double median(std::vector<double> xs) {
  auto mid = xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  return *mid;
}

/// Keeps the copies observable so the compiler cannot drop them.
volatile float sink = 0;

/// memcpy called through a volatile pointer: no repeated copy can be merged.
void* (*volatile copy_fn)(void*, const void*, std::size_t) = std::memcpy;

/// Median microseconds of one memcpy of `bytes`; small copies are timed in
/// batches (at least 256 KB per sample) to stay well above clock overhead.
double copy_median(std::size_t bytes, std::size_t iterations) {
  std::vector<float> src(bytes / sizeof(float), 1.0f);
  std::vector<float> dst(src.size(), 0.0f);
  const std::size_t reps = std::max<std::size_t>(1, (256u << 10) / bytes);
  std::vector<double> samples;
  samples.reserve(iterations);
  for (std::size_t i = 0; i < iterations; ++i) {
    src[i % src.size()] = static_cast<float>(i);
    auto t0 = clock_type::now();
    for (std::size_t r = 0; r < reps; ++r)
      copy_fn(dst.data(), src.data(), bytes);
    auto t1 = clock_type::now();
    sink = sink + dst[i % dst.size()];
    samples.push_back(micros(t0, t1) / static_cast<double>(reps));
  }
  return median(std::move(samples));
}

/// State of a pusher's current run.
struct run_state {
  caf::actor receiver;
  std::vector<float> buf;
  const float* original = nullptr;
  std::size_t size = 0;
  std::size_t todo = 0;
  std::size_t warmup = 0;
  std::vector<double> samples;
  clock_type::time_point t0;
  caf::response_promise rp;
};

/// An event-based sender: on (bytes, iterations) it pushes a buffer of that
/// many bytes to `receiver` by std::move, warmup + iterations times, each push
/// after the previous reply, and answers with the median round trip in
/// microseconds, or -1 if the payload ever came back copied or reallocated.
caf::behavior pusher(caf::event_based_actor* self, caf::actor receiver) {
  auto st = std::make_shared<run_state>();
  st->receiver = std::move(receiver);
  auto push_one = [self, st] {
    st->t0 = clock_type::now();
    messages::push_msg p;
    p.seq = st->samples.size();
    p.values = messages::tensor{std::move(st->buf)};
    self->send(st->receiver, std::move(p));
  };
  return {[=](std::uint64_t bytes, std::uint64_t iterations) {
            st->size = bytes / sizeof(float);
            st->buf.assign(st->size, 1.0f);
            st->original = st->buf.data();
            st->warmup = 20;
            st->todo = st->warmup + iterations;
            st->samples.clear();
            st->samples.reserve(iterations);
            st->rp = self->make_response_promise();
            push_one();
            return st->rp;
          },
          [=](messages::tensor& t) {
            auto t1 = clock_type::now();
            st->buf = std::move(t.values());
            if (st->buf.data() != st->original || st->buf.size() != st->size) {
              st->rp.deliver(-1.0);
              return;
            }
            if (st->warmup > 0)
              --st->warmup;
            else
              st->samples.push_back(micros(st->t0, t1));
            if (--st->todo > 0)
              push_one();
            else
              st->rp.deliver(median(std::move(st->samples)));
          }};
}

} // namespace

int main() {
  config cfg;
  caf::actor_system sys{cfg};
  auto receiver = sys.spawn([]() -> caf::behavior {
    return {[](messages::push_msg& p) {
      volatile std::size_t n = p.values.size();
      (void)n;
      return std::move(p.values);
    }};
  });
  auto sender = sys.spawn(pusher, receiver);
  caf::scoped_actor self{sys};
  const std::size_t sizes[]
      = {1u << 10, 16u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  double push_1k = 0, push_16m = 0;
  for (auto bytes : sizes) {
    const std::size_t iterations = bytes <= (16u << 10)    ? 2000
                                   : bytes <= (256u << 10) ? 1000
                                                           : 200;
    std::cerr << "local_push: " << bytes << " bytes, " << iterations
              << " iterations" << std::endl;
    double push = -1;
    self->request(sender, std::chrono::seconds(60), std::uint64_t{bytes},
                  std::uint64_t{iterations})
        .receive([&](double x) { push = x; },
                 [&](caf::error& e) {
                   std::cerr << "local_push: " << sys.render(e) << '\n';
                 });
    if (push < 0) {
      std::cerr << "local_push: the payload was copied, or no reply, at "
                << bytes << " bytes\n";
      return 1;
    }
    auto copy = copy_median(bytes, iterations);
    if (bytes == (1u << 10))
      push_1k = push;
    if (bytes == (16u << 20))
      push_16m = push;
    rows.push_back({{"bytes", bytes},
                    {"push_us_median", push},
                    {"copy_us_median", copy},
                    {"iterations", iterations}});
  }
  self->send_exit(sender, caf::exit_reason::user_shutdown);
  self->send_exit(receiver, caf::exit_reason::user_shutdown);
  nlohmann::ordered_json out{{"benchmark", "local_push"},
                             {"sizes", rows},
                             {"push_16MB_over_1KB", push_16m / push_1k}};
  std::cout << out.dump() << std::endl;
  return 0;
}
