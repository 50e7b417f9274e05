// SPDX-License-Identifier: Apache-2.0
// `exec::global_store` with values held by a device (what a GPU's get_global / set_global
// keep): a device reads its own copy, uploaded once from the host value; a device write drops
// the host copy, which is made again (once) when the host asks; a host write drops the
// device's; another device goes through the host. The "device" here is a host stand-in that
// counts its copies, so the test needs no GPU.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <gpass/exec/globals.hpp>

namespace gpass_test_exec_global_store {

namespace {

using gpass::tensor;

/// A stand-in for a device tensor: a host tensor behind a marker type.
struct dev_tensor {
  tensor t;
};

struct counters {
  int uploads = 0, downloads = 0;
};

std::vector<float> floats(const tensor& t) {
  auto s = t.values<float>();
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("exec.global_store.device_values") {
  gpass::exec::global_store s;
  counters c;
  auto up = [&](const tensor& h) {
    ++c.uploads;
    return dev_tensor{h.clone()};
  };
  auto down = [&](const dev_tensor& d) {
    ++c.downloads;
    return d.t.clone();
  };

  // never set: nothing on either side
  CHECK_FALSE(s.get_on<dev_tensor>("w", "dev:0", up, down).has_value());
  CHECK(c.uploads == 0);

  // a host value is uploaded on the first device read, then the device's copy is read
  s.set("w", tensor::from<float>({1, 2}));
  CHECK(s.device_of("w").empty());
  auto d = s.get_on<dev_tensor>("w", "dev:0", up, down);
  REQUIRE(d.has_value());
  CHECK(floats(d->t) == std::vector<float>{1, 2});
  CHECK(s.device_of("w") == "dev:0");
  (void)s.get_on<dev_tensor>("w", "dev:0", up, down);
  CHECK(c.uploads == 1);
  // both copies are current: the host reads its own
  CHECK(floats(*s.get("w")) == std::vector<float>{1, 2});
  CHECK(c.downloads == 0);

  // a device write: the host copy is made when first asked for, once
  s.set_on("w", "dev:0", dev_tensor{tensor::from<float>({3, 4})}, down);
  CHECK(c.downloads == 0);
  CHECK(floats(*s.get("w")) == std::vector<float>{3, 4});
  CHECK(floats(s.snapshot().at("w")) == std::vector<float>{3, 4});
  CHECK(c.downloads == 1);
  CHECK(floats(s.get_on<dev_tensor>("w", "dev:0", up, down)->t) == std::vector<float>{3, 4});
  CHECK(c.uploads == 1);

  // another device: through the host, then that device holds it
  CHECK(floats(s.get_on<dev_tensor>("w", "dev:1", up, down)->t) == std::vector<float>{3, 4});
  CHECK(c.uploads == 2);
  CHECK(s.device_of("w") == "dev:1");

  // a host write drops the device's copy
  s.set("w", tensor::from<float>({5, 6}));
  CHECK(s.device_of("w").empty());
  CHECK(floats(s.get_on<dev_tensor>("w", "dev:1", up, down)->t) == std::vector<float>{5, 6});
  CHECK(c.uploads == 3);

  // a device write of a new global; a copy of the store holds host values
  s.set_on("b", "dev:0", dev_tensor{tensor::from<float>({7})}, down);
  CHECK(s.contains("b"));
  gpass::exec::global_store copy = s;
  CHECK(copy.device_of("b").empty());
  CHECK(floats(*copy.get("b")) == std::vector<float>{7});
  CHECK(floats(*copy.get("w")) == std::vector<float>{5, 6});
}

}  // namespace gpass_test_exec_global_store
