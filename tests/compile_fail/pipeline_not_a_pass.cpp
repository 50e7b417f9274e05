// EXPECT: argument is not a pass
// SPDX-License-Identifier: Apache-2.0
// gpass::pipeline checks its arguments at the API boundary with a readable message.
#include <gpass/pass/pipeline.hpp>

#include <string_view>

struct not_a_pass {
  static constexpr std::string_view name = "nope";  // no description, no call operator
};

int main() {
  auto p = gpass::pipeline(not_a_pass{});
  (void)p;
}
