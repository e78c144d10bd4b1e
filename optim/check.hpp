// The project's one check macro for broken invariants (bugs, not expected
// failures; those are exceptions naming the problem in optim/ and typed
// caf::errors between actors: docs/errors.md). It needs neither CAF nor
// Eigen, so optim/, messages/, actors/, net/ and apps/ all use it.
//
// A failed check throws std::logic_error instead of aborting: optim/ code
// runs inside actors, and an exception leaving a handler is caught by CAF
// (the actor ends with an error its monitor reports, the coordinator ends
// the job with it, keeping what was learned) while abort() would take the
// whole process down with every other role of the node and no report. The
// callers' existing handlers of std::logic_error (and tests) keep working.

#pragma once

#include <string>

namespace troupe::optim {

/// Throws std::logic_error("FILE:LINE: check failed: COND: WHAT"), FILE
/// being the last two components of `file` ("optim/lbfgs.cpp").
[[noreturn]] void check_failed(const char* file, int line, const char* cond,
                               const std::string& what);

} // namespace troupe::optim

/// Checks an invariant: if `cond` is false, throws std::logic_error naming
/// the file, the line, the condition and `msg` (evaluated only then).
#define TROUPE_CHECK(cond, msg)                                                \
  do {                                                                         \
    if (!(cond))                                                               \
      ::troupe::optim::check_failed(__FILE__, __LINE__, #cond, (msg));         \
  } while (false)
