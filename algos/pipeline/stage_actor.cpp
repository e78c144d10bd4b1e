#include "algos/pipeline/stage_actor.hpp"

#include <memory>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/detail/caller.hpp"
#include "algos/pipeline/stage_state.hpp"
#include "messages/pipeline.hpp"
#include "optim/model_spec.hpp"

namespace troupe::algos {

using namespace messages;
namespace {

/// The actor, named "pipeline_stage <s> of <replica>" in CAF's logs and
/// scheduler (a test finds the middle stage by it).
class stage_impl : public caf::event_based_actor {
public:
  stage_impl(caf::actor_config& cfg, stage_config config)
      : caf::event_based_actor(cfg),
        name_("pipeline_stage " + std::to_string(config.stage) + " of "
              + std::to_string(config.replica)),
        config_(std::move(config)) {}

  const char* name() const override {
    return name_.c_str();
  }

  caf::behavior make_behavior() override;

  /// Lets go of the other actors: stages hold their neighbours (and these
  /// them), so handles kept past the exit would keep both alive.
  void on_exit() override {
    state.head = state.prev = state.next = nullptr;
    state.cfg.shards.clear();
    state.early_batches.clear();
    state.early_tensors.clear();
    state.stage.reset();
  }

  stage_state state;

private:
  std::string name_;
  stage_config config_;
};

caf::behavior stage_behavior(stage_impl* self, stage_config cfg) {
  auto& st = self->state;
  st.self = self;
  st.cfg = std::move(cfg);
  if (!(st.cfg.share > 0)) // once, not per pass
    st.cfg.share = cost_share(
        optim::profile_layers(st.cfg.model, st.cfg.input, st.cfg.classes, 0),
        st.cfg.plan);
  auto model
      = optim::build_stage<float>(st.cfg.model, st.cfg.input, st.cfg.classes,
                                  st.cfg.plan.first, st.cfg.plan.last);
  st.regression = optim::model_loss(st.cfg.model) == optim::loss_kind::mse;
  st.in_rows = model.input_shape().size();
  st.out_rows = model.output_shape().size();
  st.stage = std::make_unique<optim::pipeline_stage<float>>(
      std::move(model), st.cfg.stash && st.one_f_one_b(),
      st.cfg.seed ^ (0x5743ull * (st.cfg.replica + 1)));
  st.versions.assign(st.cfg.shards.size(), 0);
  // (Short enough for a chart's legend.)
  st.probe = actors::make_probe(self,
                                "stage " + std::to_string(st.cfg.stage)
                                    + " of replica "
                                    + std::to_string(st.cfg.replica),
                                "stage", true);
  st.probe->activity("waiting");
  self->set_down_handler([self](caf::down_msg& msg) {
    if (msg.source == self->state.head.address())
      self->quit(); // the replica's head is gone: so is the replica
  });
  return {
      [self](stage_wiring_msg& w) {
        auto& st = self->state;
        auto scope
            = actors::on_message(st.probe.get(), self, actors::msg_type::setup,
                                 actors::small_message_bytes);
        if (!actors::detail::from_owner_node(self, st.cfg.owner)
            || w.stages.size() != st.cfg.stages || !w.head
            || w.generation <= st.generation) {
          ++st.fig.refused;
          return;
        }
        st.rewire(w);
      },
      [self](stage_batch_msg& b) {
        auto& st = self->state;
        auto scope = actors::on_message(st.probe.get(), self, stage_kind(),
                                        4 * b.x.size() + 64);
        st.take(b, caf::actor_cast<caf::actor_addr>(self->current_sender()));
      },
      [self](stage_tensor_msg& t) {
        auto& st = self->state;
        auto scope = actors::on_message(st.probe.get(), self, stage_kind(),
                                        4 * t.values.size() + 64);
        st.take(t, caf::actor_cast<caf::actor_addr>(self->current_sender()));
      },
  };
}

caf::behavior stage_impl::make_behavior() {
  return stage_behavior(this, std::move(config_));
}

} // namespace

double cost_share(const std::vector<optim::layer_profile>& layers,
                  const optim::stage_plan& plan) {
  double flops = 0, all_flops = 0, params = 0, all_params = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const bool mine = i >= plan.first && i < plan.last;
    all_flops += layers[i].flops;
    all_params += static_cast<double>(layers[i].params);
    if (mine) {
      flops += layers[i].flops;
      params += static_cast<double>(layers[i].params);
    }
  }
  if (all_flops > 0)
    return flops / all_flops;
  return all_params > 0 ? params / all_params : 1.0;
}

caf::actor spawn_stage(caf::actor_system& sys, stage_config config) {
  return sys.spawn<stage_impl>(std::move(config));
}

} // namespace troupe::algos
