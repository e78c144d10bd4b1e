// The job's common flags (add_job_flags, declared in train_command.hpp) and
// the per-model defaults they and the checks of `troupe train` share.

#pragma once

#include <string>

namespace troupe::apps {

/// Per-model defaults, tuned on Fashion-MNIST (see docs/benchmarks.md); the
/// one place they are written, --help included.
struct model_defaults {
  const char* model;
  double lr;
  double epochs;
  double lr_decay;
  double lr_step_epochs;
};

/// The defaults of the built-in model `label` (a model description's
/// label: optim::model_label); mlp's for any other.
const model_defaults& defaults_for(const std::string& label);

} // namespace troupe::apps
