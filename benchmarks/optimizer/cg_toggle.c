/* SPDX-License-Identifier: Apache-2.0
 * Callgrind client requests for Python (ctypes), used by instructions.py: count the
 * instructions of one call (an ONNX Runtime session creation) and nothing around it.
 * Built at benchmark time: cc -O2 -shared -fPIC cg_toggle.c -o cg_toggle.so
 * Outside valgrind the requests are no-ops. */
#include <valgrind/callgrind.h>

void gpass_cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void gpass_cg_zero(void) { CALLGRIND_ZERO_STATS; }
void gpass_cg_dump(const char* label) { CALLGRIND_DUMP_STATS_AT(label); }
