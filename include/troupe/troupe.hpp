// troupe's umbrella header: the API an application builds on.
//
//   #include <troupe/troupe.hpp>
//
// Models and training math (optim/), running a job of worker actors
// (actors/job.hpp) with an algorithm from the registry (algos/), observing it
// (actors/events.hpp), probing one's own actors (actors/probe.hpp), and
// distributed nodes with monitoring (net/). Finer headers can be included on
// their own, e.g. <troupe/actors/probe.hpp>.

#pragma once

#include <troupe/actors/coordinator.hpp>
#include <troupe/actors/events.hpp>
#include <troupe/actors/job.hpp>
#include <troupe/actors/probe.hpp>
#include <troupe/algos/registry.hpp>
#include <troupe/messages/messages.hpp>
#include <troupe/net/monitor.hpp>
#include <troupe/net/node.hpp>
#include <troupe/net/system.hpp>
#include <troupe/optim/activation.hpp>
#include <troupe/optim/avg_pool2d.hpp>
#include <troupe/optim/conv2d.hpp>
#include <troupe/optim/dataset.hpp>
#include <troupe/optim/dense.hpp>
#include <troupe/optim/flatten.hpp>
#include <troupe/optim/layer.hpp>
#include <troupe/optim/max_pool2d.hpp>
#include <troupe/optim/optimizer.hpp>
#include <troupe/optim/param_hash.hpp>
#include <troupe/optim/relu.hpp>
#include <troupe/optim/replica.hpp>
#include <troupe/optim/schedule.hpp>
#include <troupe/optim/sequential.hpp>
#include <troupe/optim/trainer.hpp>
