// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file session.hpp
/// The session layer: `gpass::session` and its parts (device names, feed/fetch rewrite,
/// placer, partitioner, devices, step statistics).

#include <gpass/session/device.hpp>
#include <gpass/session/device_name.hpp>
#include <gpass/session/partition.hpp>
#include <gpass/session/placer.hpp>
#include <gpass/session/rewrite.hpp>
#include <gpass/session/session.hpp>
#include <gpass/session/step_stats.hpp>
