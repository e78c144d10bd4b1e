// troupe eval and troupe predict: a model saved by troupe train --save (or
// into --report) rebuilt from its file and put to use.

#pragma once

#include <string>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/model_file.hpp"

namespace troupe::apps {

/// Entry point of `troupe eval --model=FILE [--data=SPEC]`: evaluates the
/// model on the data's test set (the run's data by default), scaled as the
/// run scaled it; prints JSON on stdout and a line on stderr. Returns the
/// exit status (0 ok, 1 runtime error, 2 usage error).
int eval_main(const std::vector<std::string>& args);

/// Entry point of `troupe predict --model=FILE --input=FILE|- [--top=K]`:
/// one line per example with its most probable classes.
int predict_main(const std::vector<std::string>& args);

/// Loads --model's file for `command`; throws usage_error if the flag is
/// missing or names no file, optim::data_error if the file is not a model.
optim::loaded_model load_model_flag(const std::string& command,
                                    const std::string& path);

/// Applies the scaling a model was trained with to `x` (as
/// optim::standardize did to the run's data).
void scale_inputs(optim::matrix<float>& x, const optim::scaling& s);

} // namespace troupe::apps
