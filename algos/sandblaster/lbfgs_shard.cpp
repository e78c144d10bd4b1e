#include "algos/sandblaster/lbfgs_shard.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "algos/sandblaster/detail/lbfgs_state.hpp"
#include "messages/errors.hpp"

namespace troupe::algos {

using namespace messages;

namespace {

using self_ptr = lbfgs_shard_actor::stateful_pointer<lbfgs_shard_state>;

std::size_t slots_of(const lbfgs_shard_state& st) {
  return 4 + 2 * st.config.memory + 1;
}

/// Adds the waiting portions to the trial gradient in id order: those that
/// continue the added prefix, or (at the end of the pass, `all`) every one.
void fold(lbfgs_shard_state& st, bool all) {
  auto& gt = st.store->slot(slot_trial_gradient(st.config.memory));
  while (!st.parts.empty()
         && (all || st.parts.begin()->first == st.next_fold)) {
    auto& [id, part] = *st.parts.begin();
    st.folded_samples += part.first;
    for (std::size_t i = 0; i < gt.size(); ++i)
      gt[i] += part.second[i];
    st.next_fold = id + 1;
    st.parts.erase(st.parts.begin());
  }
}

/// Whether the message being handled comes from the shard's driver.
bool from_driver(self_ptr self) {
  const auto& sender = self->current_sender();
  return sender != nullptr && self->state.config.driver
         && caf::actor_cast<caf::actor_addr>(sender)
                == self->state.config.driver;
}

std::string name_of(const lbfgs_shard_state& st) {
  return "lbfgs shard " + std::to_string(st.config.index);
}

double run(lbfgs_shard_state& st, std::uint8_t op, std::uint32_t a,
           std::uint32_t b, double alpha) {
  using vop = optim::vector_command::op;
  if (op > static_cast<std::uint8_t>(vop::copy) || a >= slots_of(st)
      || (op != static_cast<std::uint8_t>(vop::scale) && b >= slots_of(st)))
    throw std::invalid_argument("bad vector command " + std::to_string(op)
                                + " on slots " + std::to_string(a) + ", "
                                + std::to_string(b));
  return st.store->run({static_cast<vop>(op), a, b, alpha});
}

} // namespace

lbfgs_shard_actor::behavior_type lbfgs_shard(self_ptr self,
                                             lbfgs_shard_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  auto n = st.config.range.size;
  st.store = std::make_unique<optim::dense_store>(n, st.config.memory, 1);
  auto& x = st.store->slot(optim::slot_x);
  for (std::size_t i = 0; i < n && st.config.init; ++i)
    x[i] = (*st.config.init).at(st.config.range.offset + i);
  st.point = x;
  st.probe = actors::make_probe(
      self, "lbfgs shard " + std::to_string(st.config.index), "shard", false);
  return {
      [self](const lbfgs_vec_msg& c) -> caf::result<real> {
        auto scope
            = on_message(self->state.probe.get(), self, actors::msg_type::other,
                         actors::small_message_bytes);
        try {
          return real{run(self->state, c.op, c.a, c.b, c.alpha.value)};
        } catch (const std::invalid_argument& e) {
          return make_error(errc::bad_request, e.what());
        }
      },
      [self](point_atom, std::uint64_t pass, real t) {
        auto& st = self->state;
        auto& x = st.store->slot(optim::slot_x);
        auto& d = st.store->slot(optim::slot_d);
        for (std::size_t i = 0; i < x.size(); ++i)
          st.point[i] = x[i] + t.value * d[i];
        st.pass = pass;
        st.parts.clear();
        st.counted.clear();
        st.next_fold = 0;
        st.folded_samples = 0;
        auto& gt = st.store->slot(slot_trial_gradient(st.config.memory));
        std::fill(gt.begin(), gt.end(), 0.0);
        return ack_atom::value;
      },
      [self](point_atom) -> caf::result<lbfgs_point_msg> {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, actors::msg_type::fetch,
                                actors::small_message_bytes);
        return lbfgs_point_msg{st.pass,
                               pack_doubles(st.point.data(), st.point.size())};
      },
      [self](const lbfgs_grad_msg& m) -> bool {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, actors::msg_type::push,
                                m.values.size() + actors::small_message_bytes);
        auto portion = m.portion;
        if (m.pass != st.pass) {
          ++st.stale;
          return false;
        }
        if (st.counted.count(portion)) {
          ++st.duplicates; // a backup's twin: the first result counted
          return false;
        }
        try {
          auto g = unpack_doubles(m.values);
          if (g.size() != st.point.size())
            throw std::invalid_argument(std::to_string(g.size())
                                        + " values for a slice of "
                                        + std::to_string(st.point.size()));
          st.counted.insert(portion);
          st.parts.emplace(portion, std::make_pair(m.samples, std::move(g)));
          fold(st, false);
          return true;
        } catch (const std::invalid_argument& e) {
          ++st.malformed;
          actors::detail::log().warn("lbfgs shard {}: refusing portion {}: {}",
                                     st.config.index, portion, e.what());
          return false;
        }
      },
      [self](sum_atom, std::uint64_t pass) -> caf::result<std::uint64_t> {
        auto& st = self->state;
        if (pass != st.pass)
          return make_error(errc::stale,
                            "lbfgs shard " + std::to_string(st.config.index)
                                + ": sum of pass " + std::to_string(pass)
                                + ", not the current "
                                + std::to_string(st.pass));
        fold(st, true);
        if (st.probe) {
          st.probe->gauge("duplicates", static_cast<double>(st.duplicates));
          st.probe->gauge("malformed", static_cast<double>(st.malformed));
          st.probe->gauge("stale", static_cast<double>(st.stale));
        }
        auto& gt = st.store->slot(slot_trial_gradient(st.config.memory));
        if (st.folded_samples > 0)
          for (auto& v : gt)
            v /= static_cast<double>(st.folded_samples);
        return static_cast<std::uint64_t>(st.counted.size());
      },
      [self](accept_atom) {
        auto& st = self->state;
        auto& x = st.store->slot(optim::slot_x);
        auto& g = st.store->slot(optim::slot_g);
        auto& gt = st.store->slot(slot_trial_gradient(st.config.memory));
        auto n = x.size();
        st.scratch_s.resize(n);
        st.scratch_y.resize(n);
        double sy = 0, yy = 0, ss = 0;
        for (std::size_t i = 0; i < n; ++i) {
          st.scratch_s[i] = st.point[i] - x[i];
          st.scratch_y[i] = gt[i] - g[i];
          sy += st.scratch_s[i] * st.scratch_y[i];
          yy += st.scratch_y[i] * st.scratch_y[i];
          ss += st.scratch_s[i] * st.scratch_s[i];
        }
        x = st.point;
        g = gt;
        return std::vector<real>{real{sy}, real{yy}, real{ss}};
      },
      [self](keep_atom, std::uint32_t pos) -> caf::result<ack_atom> {
        auto& st = self->state;
        if (pos >= st.config.memory)
          return make_error(errc::bad_request,
                            "lbfgs shard " + std::to_string(st.config.index)
                                + ": ring position " + std::to_string(pos)
                                + " out of range");
        st.store->slot(optim::slot_s(pos)) = st.scratch_s;
        st.store->slot(optim::slot_y(pos)) = st.scratch_y;
        return ack_atom::value;
      },
      [self](result_atom) {
        auto& x = self->state.store->slot(optim::slot_x);
        return lbfgs_point_msg{self->state.pass,
                               pack_doubles(x.data(), x.size())};
      },
      [self](save_atom) -> caf::result<std::string> {
        auto& st = self->state;
        if (!from_driver(self))
          return actors::detail::refuse(self, name_of(st), "save",
                                        "its driver");
        auto scope = on_message(st.probe.get(), self, actors::msg_type::other,
                                actors::small_message_bytes);
        return detail::save_lbfgs_shard(st);
      },
      [self](resume_atom, const std::string& bytes) -> caf::result<ack_atom> {
        auto& st = self->state;
        if (!from_driver(self))
          return actors::detail::refuse(self, name_of(st), "resume",
                                        "its driver");
        try {
          detail::load_lbfgs_shard(
              st, bytes, "shard-" + std::to_string(st.config.index) + ".state");
        } catch (const std::exception& e) {
          return make_error(errc::bad_request, e.what());
        }
        return ack_atom::value;
      },
  };
}

} // namespace troupe::algos
