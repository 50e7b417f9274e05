// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file pass.hpp
/// Umbrella header of the pass infrastructure: the pass concept and facts, the context,
/// compile-time pipelines, instrumentation, the run-time registry (with the built-in passes).

#include <gpass/pass/any_pass.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/dynamic_pipeline.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/fixed_point.hpp>
#include <gpass/pass/held_facts.hpp>
#include <gpass/pass/instrumentation.hpp>
#include <gpass/pass/options.hpp>
#include <gpass/pass/pass.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/pipeline.hpp>
#include <gpass/pass/registry.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/builtin.hpp>  // pass_registry<G>::global() needs register_builtin_passes
