#include "algos/lsgd/lsgd_run.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "algos/lsgd/leader_board.hpp"

namespace troupe::algos {

using namespace actors;

lsgd_run::lsgd_run(optim::lsgd_options settings,
                   std::vector<std::uint32_t> group_of)
    : settings_(settings), group_of_(std::move(group_of)) {
  // nothing else
}

void lsgd_run::provision(coordinator_ptr self, std::function<void()> ready) {
  auto& st = self->state;
  auto& c = st.config;
  auto group_of
      = group_of_.size() == c.workers
            ? group_of_
            : lsgd_groups(c.workers, settings_.groups, c.placement.worker_node);
  std::uint32_t groups = 0;
  for (auto g : group_of)
    groups = std::max(groups, g + 1);
  if (!resumed_from_.empty() && group_states_.size() != groups) {
    actors::detail::placement_failed(
        self, "cannot resume from " + resumed_from_ + ": it holds the state of "
                  + std::to_string(group_states_.size())
                  + " LSGD groups, this job has " + std::to_string(groups));
    return;
  }
  record_ = std::make_shared<lsgd_record>();
  record_->groups.resize(groups);
  coordinator_actor me = self;
  for (std::uint32_t g = 0; g < groups; ++g) {
    group_leader_config gc;
    gc.group = g;
    for (std::uint32_t w = 0; w < c.workers; ++w)
      if (group_of[w] == g) {
        gc.ids.push_back(w);
        gc.members.push_back(caf::actor_cast<lsgd_member_actor>(st.workers[w]));
      }
    gc.lambda = settings_.lambda;
    gc.timeout = c.request_timeout;
    gc.record = record_;
    gc.coordinator = me;
    if (g < group_states_.size())
      gc.state = group_states_[g];
    group_leaders_.push_back(self->spawn(group_leader, std::move(gc)));
  }
  leader_board_config bc;
  bc.opts = settings_;
  bc.opts.groups = groups;
  for (auto& w : st.workers)
    bc.workers.push_back(caf::actor_cast<lsgd_member_actor>(w));
  bc.groups = group_leaders_;
  bc.timeout = c.request_timeout;
  bc.record = record_;
  bc.coordinator = me;
  bc.state = board_state_;
  board_ = self->spawn(leader_board, std::move(bc));
  ready();
}

caf::actor lsgd_run::evaluation_source() const {
  return caf::actor_cast<caf::actor>(board_);
}

std::uint32_t lsgd_run::groups() const noexcept {
  return static_cast<std::uint32_t>(group_leaders_.size());
}

void lsgd_run::on_steps(coordinator_ptr self, std::uint64_t total) {
  if (!board_)
    return;
  // The board decides which rounds are due (rounds_at).
  const auto& c = self->state.config;
  auto w = std::uint64_t{c.workers};
  if (total % (w * settings_.tau) == 0 || total % (w * settings_.tau_g) == 0)
    self->send(board_, messages::round_atom::value, total);
}

void lsgd_run::quiesce(coordinator_ptr self,
                       std::function<void(std::string)> done) {
  if (!board_)
    return done({});
  // A round waits at most for its groups (three timeouts) and its global
  // broadcast.
  auto wait = self->state.config.request_timeout;
  wait.count *= 5;
  self->request(board_, wait, messages::pause_atom::value)
      .then([done](messages::ack_atom) { done({}); },
            [self, done](caf::error& err) {
              done("the LSGD leader board did not end its round: "
                   + self->system().render(err));
            });
}

void lsgd_run::save(coordinator_ptr self,
                    std::function<void(state_files, std::string)> done) {
  std::vector<saved_role> roles;
  for (std::uint32_t g = 0; g < group_leaders_.size(); ++g)
    roles.push_back({caf::actor_cast<caf::actor>(group_leaders_[g]),
                     group_leader_file(g),
                     "LSGD group leader " + std::to_string(g)});
  roles.push_back({caf::actor_cast<caf::actor>(board_), leader_board_file(),
                   "the LSGD leader board"});
  save_roles(self, std::move(roles), std::move(done));
}

void lsgd_run::resume(coordinator_ptr self) {
  if (board_)
    self->send(board_, messages::resume_atom::value);
}

void lsgd_run::restore(const resume_point& from) {
  resumed_from_ = from.path;
  auto read = [&](const std::string& file) -> const std::string& {
    auto it = from.files.find(file);
    if (it == from.files.end())
      throw optim::data_error(from.path + ": no " + file);
    return it->second;
  };
  board_state_ = std::make_shared<const leader_board_saved>(
      decode_leader_board(read(leader_board_file()), leader_board_file()));
  group_states_.clear();
  for (std::uint32_t g = 0; from.files.count(group_leader_file(g)); ++g) {
    auto file = group_leader_file(g);
    auto s = decode_group_leader(read(file), file);
    if (s.group != g)
      throw optim::data_error(file + ": the state of group "
                              + std::to_string(s.group));
    group_states_.push_back(std::make_shared<const group_leader_saved>(s));
  }
}

void lsgd_run::stop(coordinator_ptr self) {
  for (auto& g : group_leaders_)
    self->send_exit(g, caf::exit_reason::user_shutdown);
  if (board_)
    self->send_exit(board_, caf::exit_reason::user_shutdown);
}

void lsgd_run::report(const coordinator_state&, nlohmann::json& out,
                      std::uint64_t& messages, std::uint64_t& bytes) const {
  if (!record_)
    return;
  auto leaders = record_->to_json();
  messages += leaders.value("messages", std::uint64_t{0});
  bytes += leaders.value("bytes", std::uint64_t{0});
  out["leader_changes"] = record_->changes();
  out["leaders"] = std::move(leaders);
}

} // namespace troupe::algos
